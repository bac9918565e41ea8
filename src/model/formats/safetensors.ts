/**
 * safetensors files, as Hugging Face writes them:
 *   u64 little-endian N, then N bytes of JSON {name: {dtype, shape, data_offsets: [begin, end]}, ...,
 *   "__metadata__"?: {string: string}}, then the data; offsets are relative to the end of the JSON.
 * A model is one `model.safetensors` or shards listed in `model.safetensors.index.json`.
 *
 * Every number of the header is checked against the file size before anything is allocated
 * from it, so a corrupt or hostile header fails with a ModelFormatError instead of a huge
 * allocation. F32, F16 and BF16 tensors are supported; they become f32 on load (`toF32`).
 */
import { ModelFormatError } from '../../errors.js';

export type SafetensorsDtype = 'F32' | 'F16' | 'BF16';

/** Bytes per element of each supported dtype. */
export const DTYPE_BYTES: Readonly<Record<SafetensorsDtype, number>> = { F32: 4, F16: 2, BF16: 2 };

/** The spec's own cap on the JSON header: anything longer is not a safetensors file. */
export const MAX_HEADER_BYTES = 100_000_000;

const REMEDY = 'Check that the file is a complete .safetensors file (re-download it if it was cut short)';

export interface SafetensorsTensor {
  name: string;
  dtype: SafetensorsDtype;
  shape: number[];
  /** Absolute byte offset of the first element in the file. */
  offset: number;
  byteLength: number;
}

export interface SafetensorsFile {
  /** Bytes before the data: 8 + the JSON's length. */
  dataStart: number;
  /** In file order. */
  tensors: SafetensorsTensor[];
  metadata: Record<string, string>;
}

/**
 * The length of the JSON header from the file's first 8 bytes, checked against the file size:
 * how many bytes to read next.
 */
export function safetensorsHeaderLength(prefix: Uint8Array, fileSize: number, file = 'model.safetensors'): number {
  if (prefix.byteLength < 8) throw new ModelFormatError(`${file}: needs at least 8 bytes, got ${prefix.byteLength}`, REMEDY);
  const view = new DataView(prefix.buffer, prefix.byteOffset, 8);
  const n = view.getBigUint64(0, true);
  if (n < 2n || n > BigInt(MAX_HEADER_BYTES) || 8n + n > BigInt(fileSize)) {
    throw new ModelFormatError(`${file}: header length ${n} does not fit a file of ${fileSize} bytes (at most ${MAX_HEADER_BYTES})`, REMEDY);
  }
  return Number(n);
}

function isDtype(s: unknown): s is SafetensorsDtype {
  return s === 'F32' || s === 'F16' || s === 'BF16';
}

/**
 * Parses the JSON header (`json`, the N bytes after the length) of a file of `fileSize` bytes.
 * Each tensor's byte count must equal its shape × dtype size, lie inside the file, and not
 * overlap another's.
 */
export function parseSafetensorsHeader(json: Uint8Array, fileSize: number, file = 'model.safetensors'): SafetensorsFile {
  const dataStart = 8 + json.byteLength;
  if (dataStart > fileSize) throw new ModelFormatError(`${file}: header of ${json.byteLength} bytes does not fit a file of ${fileSize}`, REMEDY);
  let raw: unknown;
  try {
    raw = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(json));
  } catch (e) {
    throw new ModelFormatError(`${file}: the header is not valid JSON (${(e as Error).message})`, REMEDY);
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new ModelFormatError(`${file}: the header is not a JSON object`, REMEDY);
  const dataBytes = fileSize - dataStart;
  const tensors: SafetensorsTensor[] = [];
  let metadata: Record<string, string> = {};
  for (const [name, entry] of Object.entries(raw as Record<string, unknown>)) {
    if (name === '__metadata__') {
      if (typeof entry === 'object' && entry !== null) metadata = entry as Record<string, string>;
      continue;
    }
    const e = entry as { dtype?: unknown; shape?: unknown; data_offsets?: unknown };
    if (typeof e !== 'object' || e === null) throw new ModelFormatError(`${file}: tensor "${name}" is not an object`, REMEDY);
    if (!isDtype(e.dtype)) {
      throw new ModelFormatError(
        `${file}: tensor "${name}" has dtype ${JSON.stringify(e.dtype)}; supported: F32, F16, BF16`,
        'Convert the checkpoint to float32, float16 or bfloat16 (quantised safetensors are not supported)',
      );
    }
    const shape = e.shape;
    if (!Array.isArray(shape) || shape.some((d) => !Number.isSafeInteger(d) || (d as number) < 0)) {
      throw new ModelFormatError(`${file}: tensor "${name}" has shape ${JSON.stringify(shape)}; expected a list of non-negative integers`, REMEDY);
    }
    const off = e.data_offsets;
    if (!Array.isArray(off) || off.length !== 2 || !off.every((x) => Number.isSafeInteger(x) && (x as number) >= 0) || off[0] > off[1]) {
      throw new ModelFormatError(`${file}: tensor "${name}" has data_offsets ${JSON.stringify(off)}; expected [begin, end] with 0 ≤ begin ≤ end`, REMEDY);
    }
    const [begin, end] = off as [number, number];
    if (end > dataBytes) {
      throw new ModelFormatError(`${file}: tensor "${name}" ends at data byte ${end}, past the ${dataBytes} data bytes of the file`, REMEDY);
    }
    // BigInt: the product of a hostile shape may not be an exact double.
    const expected = (shape as number[]).reduce((n, d) => n * BigInt(d), 1n) * BigInt(DTYPE_BYTES[e.dtype]);
    if (expected !== BigInt(end - begin)) {
      throw new ModelFormatError(`${file}: tensor "${name}" (${e.dtype} [${shape.join(', ')}]) needs ${expected} bytes, its data_offsets span ${end - begin}`, REMEDY);
    }
    tensors.push({ name, dtype: e.dtype, shape: shape as number[], offset: dataStart + begin, byteLength: end - begin });
  }
  tensors.sort((a, b) => a.offset - b.offset);
  for (let i = 1; i < tensors.length; i++) {
    const p = tensors[i - 1]!;
    if (p.offset + p.byteLength > tensors[i]!.offset) {
      throw new ModelFormatError(`${file}: tensors "${p.name}" and "${tensors[i]!.name}" overlap`, REMEDY);
    }
  }
  return { dataStart, tensors, metadata };
}

/** Reads a whole safetensors file held in memory (tests, small models). */
export function parseSafetensors(bytes: Uint8Array, file?: string): SafetensorsFile {
  const n = safetensorsHeaderLength(bytes, bytes.byteLength, file);
  return parseSafetensorsHeader(bytes.subarray(8, 8 + n), bytes.byteLength, file);
}

/** `model.safetensors.index.json`: which shard file holds each tensor. */
export interface SafetensorsIndex {
  /** Shard file names in first-use order. */
  files: string[];
  /** tensor name → index into `files`. */
  fileOf: Map<string, number>;
}

export function parseSafetensorsIndex(json: unknown, file = 'model.safetensors.index.json'): SafetensorsIndex {
  const map = (json as { weight_map?: unknown } | null)?.weight_map;
  if (typeof map !== 'object' || map === null || Array.isArray(map)) {
    throw new ModelFormatError(`${file}: expected an object with a "weight_map" of tensor name → file name`, 'Use the index.json that came with the shards');
  }
  const files: string[] = [];
  const fileOf = new Map<string, number>();
  for (const [name, f] of Object.entries(map as Record<string, unknown>)) {
    // Shard names are resolved against the model's base URL: a path out of it is not a shard.
    if (typeof f !== 'string' || !/^[\w.-]+\.safetensors$/.test(f) || f.startsWith('.')) {
      throw new ModelFormatError(`${file}: tensor "${name}" maps to ${JSON.stringify(f)}; expected a file name like model-00001-of-00002.safetensors`, 'Use the index.json that came with the shards');
    }
    let i = files.indexOf(f);
    if (i < 0) i = files.push(f) - 1;
    fileOf.set(name, i);
  }
  if (files.length === 0) throw new ModelFormatError(`${file}: the weight_map is empty`, 'Use the index.json that came with the shards');
  return { files, fileOf };
}

// ---------------------------------------------------------------------------------------------
// dtype conversion
// ---------------------------------------------------------------------------------------------

/** f16 bits → f32 value: exact (every f16 is an f32). */
export function f16ToF32(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >> 10) & 0x1f;
  const frac = h & 0x3ff;
  if (exp === 0) return sign * frac * 2 ** -24;
  if (exp === 0x1f) return frac ? NaN : sign * Infinity;
  return sign * (1 + frac / 1024) * 2 ** (exp - 15);
}

let f16Table: Float32Array | undefined;

/**
 * Converts `src` (whole elements of `dtype`, little-endian) into `dst` as f32. bf16 is the top
 * half of an f32, so it is a shift; f16 goes through a 64K-entry table built once.
 */
export function toF32(src: Uint8Array, dtype: SafetensorsDtype, dst: Float32Array): void {
  const n = src.byteLength / DTYPE_BYTES[dtype];
  if (!Number.isInteger(n) || dst.length < n) throw new RangeError(`toF32: ${src.byteLength} bytes of ${dtype} do not fit ${dst.length} floats`);
  const view = new DataView(src.buffer, src.byteOffset, src.byteLength);
  if (dtype === 'F32') {
    for (let i = 0; i < n; i++) dst[i] = view.getFloat32(i * 4, true);
  } else if (dtype === 'BF16') {
    const bits = new Uint32Array(dst.buffer, dst.byteOffset, n);
    for (let i = 0; i < n; i++) bits[i] = view.getUint16(i * 2, true) << 16;
  } else {
    if (!f16Table) {
      f16Table = new Float32Array(65536);
      for (let h = 0; h < 65536; h++) f16Table[h] = f16ToF32(h);
    }
    const t = f16Table;
    for (let i = 0; i < n; i++) dst[i] = t[view.getUint16(i * 2, true)]!;
  }
}

/** Round-to-nearest-even f32 → bf16 bits (for writing test fixtures). */
export function f32ToBf16(x: number): number {
  const u = new Uint32Array(new Float32Array([x]).buffer)[0]!;
  if ((u & 0x7fffffff) > 0x7f800000) return 0x7fc0; // NaN
  return ((u + 0x7fff + ((u >> 16) & 1)) >>> 16) & 0xffff;
}

/** Serializes tensors into a safetensors file (test fixtures and the CLI's synth). */
export function encodeSafetensors(tensors: { name: string; dtype: SafetensorsDtype; shape: number[]; data: Uint8Array }[], metadata?: Record<string, string>): Uint8Array {
  const header: Record<string, unknown> = {};
  if (metadata) header.__metadata__ = metadata;
  let o = 0;
  for (const t of tensors) {
    header[t.name] = { dtype: t.dtype, shape: t.shape, data_offsets: [o, o + t.data.byteLength] };
    o += t.data.byteLength;
  }
  let json = new TextEncoder().encode(JSON.stringify(header));
  // The spec pads the header with spaces to 8 bytes so the data is aligned.
  const pad = (8 - (json.byteLength % 8)) % 8;
  if (pad) json = new TextEncoder().encode(JSON.stringify(header) + ' '.repeat(pad));
  const out = new Uint8Array(8 + json.byteLength + o);
  new DataView(out.buffer).setBigUint64(0, BigInt(json.byteLength), true);
  out.set(json, 8);
  let p = 8 + json.byteLength;
  for (const t of tensors) {
    out.set(t.data, p);
    p += t.data.byteLength;
  }
  return out;
}
