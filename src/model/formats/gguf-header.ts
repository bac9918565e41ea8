/**
 * A GGUF file's header (metadata and tensor infos), read front to back in disjoint chunks of the
 * source, each byte asked for once: a URL, a File or a buffer.
 *
 * Values come out as `@huggingface/gguf`'s `gguf()` gives them (numbers, bigint for 64-bit
 * integers, booleans, strings, arrays; `version`, `tensor_count` and `kv_count` among the
 * metadata), so the tests hold this reader to the library's output. It is not the library
 * because the library re-parses a whole array each time it crosses one of its 2 MB chunks and
 * copies every string into a new buffer and TextDecoder: Llama 3's 128K tokens and 280K merges
 * took it ~0.9 s in Node (bench/NOTES.md, ggufhdr).
 */
import { GGUFValueType, type MetadataValue } from '@huggingface/gguf';
import { ModelFormatError } from '../../errors.js';
import { decodeShortUtf8 } from './utf8-short.js';

/** "GGUF" as a little-endian uint32. */
export const GGUF_MAGIC = 0x46554747;

/** What the reader needs of a source: its size and prefixes of it (or any range, where it can). */
export interface HeadSource {
  readonly name: string;
  size(): Promise<number>;
  head(n: number): Promise<Uint8Array>;
  /** Bytes [start, end); without it a range is read as a prefix. */
  range?(start: number, end: number): Promise<Uint8Array>;
}

export interface GgufTensorHeader {
  name: string;
  /** ne[0], ne[1], ...: the row length first. */
  dims: number[];
  /** The ggml_type id. */
  type: number;
  /** Absolute byte offset in the file. */
  offset: number;
}

export interface GgufHeader {
  version: number;
  metadata: Readonly<Record<string, MetadataValue>>;
  tensors: GgufTensorHeader[];
  /** Where the tensor data starts (the offsets above include it). */
  dataOffset: number;
}

/** Bytes asked of the source at a time: a Llama 3 header (~8 MB) in 4 requests, as the library made them. */
export const HEADER_CHUNK = 2 << 20;
/**
 * The most bytes a header may take. Past it a damaged count in a multi-GB file would have the
 * reader allocate and parse in proportion to the file; Llama 3's header is ~8 MB, and the library
 * held headers to 50 MB.
 */
export const MAX_HEADER_BYTES = 64 << 20;
/** llama.cpp's GGML_MAX_DIMS. */
const MAX_DIMS = 4;
/** Nested arrays deeper than this are refused (llama.cpp writes none; the library's limit). */
const MAX_DEPTH = 4;
const DEFAULT_ALIGNMENT = 32;

const SCALAR_BYTES: Partial<Record<GGUFValueType, number>> = {
  [GGUFValueType.UINT8]: 1, [GGUFValueType.INT8]: 1, [GGUFValueType.BOOL]: 1,
  [GGUFValueType.UINT16]: 2, [GGUFValueType.INT16]: 2,
  [GGUFValueType.UINT32]: 4, [GGUFValueType.INT32]: 4, [GGUFValueType.FLOAT32]: 4,
  [GGUFValueType.UINT64]: 8, [GGUFValueType.INT64]: 8, [GGUFValueType.FLOAT64]: 8,
};

const REMEDY = 'Re-download the file; it may be truncated or damaged';

/** A 64-bit size or count as a number: Infinity past 2^53, which every later check refuses. */
export const toNumber = (v: bigint): number => (v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : Infinity);

/**
 * The unread part of the header: a window [base, base + buf.length) of the file, refilled from
 * where it ends. Parsing is synchronous within the window; only a refill awaits.
 */
class Cursor {
  private buf = new Uint8Array(0);
  private view = new DataView(this.buf.buffer);
  /** File offset of buf[0]. */
  private base = 0;
  /** Read position in buf. */
  p = 0;
  littleEndian = true;
  /** 4-byte sizes (GGUF version 1) instead of 8-byte ones. */
  narrow = false;
  // BOM-led strings keep their BOM: llama.cpp reads a string's bytes as they are.
  private readonly text = new TextDecoder('utf-8', { ignoreBOM: true });

  constructor(private readonly src: HeadSource, readonly size: number, private readonly chunk: number) {}

  /** File offset of the read position. */
  get offset(): number {
    return this.base + this.p;
  }

  /** Bytes the header may still take: to the end of the file or MAX_HEADER_BYTES. */
  get left(): number {
    return Math.min(this.size, MAX_HEADER_BYTES) - this.offset;
  }

  /** Why `n` more bytes than `left` cannot be read: the file ends, or the header would pass MAX_HEADER_BYTES. */
  tooLong(n: number, declared = ''): ModelFormatError {
    if (this.offset + n > this.size) return new ModelFormatError(`${this.src.name}: the GGUF header ${declared ? `declares ${declared}, more than the ${this.size - this.offset} bytes left of the ${this.size}-byte file hold` : `runs past the end of the ${this.size}-byte file`}`, REMEDY);
    return new ModelFormatError(`${this.src.name}: the GGUF header ${declared ? `declares ${declared}, which ` : ''}runs past ${MAX_HEADER_BYTES >> 20} MiB, the most webgpu-tp reads (a 256K-token vocabulary takes ~10)`, 'The file is damaged: re-download it, or convert the model again with llama.cpp');
  }

  /** Makes the next `n` bytes readable (a truncated file is a ModelFormatError). */
  async need(n: number): Promise<void> {
    if (this.p + n <= this.buf.length) return;
    if (n > this.left) throw this.tooLong(n);
    const start = this.base + this.buf.length;
    const end = Math.min(this.size, start + Math.max(this.chunk, this.p + n - this.buf.length));
    const more = this.src.range ? await this.src.range(start, end) : (await this.src.head(end)).subarray(start, end);
    if (more.byteLength !== end - start) throw new ModelFormatError(`${this.src.name}: bytes ${start}–${end} of the GGUF header could not be read (${more.byteLength} came)`, REMEDY);
    const kept = this.buf.length - this.p;
    const next = new Uint8Array(kept + more.byteLength);
    next.set(this.buf.subarray(this.p));
    next.set(more, kept);
    this.base += this.p;
    this.p = 0;
    this.buf = next;
    this.view = new DataView(next.buffer);
  }

  u32(): number {
    const v = this.view.getUint32(this.p, this.littleEndian);
    this.p += 4;
    return v;
  }
  u64(): bigint {
    const v = this.view.getBigUint64(this.p, this.littleEndian);
    this.p += 8;
    return v;
  }

  /** A size or count (uint32 in version 1, uint64 after) of things of at least `each` bytes; more than the rest of the file holds is refused. */
  count(what: string, each: number): number {
    let n: number;
    if (this.narrow) n = this.u32();
    else {
      const lo = this.view.getUint32(this.p + (this.littleEndian ? 0 : 4), this.littleEndian);
      const hi = this.view.getUint32(this.p + (this.littleEndian ? 4 : 0), this.littleEndian);
      this.p += 8;
      n = hi === 0 ? lo : Infinity;
    }
    // Refused before anything of that length is allocated.
    if (n * each > this.left) throw this.tooLong(n * each, `${n === Infinity ? 'more than 2^32' : n} ${what}`);
    return n;
  }

  /** The next string, or undefined (nothing read) when its bytes are not all in the window. */
  stringHere(): string | undefined {
    const at = this.p;
    const sizeBytes = this.narrow ? 4 : 8;
    if (at + sizeBytes > this.buf.length) return undefined;
    const n = this.count('bytes of string', 1);
    if (this.p + n > this.buf.length) {
      this.p = at;
      return undefined;
    }
    const s = decodeShortUtf8(this.buf, this.p, this.p + n) ?? this.text.decode(this.buf.subarray(this.p, this.p + n));
    this.p += n;
    return s;
  }

  async string(): Promise<string> {
    const here = this.stringHere();
    if (here !== undefined) return here;
    await this.need(this.narrow ? 4 : 8);
    const at = this.p;
    const n = this.count('bytes of string', 1);
    this.p = at;
    await this.need((this.narrow ? 4 : 8) + n);
    return this.stringHere()!;
  }

  /** A scalar of `type` whose bytes are readable. */
  scalar(type: GGUFValueType): MetadataValue {
    const v = this.view;
    const p = this.p;
    const le = this.littleEndian;
    this.p += SCALAR_BYTES[type]!;
    switch (type) {
      case GGUFValueType.UINT8: return v.getUint8(p);
      case GGUFValueType.INT8: return v.getInt8(p);
      case GGUFValueType.BOOL: return v.getUint8(p) !== 0;
      case GGUFValueType.UINT16: return v.getUint16(p, le);
      case GGUFValueType.INT16: return v.getInt16(p, le);
      case GGUFValueType.UINT32: return v.getUint32(p, le);
      case GGUFValueType.INT32: return v.getInt32(p, le);
      case GGUFValueType.FLOAT32: return v.getFloat32(p, le);
      case GGUFValueType.UINT64: return v.getBigUint64(p, le);
      case GGUFValueType.INT64: return v.getBigInt64(p, le);
      default: return v.getFloat64(p, le);
    }
  }

  valueType(): GGUFValueType {
    const t = this.u32();
    if (!(t in GGUFValueType)) throw new ModelFormatError(`${this.src.name}: GGUF metadata value type ${t} is not one GGUF defines (0–12)`, REMEDY);
    return t;
  }

  async value(type: GGUFValueType, depth = 0): Promise<MetadataValue> {
    const bytes = SCALAR_BYTES[type];
    if (bytes !== undefined) {
      await this.need(bytes);
      return this.scalar(type);
    }
    if (type === GGUFValueType.STRING) return this.string();
    if (depth >= MAX_DEPTH) throw new ModelFormatError(`${this.src.name}: GGUF metadata nests arrays deeper than ${MAX_DEPTH}`, REMEDY);
    await this.need(this.narrow ? 8 : 12);
    const inner = this.valueType();
    const each = SCALAR_BYTES[inner];
    const n = this.count('array elements', each ?? (this.narrow ? 4 : 8));
    const out = new Array<MetadataValue>(n);
    if (each !== undefined) {
      await this.need(n * each);
      for (let i = 0; i < n; i++) out[i] = this.scalar(inner);
    } else if (inner === GGUFValueType.STRING) {
      // Most strings lie inside the window: only one that crosses its end waits for a refill.
      for (let i = 0; i < n; i++) out[i] = this.stringHere() ?? await this.string();
    } else {
      for (let i = 0; i < n; i++) out[i] = await this.value(inner, depth + 1);
    }
    return out;
  }
}

/** Reads a GGUF file's metadata and tensor infos (not its data). */
export function readGgufHeader(src: HeadSource): Promise<GgufHeader> {
  return readGgufHeaderInChunks(src, HEADER_CHUNK);
}

/** readGgufHeader asking for `chunk` bytes at a time: for tests, which make every value cross a chunk's end (gguf.ts does not re-export it). */
export async function readGgufHeaderInChunks(src: HeadSource, chunk: number): Promise<GgufHeader> {
  const c = new Cursor(src, await src.size(), chunk);
  if (c.size < 4) throw notGguf(src);
  await c.need(4);
  if (c.u32() !== GGUF_MAGIC) throw notGguf(src);
  await c.need(4);
  // A big-endian file's version reads as a multiple of 65536 little-endian (llama.cpp issue 3957; the library tells them apart so).
  let version = c.u32();
  if (!(version & 0xffff)) {
    c.littleEndian = false;
    version = new DataView(Uint32Array.of(version).buffer).getUint32(0, false);
  }
  if (version < 1 || version > 3) throw new ModelFormatError(`${src.name}: GGUF version ${version} is not one webgpu-tp reads (1–3)`, 'Convert the model again with a current llama.cpp');
  c.narrow = version === 1;
  const sizeBytes = c.narrow ? 4 : 8;
  await c.need(2 * sizeBytes);
  const tensorWire = c.narrow ? BigInt(c.u32()) : c.u64();
  const kvWire = c.narrow ? BigInt(c.u32()) : c.u64();
  const minTensor = sizeBytes + 4 + 4 + 8;
  const minKv = sizeBytes + 4 + 1;
  const least = tensorWire * BigInt(minTensor) + kvWire * BigInt(minKv);
  if (least > BigInt(c.left)) throw c.tooLong(least > BigInt(c.size) ? Infinity : Number(least), `${tensorWire} tensors and ${kvWire} metadata keys`);
  const metadata = Object.create(null) as Record<string, MetadataValue>;
  metadata.version = version;
  metadata.tensor_count = tensorWire;
  metadata.kv_count = kvWire;
  for (let i = 0; i < Number(kvWire); i++) {
    const key = await c.string();
    await c.need(4);
    const type = c.valueType();
    if (Object.hasOwn(metadata, key)) throw new ModelFormatError(`${src.name}: GGUF metadata key ${key} is stored twice`, REMEDY);
    metadata[key] = await c.value(type);
  }

  const infos: { name: string; dims: bigint[]; type: number; offset: bigint }[] = [];
  for (let i = 0; i < Number(tensorWire); i++) {
    const name = await c.string();
    await c.need(4);
    const nDims = c.u32();
    if (nDims > MAX_DIMS) throw new ModelFormatError(`${src.name}: tensor "${name}" has ${nDims} dimensions; GGUF allows at most ${MAX_DIMS}`, REMEDY);
    await c.need(nDims * sizeBytes + 12);
    const dims = Array.from({ length: nDims }, () => (c.narrow ? BigInt(c.u32()) : c.u64()));
    infos.push({ name, dims, type: c.u32(), offset: c.u64() });
  }

  const stated = metadata['general.alignment'] ?? DEFAULT_ALIGNMENT;
  const alignment = typeof stated === 'bigint' && stated <= 1n << 30n ? Number(stated) : stated;
  // llama.cpp refuses an alignment that is not a power of two.
  if (typeof alignment !== 'number' || !Number.isInteger(alignment) || alignment <= 0 || alignment > 1 << 30 || (alignment & (alignment - 1)) !== 0) {
    throw new ModelFormatError(`${src.name}: GGUF general.alignment must be a power of two, got ${String(stated)}`, REMEDY);
  }
  const dataOffset = Math.ceil(c.offset / alignment) * alignment;
  if (dataOffset > c.size) {
    throw new ModelFormatError(`${src.name}: the GGUF header ends at byte ${dataOffset}, past the end of the ${c.size}-byte file`, 'Re-download the file; it was cut short');
  }
  return {
    version,
    metadata,
    dataOffset,
    tensors: infos.map((t) => ({ name: t.name, dims: t.dims.map(toNumber), type: t.type, offset: dataOffset + toNumber(t.offset) })),
  };
}

function notGguf(src: HeadSource): ModelFormatError {
  return new ModelFormatError(`${src.name} is not a GGUF file (no "GGUF" magic)`, 'Pass a .gguf file, a llama2.c checkpoint or a Hugging Face model');
}
