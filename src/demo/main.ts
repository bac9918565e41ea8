/**
 * The demo page (issue #5): pick a model (the built-in stories260K, a URL, or local files),
 * a tensor-parallel degree and sampling settings, then stream a generation while live charts
 * show where each rank's decode step goes, its shard memory, and how its shard was loaded.
 *
 * Model output only ever reaches the page as text nodes (never HTML). The engine is re-created
 * only when the model or the degree changes, and the old one is disposed first.
 */
import './style.css';
import {
  createEngine, joinEngine, WebGpuTpError, WebGpuUnavailableError, NotIsolatedError, InvalidArgumentError,
  type Engine, type EngineStats, type LoadProgress, type TabJoinInfo,
} from '../index.js';
import { DemoCharts, type StepSegments } from './charts.js';
import { formatBytes, formatCount, formatMs, formatRate, parameterCount } from './format.js';

const DEFAULT_MODEL = '/models/stories260K.bin';
const DEFAULT_TOKENIZER = '/models/tok512.bin';
const POLL_MS = 500;

const $ = <T extends HTMLElement = HTMLElement>(id: string) => document.getElementById(id) as T;
const el = {
  envWebgpu: $('env-webgpu'),
  envIsolated: $('env-isolated'),
  envAdapter: $('env-adapter'),
  modelName: $('model-name'),
  defaultStatus: $('default-status'),
  modelUrl: $<HTMLInputElement>('model-url'),
  hfUrl: $<HTMLInputElement>('hf-url'),
  tokenizerUrl: $<HTMLInputElement>('tokenizer-url'),
  files: $<HTMLInputElement>('model-files'),
  dropZone: $('drop-zone'),
  fileModel: $('file-model'),
  fileTokenizer: $('file-tokenizer'),
  engineInfo: $('engine-info'),
  placementInfo: $('placement-info'),
  tp: $<HTMLSelectElement>('tp'),
  temperature: $<HTMLInputElement>('temperature'),
  maxTokens: $<HTMLInputElement>('max-tokens'),
  prompt: $<HTMLTextAreaElement>('prompt'),
  generate: $<HTMLButtonElement>('generate'),
  stop: $<HTMLButtonElement>('stop'),
  errorPanel: $('error-panel'),
  errorTitle: $('error-title'),
  errorCode: $('error-code'),
  errorMessage: $('error-message'),
  errorRemedy: $('error-remedy'),
  errorClose: $('error-close'),
  modelHelp: $('model-help'),
  tps: $('tps'),
  tokenCount: $('token-count'),
  prefill: $('prefill'),
  runStatus: $('run-status'),
  output: $('output'),
  outputPrompt: $('output-prompt'),
  outputText: $('output-text'),
  cacheStatus: $('cache-status'),
  warnings: $('warnings'),
  ranksBody: $('ranks-body'),
  tabs: [...document.querySelectorAll<HTMLButtonElement>('.tab')],
  panels: [...document.querySelectorAll<HTMLElement>('.tab-panel')],
};

const charts = new DemoCharts();

type SourceMode = 'default' | 'url' | 'file' | 'hf';
type ModelInput = string | File;
interface Source {
  key: string;
  label: string;
  model: ModelInput | { hf: string };
  /** Absent for a Hugging Face model (its own tokenizer.json) or a GGUF (its metadata's). */
  tokenizer?: ModelInput;
}

let mode: SourceMode = 'default';
const picked: { model?: File; tokenizer?: File } = {};
let current: { key: string; engine: Engine; label: string; fromCache: Map<number, boolean> } | undefined;
let run: AbortController | undefined;
let environmentOk = true;

// ---------------------------------------------------------------- status and errors

type RunState = 'idle' | 'loading' | 'generating' | 'done' | 'stopped' | 'error';

function setStatus(state: RunState, text: string): void {
  el.runStatus.dataset.state = state;
  el.runStatus.textContent = text;
  // Screen readers read the story once it is complete, not token by token (aria-live alone would).
  el.output.setAttribute('aria-busy', String(state === 'loading' || state === 'generating'));
  document.body.dataset.state = state;
}

/**
 * Codes of a failed rank. The engine rebuilds it in the background, and if that fails refuses
 * every later request; the demo drops the engine at once, so the next Generate loads a fresh one
 * (from the shard cache) instead of possibly failing the same way.
 */
const BROKEN = new Set(['WORKER_FAILED', 'DEVICE_LOST', 'COLLECTIVE_TIMEOUT']);

const TITLES: Partial<Record<string, string>> = {
  NO_WEBGPU: 'WebGPU is not available',
  NOT_ISOLATED: 'This page is not cross-origin isolated',
  MODEL_FORMAT: 'The model file could not be used',
  MODEL_FETCH: 'The model could not be downloaded',
  NO_ADAPTER: 'No GPU adapter',
  TAB_JOIN_TIMEOUT: 'No tab joined',
  TOKENIZER_FORMAT: 'The tokenizer file could not be used',
  PLAN: 'This split does not fit the model',
  COLLECTIVE_TIMEOUT: 'A worker stopped answering',
  DEVICE_LOST: 'A GPU device was lost',
  WORKER_FAILED: 'A worker failed',
  INVALID_ARGUMENT: 'Check the settings',
  DISPOSED: 'The engine was closed',
};

interface Shown {
  title: string;
  code: string;
  message: string;
  remedy: string;
  modelHelp?: boolean;
}

/** A typed error's message without the remedy its constructor appended (shown on its own line). */
function describe(e: unknown): Shown {
  if (e instanceof WebGpuTpError || (e instanceof Error && typeof (e as { code?: unknown }).code === 'string')) {
    const err = e as WebGpuTpError;
    const remedy = err.remedy ?? '';
    let message = err.message;
    if (remedy && message.endsWith(`. ${remedy}`)) message = message.slice(0, -remedy.length - 2);
    return { title: TITLES[err.code] ?? 'Something went wrong', code: err.code, message, remedy };
  }
  const message = e instanceof Error ? e.message : String(e);
  return { title: 'Something went wrong', code: e instanceof Error ? e.name : 'Error', message, remedy: 'Reload the page and try again' };
}

function showError(s: Shown): void {
  el.errorTitle.textContent = s.title;
  el.errorCode.textContent = s.code;
  el.errorMessage.textContent = s.message;
  el.errorRemedy.textContent = s.remedy;
  el.modelHelp.hidden = !s.modelHelp;
  el.errorPanel.dataset.code = s.code;
  el.errorPanel.hidden = false;
}

function hideError(): void {
  el.errorPanel.hidden = true;
  delete el.errorPanel.dataset.code;
}

el.errorClose.addEventListener('click', hideError);

/** Whether a model URL answers with model bytes: 'missing' on 404 or an HTML fallback page. One byte at most. */
async function probe(url: string): Promise<{ state: 'ok' | 'missing' | 'unknown'; size?: number; status?: number }> {
  try {
    const r = await fetch(url, { headers: { Range: 'bytes=0-0' }, cache: 'no-store' });
    await r.body?.cancel().catch(() => {});
    const html = (r.headers.get('Content-Type') ?? '').includes('text/html');
    if (r.status === 404 || r.status === 410 || (r.ok && html)) return { state: 'missing', status: r.status };
    if (!r.ok) return { state: 'unknown', status: r.status };
    const cr = r.headers.get('Content-Range');
    const size = cr ? Number(cr.split('/')[1]) : Number(r.headers.get('Content-Length'));
    return { state: 'ok', size: Number.isFinite(size) ? size : undefined, status: r.status };
  } catch {
    return { state: 'unknown' };
  }
}

function missingModel(url: string, status?: number): Shown {
  return {
    title: 'No model found',
    code: 'MODEL_MISSING',
    message: `${url} is not on this server${status && status !== 200 ? ` (HTTP ${status})` : ''}.`,
    remedy: '',
    modelHelp: true,
  };
}

// ---------------------------------------------------------------- environment

async function checkEnvironment(): Promise<void> {
  const isolated = typeof crossOriginIsolated !== 'undefined' && crossOriginIsolated && typeof SharedArrayBuffer !== 'undefined';
  el.envIsolated.textContent = isolated ? 'Cross-origin isolated' : 'Not isolated';
  el.envIsolated.className = `pill ${isolated ? 'ok' : 'bad'}`;

  let gpuError: WebGpuTpError | undefined;
  const gpu = (navigator as Navigator & { gpu?: GPU }).gpu;
  if (!gpu) {
    gpuError = new WebGpuUnavailableError('navigator.gpu is missing: this browser does not expose WebGPU');
  } else {
    try {
      const adapter = await gpu.requestAdapter();
      if (!adapter) gpuError = new WebGpuUnavailableError('navigator.gpu gave no adapter (WebGPU is blocked or no GPU is usable)');
      else {
        const i = adapter.info;
        const name = [i.vendor, i.architecture, i.description].filter(Boolean).join(' · ') || 'unnamed adapter';
        el.envAdapter.textContent = name;
        el.envAdapter.title = `GPU adapter: ${name}`;
      }
    } catch (e) {
      gpuError = new WebGpuUnavailableError(`requestAdapter failed: ${(e as Error).message}`);
    }
  }
  el.envWebgpu.textContent = gpuError ? 'No WebGPU' : 'WebGPU';
  el.envWebgpu.className = `pill ${gpuError ? 'bad' : 'ok'}`;
  if (gpuError) el.envAdapter.textContent = 'no adapter';

  environmentOk = isolated && !gpuError;
  if (!isolated) showError(describe(new NotIsolatedError()));
  else if (gpuError) showError(describe(gpuError));
  if (!environmentOk) {
    el.generate.title = 'This browser cannot run webgpu-tp: see the message above';
    setStatus('error', 'Unsupported');
  }
  syncControls();
}

async function checkDefaultModel(): Promise<void> {
  const p = await probe(DEFAULT_MODEL);
  el.defaultStatus.replaceChildren();
  const mark = document.createElement('span');
  if (p.state === 'ok') {
    mark.className = 'status-ok';
    mark.textContent = `✓ Available on this server${p.size ? ` (${formatBytes(p.size)})` : ''}`;
  } else if (p.state === 'missing') {
    mark.className = 'status-bad';
    mark.textContent = '✗ Not found on this server: see how to get it above';
    if (environmentOk && el.errorPanel.hidden) showError(missingModel(DEFAULT_MODEL, p.status));
  } else {
    mark.textContent = `Could not check ${DEFAULT_MODEL}${p.status ? ` (HTTP ${p.status})` : ''}`;
  }
  el.defaultStatus.append(mark);
}

// ---------------------------------------------------------------- model source

const fileIds = new WeakMap<File, number>();
let nextFileId = 1;
const fileId = (f: File) => {
  if (!fileIds.has(f)) fileIds.set(f, nextFileId++);
  return fileIds.get(f)!;
};

const baseName = (s: string) => s.split(/[/\\]/).pop()!.replace(/\.bin$/i, '') || s;

function currentSource(): Source {
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

function setMode(m: SourceMode): void {
  mode = m;
  for (const t of el.tabs) {
    t.setAttribute('aria-selected', String(t.dataset.source === m));
    // One tab stop for the list (WAI-ARIA tabs); the arrow keys move between tabs.
    t.tabIndex = t.dataset.source === m ? 0 : -1;
  }
  for (const p of el.panels) p.hidden = p.dataset.panel !== m;
  updateModelName();
}

function updateModelName(): void {
  try {
    el.modelName.textContent = currentSource().label;
  } catch {
    el.modelName.textContent = 'choose files';
  }
}

/** Sorts dropped or picked files into a checkpoint and a tokenizer (by name, else by size). */
function takeFiles(list: File[]): void {
  const bins = list.filter((f) => f.size > 0);
  if (bins.length === 0) return;
  const isTok = (f: File) => /tok|vocab/i.test(f.name);
  if (bins.length === 1) {
    if (isTok(bins[0]!)) picked.tokenizer = bins[0];
    else picked.model = bins[0];
  } else {
    const sorted = [...bins].sort((a, b) => a.size - b.size);
    const tok = bins.find(isTok) ?? sorted[0]!;
    picked.tokenizer = tok;
    picked.model = sorted.filter((f) => f !== tok).pop();
  }
  el.fileModel.textContent = picked.model ? `${picked.model.name} (${formatBytes(picked.model.size)})` : 'none';
  el.fileTokenizer.replaceChildren();
  if (picked.tokenizer) el.fileTokenizer.textContent = `${picked.tokenizer.name} (${formatBytes(picked.tokenizer.size)})`;
  else el.fileTokenizer.append('none (uses ', Object.assign(document.createElement('code'), { textContent: DEFAULT_TOKENIZER }), ')');
  setMode('file');
}

for (const t of el.tabs) t.addEventListener('click', () => setMode(t.dataset.source as SourceMode));
for (const [i, t] of el.tabs.entries()) {
  t.addEventListener('keydown', (e) => {
    const step = e.key === 'ArrowRight' ? 1 : e.key === 'ArrowLeft' ? -1 : 0;
    if (!step) return;
    e.preventDefault();
    const next = el.tabs[(i + step + el.tabs.length) % el.tabs.length]!;
    next.focus();
    setMode(next.dataset.source as SourceMode);
  });
}
el.modelUrl.addEventListener('input', updateModelName);
el.hfUrl.addEventListener('input', updateModelName);
el.files.addEventListener('change', () => takeFiles([...(el.files.files ?? [])]));
// Drop anywhere on the page: the browser must not navigate to the file.
window.addEventListener('dragover', (e) => {
  e.preventDefault();
  if (!run) el.dropZone.classList.add('over');
});
window.addEventListener('dragleave', (e) => {
  if (!e.relatedTarget) el.dropZone.classList.remove('over');
});
window.addEventListener('drop', (e) => {
  e.preventDefault();
  el.dropZone.classList.remove('over');
  if (run || !e.dataTransfer?.files.length) return;
  takeFiles([...e.dataTransfer.files]);
});

/** `auto` leaves the degree to the engine's placement (one rank per distinct adapter). */
function resolveTp(): number | 'auto' {
  return el.tp.value === 'auto' ? 'auto' : Number(el.tp.value);
}

/** Where the ranks went and why, from `stats().placement`. */
function showPlacement(stats: EngineStats): void {
  const p = stats.placement;
  el.placementInfo.hidden = !p;
  if (!p) return;
  const split = p.split === 'even' ? '' : ` · split ${p.fractions.map((f) => `${Math.round(f * 100)}%`).join('/')} (${p.split})`;
  el.placementInfo.textContent = `Devices: ${p.reason}${split}`;
  el.placementInfo.title = p.calibrationMs ? `calibration, ms per 1024×1024 matmul: ${p.adapters.map((a, i) => `${a} ${p.calibrationMs![i]!.toFixed(2)}`).join(', ')}` : '';
}

// ---------------------------------------------------------------- engine

function modelSummary(engine: Engine, label: string, loadMs: number): string {
  const c = engine.config;
  return `${label} · ${formatCount(parameterCount(c))} params · dim ${c.dim}, ${c.nLayers} layers, ${c.nHeads} heads, vocab ${c.vocabSize} · ` +
    `TP=${engine.tensorParallel} (${engine.tensorParallel} worker${engine.tensorParallel === 1 ? '' : 's'}) · loaded in ${formatMs(loadMs)}`;
}

/** The workers table: one row per rank, from `stats()`. */
function renderRanks(stats: EngineStats | undefined): void {
  if (!stats || stats.ranks.length === 0) {
    const td = Object.assign(document.createElement('td'), { colSpan: 6, className: 'muted', textContent: 'No workers yet' });
    el.ranksBody.replaceChildren(document.createElement('tr'));
    el.ranksBody.firstElementChild!.append(td);
    return;
  }
  el.ranksBody.replaceChildren(
    ...stats.ranks.map((r) => {
      const tr = document.createElement('tr');
      const cached = current?.fromCache.get(r.rank);
      const first = document.createElement('td');
      const dot = document.createElement('span');
      dot.className = `dot${cached ? ' cached' : ''}`;
      dot.title = cached ? 'shard from the IndexedDB cache' : 'shard downloaded';
      first.append(dot, String(r.rank));
      first.title = r.adapter;
      const placed = stats.placement?.ranks[r.rank];
      const device = Object.assign(document.createElement('td'), {
        textContent: placed ? `${placed.adapter} · heads ${placed.heads[0]}–${placed.heads[1] - 1}` : r.adapter,
        title: placed ? `asked for: ${placed.spec}` : '',
      });
      const cells = [
        formatBytes(r.weightBytes),
        formatBytes(r.workBytes),
        r.allreduceRoundtripMs > 0 ? `${r.allreduceRoundtripMs.toFixed(2)} ms` : stats.ranks.length === 1 ? 'none' : '–',
        String(r.steps),
      ].map((text) => Object.assign(document.createElement('td'), { textContent: text }));
      tr.append(first, device, ...cells);
      return tr;
    }),
  );
}

function showWarnings(stats: EngineStats): void {
  el.warnings.textContent = stats.warnings.length ? `⚠ ${stats.warnings[0]}${stats.warnings.length > 1 ? ` (+${stats.warnings.length - 1})` : ''}` : '';
  el.warnings.title = stats.warnings.join('\n');
}

/** The engine for the chosen model and degree: the current one when neither changed. */
async function ensureEngine(signal: AbortSignal): Promise<Engine> {
  const src = currentSource();
  const tp = resolveTp();
  const key = `${src.key}|tp=${tp}`;
  if (current?.key === key) return current.engine;
  if (current) {
    el.engineInfo.textContent = 'Releasing the previous engine…';
    await dropEngine();
  }

  setStatus('loading', 'Loading model');
  el.engineInfo.textContent = tp === 'auto' ? `Loading ${src.label}, one worker per adapter…` : `Loading ${src.label} over ${tp} worker${tp === 1 ? '' : 's'}…`;
  el.placementInfo.hidden = true;
  el.cacheStatus.dataset.cache = 'loading';
  el.cacheStatus.textContent = 'Shard cache: loading…';
  charts.resetLoad(tp === 'auto' ? 1 : tp);
  const fromCache = new Map<number, boolean>();
  const shardBytes = new Map<number, number>();
  const onProgress = (p: LoadProgress) => {
    charts.setLoad(p.rank, p.loadedBytes, p.totalBytes, p.fromCache);
    if (p.loadedBytes >= p.totalBytes) {
      fromCache.set(p.rank, p.fromCache);
      shardBytes.set(p.rank, p.totalBytes);
    }
  };

  const engine = await createEngine({ model: src.model, tokenizer: src.tokenizer, tensorParallel: tp, onProgress, signal });
  current = { key, engine, label: src.label, fromCache };
  const stats = await engine.stats();
  charts.setMemory(stats.ranks);
  renderRanks(stats);
  showWarnings(stats);
  showPlacement(stats);
  el.engineInfo.textContent = modelSummary(engine, src.label, stats.loadMs);
  const ranks = engine.tensorParallel;

  const hits = [...fromCache.values()].filter(Boolean).length;
  const downloaded = [...shardBytes.entries()].filter(([r]) => !fromCache.get(r)).reduce((a, [, b]) => a + b, 0);
  const cacheOff = stats.warnings.some((w) => w.includes('cache'));
  if (hits === ranks) {
    el.cacheStatus.dataset.cache = 'hit';
    el.cacheStatus.textContent = `Shard cache: ${hits}/${ranks} cache hits: every shard came from IndexedDB, no weight download`;
  } else {
    el.cacheStatus.dataset.cache = 'miss';
    el.cacheStatus.textContent = `Shard cache: ${hits}/${ranks} cache hits, ${formatBytes(downloaded)} downloaded${cacheOff ? ' (cache unavailable)' : ' and cached for next time'}`;
  }
  return engine;
}

/** Forgets the current engine and frees it: the next Generate loads a new one. */
function dropEngine(): Promise<void> {
  const old = current?.engine;
  current = undefined;
  renderRanks(undefined);
  return old?.dispose() ?? Promise.resolve();
}

window.addEventListener('pagehide', () => {
  run?.abort();
  // Forgotten too: a page restored from the back/forward cache loads a new engine on Generate.
  void dropEngine();
});

// ---------------------------------------------------------------- generation

/** Per-rank running sums of the step breakdown, to turn `stats()` means into interval means. */
interface Sums {
  steps: number;
  compute: number;
  readback: number;
  allreduce: number;
  upload: number;
  scheduler: number;
}

function sumsOf(stats: EngineStats): Sums[] {
  return stats.ranks.map((r) => ({
    steps: r.steps,
    compute: r.breakdown.compute_ms * r.steps,
    readback: r.breakdown.readback_ms * r.steps,
    allreduce: r.breakdown.allreduce_ms * r.steps,
    upload: r.breakdown.upload_ms * r.steps,
    scheduler: r.breakdown.scheduler_ms * r.steps,
  }));
}

/** Mean step of each rank between two snapshots `wallMs` apart; idle = step time − the rest. */
function segments(now: Sums[], before: Sums[] | undefined, wallMs: number): StepSegments[] | undefined {
  const out: StepSegments[] = [];
  for (let r = 0; r < now.length; r++) {
    const a = now[r]!;
    const b = before?.[r] ?? { steps: 0, compute: 0, readback: 0, allreduce: 0, upload: 0, scheduler: 0 };
    const n = a.steps - b.steps;
    if (n <= 0) return undefined;
    const s = {
      compute: (a.compute - b.compute) / n,
      readback: (a.readback - b.readback) / n,
      allreduce: (a.allreduce - b.allreduce) / n,
      upload: (a.upload - b.upload) / n,
      scheduler: (a.scheduler - b.scheduler) / n,
    };
    const busy = s.compute + s.readback + s.allreduce + s.upload + s.scheduler;
    out.push({ ...s, idle: Math.max(0, wallMs / n - busy) });
  }
  return out;
}

/** Polls `stats()` every ~500 ms during decode and feeds the step and throughput charts. */
function startPolling(engine: Engine, t0: number, tokens: () => number) {
  let prev: Sums[] | undefined;
  let tPrev = t0;
  let tokPrev = tokens();
  let stopped = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let busy: Promise<void> = Promise.resolve();
  const tick = async () => {
    const stats = await engine.stats();
    const now = performance.now();
    const sums = sumsOf(stats);
    const seg = segments(sums, prev, now - tPrev);
    if (seg) charts.setSteps(seg);
    renderRanks(stats);
    const n = tokens();
    if (now > tPrev) charts.addThroughput((now - t0) / 1000, ((n - tokPrev) * 1000) / (now - tPrev));
    prev = sums;
    tPrev = now;
    tokPrev = n;
  };
  const schedule = () => {
    timer = setTimeout(() => {
      busy = tick().catch(() => {});
      void busy.then(() => {
        if (!stopped) schedule();
      });
    }, POLL_MS);
  };
  schedule();
  return {
    /** Stops polling and shows the mean over the whole decode (from t0 to `tEnd`). */
    async stop(tEnd: number): Promise<void> {
      stopped = true;
      clearTimeout(timer);
      await busy;
      try {
        const stats = await engine.stats();
        const seg = segments(sumsOf(stats), undefined, tEnd - t0);
        if (seg) charts.setSteps(seg);
        renderRanks(stats);
        showWarnings(stats);
      } catch {
        // The engine may be gone (page closing); the charts keep their last values.
      }
    },
  };
}

function readSettings(): { prompt: string; maxTokens: number; temperature: number } {
  const prompt = el.prompt.value;
  const maxTokens = Number(el.maxTokens.value);
  const temperature = Number(el.temperature.value);
  if (!prompt.trim()) throw new InvalidArgumentError('The prompt is empty', 'Type a prompt, e.g. "Once upon a time"');
  if (!Number.isInteger(maxTokens) || maxTokens < 1) throw new InvalidArgumentError(`Max tokens must be a whole number ≥ 1, got "${el.maxTokens.value}"`);
  if (el.temperature.value.trim() === '' || !(temperature >= 0)) throw new InvalidArgumentError(`Temperature must be a number ≥ 0, got "${el.temperature.value}"`, 'Use 0 for greedy decoding, about 0.8 for varied stories');
  return { prompt, maxTokens, temperature };
}

let textNode = document.createTextNode('');

function resetOutput(prompt: string): void {
  el.outputPrompt.textContent = prompt;
  textNode = document.createTextNode('');
  el.outputText.replaceChildren(textNode);
  el.output.classList.remove('empty');
  el.tokenCount.textContent = '0';
  el.tps.textContent = '–';
  el.prefill.textContent = '–';
}

function appendOutput(text: string): void {
  const o = el.output;
  const atBottom = o.scrollHeight - o.scrollTop - o.clientHeight < 24;
  textNode.appendData(text);
  if (atBottom) o.scrollTop = o.scrollHeight;
}

function syncControls(): void {
  const busy = !!run;
  el.generate.disabled = busy || !environmentOk;
  el.stop.disabled = !busy;
  el.tp.disabled = busy;
  for (const t of el.tabs) t.disabled = busy;
  el.modelUrl.disabled = busy;
  el.tokenizerUrl.disabled = busy;
  el.hfUrl.disabled = busy;
  el.files.disabled = busy;
}

async function generate(): Promise<void> {
  if (run || !environmentOk) return;
  hideError();
  let settings;
  try {
    settings = readSettings();
  } catch (e) {
    showError(describe(e));
    return;
  }
  const ac = new AbortController();
  run = ac;
  syncControls();
  resetOutput(settings.prompt);
  charts.resetThroughput();
  let poller: ReturnType<typeof startPolling> | undefined;
  let count = 0;
  let tLast = 0;
  try {
    const engine = await ensureEngine(ac.signal);
    setStatus('generating', 'Generating');
    await engine.resetStats();
    let tFirst = 0;
    for await (const chunk of engine.generate(settings.prompt, {
      maxTokens: settings.maxTokens, temperature: settings.temperature, topP: 0.9, signal: ac.signal,
    })) {
      if (chunk.text) appendOutput(chunk.text);
      if (chunk.token >= 0) {
        count++;
        tLast = performance.now();
        el.tokenCount.textContent = String(count);
        if (count === 1) {
          // Per-step timings are about decode: drop what prefill accumulated.
          await engine.resetStats();
          tFirst = performance.now();
          poller = startPolling(engine, tFirst, () => count);
        } else {
          el.tps.textContent = formatRate(((count - 1) * 1000) / (tLast - tFirst));
        }
      }
      if (chunk.stats) {
        const s = chunk.stats;
        if (s.generatedTokens > 1) el.tps.textContent = formatRate(s.decodeTokensPerS);
        el.prefill.textContent = `${formatRate(s.prefillTokensPerS)} tok/s`;
        setStatus('done', s.finishReason === 'length' ? 'Done · max tokens' : 'Done · end of story');
      }
    }
  } catch (e) {
    const shown = describe(e);
    if (shown.code === 'ABORTED' || ac.signal.aborted) {
      setStatus('stopped', count ? `Stopped after ${count} tokens` : 'Stopped');
      if (!current) el.engineInfo.textContent = 'Loading was stopped: the model loads again on the next Generate.';
    } else {
      setStatus('error', 'Error');
      if (BROKEN.has(shown.code)) void dropEngine();
      if (!current) el.engineInfo.textContent = 'No engine loaded: the model loads again on the next Generate.';
      // A URL that is not there gets the how-to-get-a-model panel rather than a parse error.
      const src = (() => {
        try {
          return currentSource();
        } catch {
          return undefined;
        }
      })();
      if ((shown.code === 'MODEL_FORMAT' || shown.code === 'MODEL_FETCH') && typeof src?.model === 'string') {
        const p = await probe(src.model);
        if (p.state === 'missing') Object.assign(shown, missingModel(src.model, p.status));
      }
      showError(shown);
      if (el.cacheStatus.dataset.cache === 'loading') {
        el.cacheStatus.dataset.cache = '';
        el.cacheStatus.textContent = 'Shard cache: nothing loaded';
      }
    }
  } finally {
    await poller?.stop(tLast);
    run = undefined;
    syncControls();
  }
}

el.generate.addEventListener('click', () => void generate());
el.stop.addEventListener('click', () => {
  run?.abort();
  el.stop.disabled = true;
});
el.prompt.addEventListener('keydown', (e) => {
  if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
    e.preventDefault();
    void generate();
  }
});

// ---------------------------------------------------------------- join mode

/** What the join card says in each state, and the status colour it takes. */
const JOIN_TEXT: Record<TabJoinInfo['state'], { text: string; look: RunState }> = {
  waiting: { text: 'Waiting for the host', look: 'loading' },
  joined: { text: 'Joined', look: 'generating' },
  loading: { text: 'Loading its shard', look: 'loading' },
  running: { text: 'Running', look: 'done' },
  'host-gone': { text: 'Host gone', look: 'stopped' },
  failed: { text: 'Failed', look: 'error' },
  left: { text: 'Left', look: 'stopped' },
};

/**
 * `?join=<id>`: this tab offers its device as a rank to the host engine created with
 * `tabs: {id}` on this origin. The rank runs in a worker of this tab; the page shows its state.
 */
function startJoin(id: string): void {
  const card = $('join-card');
  const state = $('join-state');
  const detail = $('join-detail');
  card.hidden = false;
  // A rank tab only lends its device: a Generate here would load a second engine beside it.
  document.querySelector<HTMLElement>('main.layout')!.hidden = true;
  const show = (i: TabJoinInfo) => {
    const t = JOIN_TEXT[i.state];
    const rank = i.rank !== undefined ? `rank ${i.rank} of ${i.world}` : '';
    state.textContent = i.state === 'joined' || i.state === 'running' || i.state === 'loading' ? `${t.text} · ${rank}` : t.text;
    state.dataset.state = t.look;
    document.body.dataset.join = i.state;
    if (i.rank !== undefined) document.body.dataset.joinRank = String(i.rank);
    detail.textContent =
      i.state === 'waiting' ? `Offering this tab's GPU to the engine "${id}" of this site. Keep the tab open (and, for speed, visible).`
      : i.state === 'host-gone' || i.state === 'failed' || i.state === 'left' ? `${i.reason ?? ''}. Reload to join again.`
      : `This tab runs ${rank} of the engine "${id}" in a worker with its own GPU device; closing it ends the host's request with an error.`;
  };
  joinEngine(id, { onState: show });
}

// ---------------------------------------------------------------- start

const joinId = new URLSearchParams(location.search).get('join');
if (joinId) startJoin(joinId);

setMode('default');
el.output.classList.add('empty');
setStatus('idle', 'Idle');
syncControls();
void checkEnvironment().then(checkDefaultModel);
