/**
 * One byte stream made from tensors spread over several files: by default f32 from f32, f16 or
 * bf16 (a sharded Hugging Face checkpoint); a `SegmentCodec` may convert otherwise (GGUF's
 * blocks into the kernels' planes). Each file is read once, in order; the bytes of each listed
 * segment are converted as they pass and everything else (headers, unused tensors) is skipped.
 * The plan, the byte router and the shard cache then see one file, and memory stays near one
 * chunk: a unit (element or block) split across two chunks waits in a few carried bytes.
 */
import { AbortedError, ModelFormatError } from '../errors.js';
import type { Segment } from '../model/formats/hf.js';
import { DTYPE_BYTES, toF32 } from '../model/formats/safetensors.js';
import type { ByteSource } from './source.js';

/** Where a segment's bytes are in the real files. */
export interface StoredSegment {
  /** Index into the file list. */
  file: number;
  offset: number;
  byteLength: number;
}

/** The conversion of one segment, fed its bytes in order. */
export interface SegmentDecoder {
  /** Bytes of one indivisible stored unit (an element, a quantisation block). */
  readonly unit: number;
  /** Stream bytes of whole units. */
  push(bytes: Uint8Array): Uint8Array;
  /** Stream bytes held back until the segment's end (e.g. a plane of scales); may be empty. */
  end(): Uint8Array;
}

export interface SegmentCodec<S extends StoredSegment> {
  /** Stream bytes the whole segment becomes. */
  outBytes(s: S): number;
  open(s: S): SegmentDecoder;
}

const EMPTY = new Uint8Array(0);

/** safetensors f32/f16/bf16 → f32, or f16 kept as it is (`keep`). */
export const toF32Codec: SegmentCodec<Segment> = {
  outBytes: (s) => (s.keep ? s.byteLength : (s.byteLength / DTYPE_BYTES[s.dtype]) * 4),
  open: (s) => ({ unit: DTYPE_BYTES[s.dtype], push: (bytes) => (s.keep ? bytes : convert(bytes, s)), end: () => EMPTY }),
};

export class ConvertedSource<S extends StoredSegment = Segment> implements ByteSource {
  private readonly total: number;

  /** `segments` in stream order: sorted by file, then offset, not overlapping. */
  constructor(
    readonly name: string,
    private readonly files: readonly ByteSource[],
    private readonly segments: readonly S[],
    private readonly codec: SegmentCodec<S> = toF32Codec as unknown as SegmentCodec<S>,
    private readonly kind = 'f32',
  ) {
    for (let i = 1; i < segments.length; i++) {
      const p = segments[i - 1]!;
      const s = segments[i]!;
      if (s.file < p.file || (s.file === p.file && s.offset < p.offset + p.byteLength)) throw new RangeError('segments must be in file order and not overlap');
    }
    this.total = segments.reduce((n, s) => n + codec.outBytes(s), 0);
  }

  async size(): Promise<number> {
    return this.total;
  }

  async head(n: number): Promise<Uint8Array> {
    const out = new Uint8Array(Math.min(n, this.total));
    let o = 0;
    const ac = new AbortController();
    for await (const c of this.chunks(ac.signal)) {
      const take = Math.min(c.byteLength, out.byteLength - o);
      out.set(c.subarray(0, take), o);
      o += take;
      if (o === out.byteLength) break;
    }
    ac.abort();
    return out;
  }

  async identity(): Promise<string | undefined> {
    const ids = await Promise.all(this.files.map((f) => f.identity()));
    if (ids.some((i) => i === undefined)) return undefined;
    return `${this.kind}:${ids.join('|')}`;
  }

  async *chunks(signal?: AbortSignal): AsyncGenerator<Uint8Array> {
    for (let fi = 0; fi < this.files.length; fi++) {
      const segs = this.segments.filter((s) => s.file === fi);
      if (segs.length === 0) continue;
      const file = this.files[fi]!;
      const size = await file.size();
      const last = segs[segs.length - 1]!;
      if (last.offset + last.byteLength > size) {
        throw new ModelFormatError(`${file.name}: a tensor ends at byte ${last.offset + last.byteLength}, the file has ${size}`, 'Re-download the file; it may be truncated');
      }
      let pos = 0; // file offset of the next byte to arrive
      let si = 0;
      let carry = new Uint8Array(0); // bytes of a partial unit of segs[si]
      let decoder: SegmentDecoder | undefined;
      for await (const chunk of file.chunks(signal)) {
        if (signal?.aborted) throw new AbortedError('model load aborted');
        const start = pos;
        const end = pos + chunk.byteLength;
        pos = end;
        while (si < segs.length) {
          const s = segs[si]!;
          const from = Math.max(start, s.offset);
          const to = Math.min(end, s.offset + s.byteLength);
          if (from >= end) break;
          decoder ??= this.codec.open(s);
          if (to > from) {
            let bytes = chunk.subarray(from - start, to - start);
            if (carry.byteLength) {
              const joined = new Uint8Array(carry.byteLength + bytes.byteLength);
              joined.set(carry);
              joined.set(bytes, carry.byteLength);
              bytes = joined;
            }
            const whole = bytes.byteLength - (bytes.byteLength % decoder.unit);
            carry = bytes.slice(whole);
            if (whole > 0) yield decoder.push(bytes.subarray(0, whole));
          }
          if (to < s.offset + s.byteLength) break; // the segment continues in the next chunk
          const tail = decoder.end();
          if (tail.byteLength) yield tail;
          decoder = undefined;
          si++;
        }
        if (si === segs.length) break; // the rest of the file holds nothing we use
      }
      if (si < segs.length) throw new ModelFormatError(`${file.name} ended at byte ${pos} of ${size}`, 'Retry the load; the download was cut short');
    }
  }
}

function convert(bytes: Uint8Array, s: Segment): Uint8Array {
  if (s.dtype === 'F32') return bytes;
  const out = new Float32Array(bytes.byteLength / DTYPE_BYTES[s.dtype]);
  toF32(bytes, s.dtype, out);
  return new Uint8Array(out.buffer);
}
