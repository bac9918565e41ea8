/**
 * Opens a Hugging Face model from its files: `config.json` (+ `generation_config.json`), and
 * `model.safetensors` or `model.safetensors.index.json` and its shards. Only the headers are
 * read here; the weights are streamed later, once, by the loader, as one f32 stream
 * (`ConvertedSource`).
 *
 * The files come from a `ModelFiles`: a base URL (a Hugging Face `resolve/main/` prefix, or any
 * directory served over HTTP), or a set of File/Blob/ArrayBuffer by name (a picked folder).
 */
import { ModelFormatError } from '../errors.js';
import { parseHfConfig, type HfModelConfig } from '../model/formats/hf-config.js';
import { layoutHfModel, type HfLayout } from '../model/formats/hf.js';
import { parseSafetensorsHeader, parseSafetensorsIndex, safetensorsHeaderLength } from '../model/formats/safetensors.js';
import { ConvertedSource } from './converted-source.js';
import { fetchTyped, httpError, openSource, type ByteSource, type ModelSource } from './source.js';

/** The files of one model directory. */
export interface ModelFiles {
  /** A name for messages (the base URL). */
  readonly name: string;
  /** The file, or undefined when the directory has none by that name. */
  open(file: string): Promise<ByteSource | undefined>;
}

/** The files under a base URL: `${base}/config.json`, ... (a missing file is a 404). */
export function urlFiles(base: string | URL): ModelFiles {
  const root = String(base).replace(/\/+$/, '');
  return {
    name: root,
    async open(file) {
      const url = `${root}/${file}`;
      const r = await fetchTyped(url, { headers: { Range: 'bytes=0-0' } });
      await r.body?.cancel();
      if (r.status === 404 || r.status === 410) return undefined;
      if (!r.ok) throw httpError(url, r.status);
      return openSource(url);
    },
  };
}

/** Files given by name (a picked folder, or buffers in tests). */
export function mapFiles(files: ReadonlyMap<string, ModelSource> | Record<string, ModelSource>, name = 'files'): ModelFiles {
  const m = files instanceof Map ? files : new Map(Object.entries(files));
  return {
    name,
    async open(file) {
      const f = m.get(file);
      return f === undefined ? undefined : openSource(f);
    },
  };
}

/** A whole (small) file as bytes. */
export async function readBytes(src: ByteSource): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  let n = 0;
  for await (const c of src.chunks()) {
    parts.push(c);
    n += c.byteLength;
  }
  const out = new Uint8Array(n);
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.byteLength;
  }
  return out;
}

/** A JSON file of the model, or undefined when it is absent and `optional`. */
export async function readJson(files: ModelFiles, file: string, optional = false): Promise<unknown> {
  const src = await files.open(file);
  if (!src) {
    if (optional) return undefined;
    throw new ModelFormatError(`${files.name}: ${file} is missing`, 'A Hugging Face model needs config.json and model.safetensors (or its index and shards)');
  }
  const text = new TextDecoder().decode(await readBytes(src));
  try {
    return JSON.parse(text) as unknown;
  } catch (e) {
    throw new ModelFormatError(`${files.name}: ${file} is not valid JSON (${(e as Error).message})`, 'Re-download the file');
  }
}

export interface HfModel extends HfModelConfig, HfLayout {
  /** The weights as one f32 stream, laid out as `tensors` say. */
  source: ByteSource;
}

/** Reads the config and every weight file's header, and lays out the model. */
export async function openHfModel(files: ModelFiles): Promise<HfModel> {
  const [json, generation, index] = await Promise.all([
    readJson(files, 'config.json'),
    readJson(files, 'generation_config.json', true),
    readJson(files, 'model.safetensors.index.json', true),
  ]);
  const hf = parseHfConfig(json, generation);
  const names = index === undefined ? ['model.safetensors'] : parseSafetensorsIndex(index).files;
  const opened = await Promise.all(
    names.map(async (name) => {
      const src = await files.open(name);
      if (!src) throw new ModelFormatError(`${files.name}: ${name} is missing`, index === undefined ? 'Put model.safetensors (or model.safetensors.index.json and its shards) beside config.json' : 'Every shard listed in model.safetensors.index.json must be present');
      const size = await src.size();
      const n = safetensorsHeaderLength(await src.head(8), size, name);
      const head = await src.head(8 + n);
      if (head.byteLength < 8 + n) throw new ModelFormatError(`${name}: the header is cut short (${head.byteLength} of ${8 + n} bytes)`, 'Re-download the file');
      return { name, src, header: parseSafetensorsHeader(head.subarray(8, 8 + n), size, name) };
    }),
  );
  const layout = layoutHfModel(hf.config, opened);
  const source = new ConvertedSource(files.name, opened.map((o) => o.src), layout.segments);
  return { ...hf, ...layout, source };
}
