/** Where the model comes from (stories260K, a URL, local files, a Hugging Face base URL), and the devices and degree asked for. */
import { InvalidArgumentError, type EngineStats } from '../index.js';
import { DEVICE_CHOICES, type DeviceChoice } from './devices.js';
import { el } from './dom.js';
import { formatBytes } from './format.js';

export const DEFAULT_MODEL = '/models/stories260K.bin';
export const DEFAULT_TOKENIZER = '/models/tok512.bin';

export type SourceMode = 'default' | 'url' | 'file' | 'hf';
type ModelInput = string | File;
export interface Source {
  key: string;
  label: string;
  model: ModelInput | { hf: string };
  /** Absent for a Hugging Face model (its own tokenizer.json) or a GGUF (its metadata's). */
  tokenizer?: ModelInput;
}

let mode: SourceMode = 'default';
const picked: { model?: File; tokenizer?: File } = {};

const fileIds = new WeakMap<File, number>();
let nextFileId = 1;
const fileId = (f: File) => {
  if (!fileIds.has(f)) fileIds.set(f, nextFileId++);
  return fileIds.get(f)!;
};

const baseName = (s: string) => s.split(/[/\\]/).pop()!.replace(/\.bin$/i, '') || s;

export function currentSource(): Source {
  if (mode === 'default') return { key: `url|${DEFAULT_MODEL}|${DEFAULT_TOKENIZER}`, label: 'stories260K', model: DEFAULT_MODEL, tokenizer: DEFAULT_TOKENIZER };
  if (mode === 'url') {
    const model = el.modelUrl.value.trim();
    const typed = el.tokenizerUrl.value.trim();
    if (!model) throw new InvalidArgumentError('No model URL', 'Fill in the model URL');
    // A GGUF carries its tokenizer; the prefilled tok512.bin is for the llama2.c checkpoint.
    const gguf = /\.gguf(\?.*)?$/i.test(model);
    if (!typed && !gguf) throw new InvalidArgumentError('A llama2.c checkpoint needs its tokenizer URL', 'Fill in the tokenizer URL (tok512.bin goes with stories260K)');
    const tokenizer = gguf && (!typed || typed === DEFAULT_TOKENIZER) ? undefined : typed;
    return { key: `url|${model}|${tokenizer ?? 'gguf'}`, label: baseName(model), model, tokenizer };
  }
  if (mode === 'hf') {
    const hf = el.hfUrl.value.trim().replace(/\/+$/, '');
    if (!hf) throw new InvalidArgumentError('No Hugging Face model URL', 'Fill in the base URL of the model, e.g. https://huggingface.co/ORG/NAME/resolve/main');
    const label = /\/([^/]+)\/resolve\//.exec(hf)?.[1] ?? baseName(hf);
    return { key: `hf|${hf}`, label, model: { hf } };
  }
  if (!picked.model) throw new InvalidArgumentError('No model file chosen', 'Drop a llama2.c checkpoint (and its tokenizer) or a GGUF on the drop zone, or click it to pick files');
  // A GGUF carries its tokenizer: the default one is for llama2.c checkpoints.
  const tokenizer = picked.tokenizer ?? (/\.gguf$/i.test(picked.model.name) ? undefined : DEFAULT_TOKENIZER);
  const tKey = tokenizer === undefined ? 'gguf' : typeof tokenizer === 'string' ? tokenizer : `file#${fileId(tokenizer)}`;
  return { key: `file#${fileId(picked.model)}|${tKey}`, label: baseName(picked.model.name), model: picked.model, tokenizer };
}

export function setMode(m: SourceMode): void {
  mode = m;
  for (const t of el.tabs) {
    t.setAttribute('aria-selected', String(t.dataset.source === m));
    // One tab stop for the list (WAI-ARIA tabs); the arrow keys move between tabs.
    t.tabIndex = t.dataset.source === m ? 0 : -1;
  }
  for (const p of el.panels) p.hidden = p.dataset.panel !== m;
  updateModelName();
}

export function updateModelName(): void {
  try {
    el.modelName.textContent = currentSource().label;
  } catch {
    el.modelName.textContent = 'choose files';
  }
}

/** Sorts dropped or picked files into a checkpoint and a tokenizer (by name, else by size). */
export function takeFiles(list: File[]): void {
  const bins = list.filter((f) => f.size > 0);
  if (bins.length === 0) return;
  const isTok = (f: File) => /tok|vocab/i.test(f.name);
  if (bins.length === 1) {
    if (isTok(bins[0]!)) picked.tokenizer = bins[0];
    else {
      picked.model = bins[0];
      // A GGUF alone carries its tokenizer: one picked earlier for a checkpoint is not its.
      if (/\.gguf$/i.test(bins[0]!.name)) picked.tokenizer = undefined;
    }
  } else {
    const sorted = [...bins].sort((a, b) => a.size - b.size);
    const tok = bins.find(isTok) ?? sorted[0]!;
    picked.tokenizer = tok;
    picked.model = sorted.filter((f) => f !== tok).pop();
  }
  el.fileModel.textContent = picked.model ? `${picked.model.name} (${formatBytes(picked.model.size)})` : 'none';
  el.fileTokenizer.replaceChildren();
  if (picked.tokenizer) el.fileTokenizer.textContent = `${picked.tokenizer.name} (${formatBytes(picked.tokenizer.size)})`;
  else if (picked.model && /\.gguf$/i.test(picked.model.name)) el.fileTokenizer.textContent = 'the GGUF\'s own';
  else el.fileTokenizer.append('none (uses ', Object.assign(document.createElement('code'), { textContent: DEFAULT_TOKENIZER }), ')');
  setMode('file');
}

/** `auto` leaves the degree to the engine's placement (one rank per distinct adapter, or per core). */
export function resolveTp(): number | 'auto' {
  return el.tp.value === 'auto' ? 'auto' : Number(el.tp.value);
}

export function resolveDevices(): DeviceChoice {
  const v = el.devices.value as DeviceChoice;
  return DEVICE_CHOICES.includes(v) ? v : 'auto';
}

/** Where the ranks went and why, from `stats().placement`, after the demo's own `note` when it has one. */
export function showPlacement(stats: EngineStats): void {
  const p = stats.placement;
  el.placementInfo.hidden = !p;
  if (!p) return;
  const split = p.split === 'even' ? '' : ` · split ${p.fractions.map((f) => `${Math.round(f * 100)}%`).join('/')} (${p.split})`;
  // Only int8 is news: f32 activations are what every unquantised model runs.
  const int8 = p.activations === 'int8' ? ' · int8 activations' : '';
  el.placementInfo.textContent = `Devices: ${p.reason}${split}${int8}`;
  const calibration = p.calibrationMs ? `calibration, ms per 1024×1024 matmul: ${p.adapters.map((a, i) => `${a} ${p.calibrationMs![i]!.toFixed(2)}`).join(', ')}` : '';
  el.placementInfo.title = [calibration, `activations ${p.activations}: ${p.activationsReason}`].filter(Boolean).join('\n');
}
