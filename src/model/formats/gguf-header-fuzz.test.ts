/**
 * Damaged and hostile GGUF headers: valid headers the tests write, mutated, must read exactly as
 * `@huggingface/gguf` reads them or be refused with a ModelFormatError, and wherever the two
 * disagree the disagreement must be one of the documented deliberate ones (DIFFERENCES).
 */
import { isDeepStrictEqual } from 'node:util';
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { GGUFValueType, serializeGgufMetadata, type GGUFTypedMetadata, type MetadataValue } from '@huggingface/gguf';
import { ModelFormatError } from '../../errors.js';
import { KQUANT_CONFIG } from '../../../test-support/model/kquant-gguf.js';
import { libraryGgufHeader } from '../../../test-support/model/gguf-library-header.js';
import { nestedArraysGguf } from '../../../test-support/model/gguf-nested.js';
import { HEADER_CHUNK, readGgufHeaderInChunks, type GgufHeader, type HeadSource } from './gguf-header.js';
import { ggufHeader, ggufTensorOut, ggufTensorPlan, type GgufKv } from './gguf-write.js';
import { ggufName } from './gguf.js';

/** Why our reader and the library may disagree, each on purpose. */
const DIFFERENCES = {
  bom: 'a string\'s leading BOM is kept (llama.cpp keeps a string\'s bytes); the library\'s TextDecoder drops it',
  zeros: 'a header running past the end of the file is refused; the library reads the rest of its 2 MB chunk as zeros',
  twice: 'a key stored twice (or named version, tensor_count, kv_count) is refused; the library keeps the last',
  alignment: 'general.alignment must be a power of two (llama.cpp); the library takes any positive integer, even a bool or string that Number() makes one',
  dims: 'a tensor of 5–8 dimensions is refused (llama.cpp\'s GGML_MAX_DIMS is 4); the library allows 8',
  bigDim: 'a dimension past 2^32 is left to the layout check (it matches none); the library refuses it',
  unsafe: 'a dimension or offset past 2^53 becomes Infinity (the layout refuses it), not an inexact number',
  clamped: 'a string running past the library\'s buffer (2 MB chunks) is cut short there by the library, without an error; we read it whole',
} as const;
/**
 * 'far': we refuse counts needing FAR (4 MiB) to 4 GiB past the file's end, and the library is not
 * asked: it would read up to 50 MB of zeros, seconds, before refusing. (Past 4 GiB its own caps
 * refuse at once, so it is asked.)
 */
type Difference = keyof typeof DIFFERENCES | 'same' | 'both refuse' | 'far';
const FAR = 4 << 20;

/** The least bytes our refusal says the header declared (0 when it is not a count's refusal). */
function declaredBytes(message: string): number {
  if (/declares more than 2\^32/.test(message)) return Infinity;
  const both = /declares (\d+) tensors and (\d+) metadata keys/.exec(message);
  if (both) return Number(both[1]) * 20 + Number(both[2]) * 9;
  return Number(/declares (\d+) (bytes of string|array elements)/.exec(message)?.[1] ?? 0);
}

type Outcome = { header: GgufHeader } | { error: Error };

function source(bytes: Uint8Array): HeadSource {
  return { name: 'fuzz.gguf', size: async () => bytes.byteLength, head: async (n) => bytes.slice(0, n), range: async (a, b) => bytes.slice(a, b) };
}

async function outcome(read: () => Promise<GgufHeader>): Promise<Outcome> {
  try {
    return { header: await read() };
  } catch (e) {
    return { error: e as Error };
  }
}

const ours = (bytes: Uint8Array, chunk = HEADER_CHUNK) => outcome(() => readGgufHeaderInChunks(source(bytes), chunk));

function stripBom(v: MetadataValue): MetadataValue {
  if (typeof v === 'string') return v.startsWith('\uFEFF') ? v.slice(1) : v;
  return Array.isArray(v) ? v.map(stripBom) : v;
}

/** The library's reading of a string that ran past the end of its 2 MB buffer: our string, cut short. */
function clamped(v: MetadataValue, libV: MetadataValue | undefined, why: Set<Difference>, fileSize: number): MetadataValue {
  if (typeof v === 'string' && typeof libV === 'string' && fileSize > 2e6 && v.length > libV.length && v.startsWith(libV)) {
    why.add('clamped');
    return libV;
  }
  return Array.isArray(v) && Array.isArray(libV) ? v.map((x, i) => clamped(x, libV[i], why, fileSize)) : v;
}

/** Our header as the library would give it, for the differences that are only in the values. */
function asLibrary(h: GgufHeader, lib: GgufHeader, fileSize: number): { header: GgufHeader; why: Difference[] } {
  const why = new Set<Difference>();
  const metadata = Object.fromEntries(Object.entries(h.metadata).map(([k, v]) => {
    const s = stripBom(v);
    if (!isDeepStrictEqual(s, v)) why.add('bom');
    return [stripBom(k) as string, clamped(s, lib.metadata[stripBom(k) as string], why, fileSize)];
  }));
  if (Object.keys(metadata).some((k) => !Object.hasOwn(h.metadata, k))) why.add('bom');
  const unsafe = (ourN: number, libN: number | undefined) => {
    if (ourN !== Infinity || libN === undefined) return ourN;
    why.add('unsafe');
    expect(libN).toBeGreaterThan(Number.MAX_SAFE_INTEGER);
    return libN;
  };
  const tensors = h.tensors.map((t, i) => ({
    ...t,
    name: stripBom(t.name) as string,
    dims: t.dims.map((d, j) => unsafe(d, lib.tensors[i]?.dims[j])),
    offset: unsafe(t.offset, lib.tensors[i]?.offset),
  }));
  if (tensors.some((t, i) => t.name !== h.tensors[i]!.name)) why.add('bom');
  return { header: { ...h, metadata, tensors }, why: [...why] };
}

const sameOutcome = (a: Outcome, b: Outcome) => ('header' in a && 'header' in b ? isDeepStrictEqual(a.header, b.header) : 'error' in a && 'error' in b && a.error.message === b.error.message);

/** How our reading of `bytes` differs from the library's; fails the test when it is not a documented difference. */
async function difference(bytes: Uint8Array, chunks: readonly number[], known?: Outcome): Promise<Difference[]> {
  const o = await ours(bytes);
  if ('error' in o && !(o.error instanceof ModelFormatError)) throw o.error;
  for (const chunk of chunks) {
    const c = await ours(bytes, chunk);
    if (!sameOutcome(c, o)) throw new Error(`read ${chunk} bytes at a time: ${'error' in c ? c.error.message : 'a header'}, in ${HEADER_CHUNK}: ${'error' in o ? o.error.message : 'a header'}`);
  }
  if ('error' in o && declaredBytes(o.error.message) > bytes.byteLength + FAR && declaredBytes(o.error.message) < 2 ** 32) return ['far'];
  const l = known ?? await outcome(() => libraryGgufHeader(bytes));
  if ('header' in o && 'header' in l) {
    const { header, why } = asLibrary(o.header, l.header, bytes.byteLength);
    expect(header, 'both read it, differently').toEqual(l.header);
    return why.length ? why : ['same'];
  }
  if ('error' in o && 'error' in l) return ['both refuse'];
  if ('error' in o && 'header' in l) {
    const m = o.error.message;
    const lib = l.header;
    if (/runs past the end|bytes left of the|can hold|past the end of the \d+-byte file/.test(m)) {
      // With the zeros the library read written into the file, we must read what it read.
      const padded = new Uint8Array(Math.max(bytes.byteLength, lib.dataOffset) + 64);
      padded.set(bytes);
      const then = await difference(padded, [], l);
      expect(then, 'padded with zeros').not.toContain('both refuse');
      return ['zeros', ...then.filter((d) => d !== 'same')];
    }
    const key = /key (.*) is stored twice/s.exec(m)?.[1];
    if (key !== undefined) {
      expect(Object.keys(lib.metadata).map((k) => stripBom(k))).toContain(stripBom(key));
      return ['twice'];
    }
    if (/alignment must be a power of two/.test(m)) {
      const a = Number(lib.metadata['general.alignment']);
      expect(Number.isInteger(a) && a > 0 && (a > 2 ** 30 || (a & (a - 1)) !== 0) || typeof lib.metadata['general.alignment'] !== 'number').toBe(true);
      return ['alignment'];
    }
    if (/dimensions; GGUF allows at most 4/.test(m)) {
      expect(lib.tensors.some((t) => t.dims.length > 4 && t.dims.length <= 8)).toBe(true);
      return ['dims'];
    }
    throw new Error(`we refuse what the library reads: ${m}`);
  }
  if ('header' in o && 'error' in l) {
    if (/dimension \d+ is \d+, which exceeds the maximum allowed \(4294967296\)/.test(l.error.message)) {
      expect(o.header.tensors.some((t) => t.dims.some((d) => d > 2 ** 32))).toBe(true);
      return ['bigDim'];
    }
    throw new Error(`we read what the library refuses (${l.error.message})`);
  }
  throw new Error('unreachable');
}

// ---- the valid headers mutated ----

const everyType: GgufKv = {
  'a.u8': { value: 200, type: GGUFValueType.UINT8 }, 'a.i8': { value: -100, type: GGUFValueType.INT8 },
  'a.u16': { value: 60000, type: GGUFValueType.UINT16 }, 'a.i16': { value: -30000, type: GGUFValueType.INT16 },
  'a.u32': { value: 4e9, type: GGUFValueType.UINT32 }, 'a.i32': { value: -2e9, type: GGUFValueType.INT32 },
  'a.f32': { value: Math.fround(0.1), type: GGUFValueType.FLOAT32 }, 'a.bool': { value: true, type: GGUFValueType.BOOL },
  'a.str': { value: 'héllo 🦙', type: GGUFValueType.STRING }, 'a.empty': { value: '', type: GGUFValueType.STRING },
  'a.u64': { value: 2n ** 63n + 5n, type: GGUFValueType.UINT64 }, 'a.i64': { value: -(2n ** 62n), type: GGUFValueType.INT64 },
  'a.f64': { value: Math.PI, type: GGUFValueType.FLOAT64 },
  'a.bools': { value: [true, false, true], type: GGUFValueType.ARRAY, subType: GGUFValueType.BOOL },
  'a.u64s': { value: [1n, 2n ** 40n], type: GGUFValueType.ARRAY, subType: GGUFValueType.UINT64 },
  'a.strs': { value: ['\uFEFFbom', '', 'ß€', '🦙x', 'long '.repeat(14)], type: GGUFValueType.ARRAY, subType: GGUFValueType.STRING },
  'a.none': { value: [], type: GGUFValueType.ARRAY, subType: GGUFValueType.STRING },
  'general.alignment': { value: 64, type: GGUFValueType.UINT32 },
};

function metadataOnly(version: 1 | 2 | 3, littleEndian: boolean): Uint8Array {
  const typed = { version: { value: version, type: GGUFValueType.UINT32 }, tensor_count: { value: 0n, type: GGUFValueType.UINT64 }, kv_count: { value: 0n, type: GGUFValueType.UINT64 }, ...everyType };
  return serializeGgufMetadata(typed as unknown as GGUFTypedMetadata, { littleEndian, alignment: 64 });
}

/** Metadata and five tensor infos (version 3, little-endian), as gguf-write.ts writes a model's header. */
function withTensors(): Uint8Array {
  const plan = ggufTensorPlan(KQUANT_CONFIG, 'q8_0').slice(0, 5).map((t) => ggufTensorOut({ ...t, name: ggufName(t.name) }));
  const kv: GgufKv = {
    'general.architecture': { value: 'llama', type: GGUFValueType.STRING },
    'llama.context_length': { value: 256, type: GGUFValueType.UINT32 },
    'tokenizer.ggml.tokens': { value: ['<unk>', '\uFEFF', 'a', '▁the'], type: GGUFValueType.ARRAY, subType: GGUFValueType.STRING },
  };
  const { header } = ggufHeader(kv, plan);
  const out = new Uint8Array(header.byteLength + 32);
  out.set(header);
  return out;
}

const bases: [string, Uint8Array][] = [
  ...([1, 2, 3] as const).flatMap((v) => [true, false].map((le): [string, Uint8Array] => [`every type v${v} ${le ? 'LE' : 'BE'}`, metadataOnly(v, le)])),
  ['tensor infos', withTensors()],
  ['nested arrays', nestedArraysGguf()],
];

/** Values a damaged count, length or size field could hold. */
const HUGE = [0n, 1n, 3n, 5n, 255n, 2n ** 31n, 2n ** 32n - 1n, 2n ** 32n, 2n ** 53n + 1n, 2n ** 63n, 2n ** 64n - 1n];

type Mutation =
  | { kind: 'cut'; at: number }
  | { kind: 'byte'; at: number; value: number }
  | { kind: 'number'; at: number; wide: boolean; value: bigint; littleEndian: boolean }
  | { kind: 'splice'; from: number; to: number; at: number; remove: boolean };

const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({ kind: fc.constant('cut' as const), at: fc.nat() }),
  fc.record({ kind: fc.constant('byte' as const), at: fc.nat(), value: fc.integer({ min: 0, max: 255 }) }),
  fc.record({ kind: fc.constant('number' as const), at: fc.nat(), wide: fc.boolean(), value: fc.constantFrom(...HUGE), littleEndian: fc.boolean() }),
  fc.record({ kind: fc.constant('splice' as const), from: fc.nat(), to: fc.nat(), at: fc.nat(), remove: fc.boolean() }),
);

function mutate(base: Uint8Array, ms: readonly Mutation[]): Uint8Array {
  let b = base.slice();
  for (const m of ms) {
    if (b.byteLength === 0) break;
    const at = m.at % b.byteLength;
    if (m.kind === 'cut') b = b.slice(0, at);
    else if (m.kind === 'byte') b[at] = m.value;
    else if (m.kind === 'number') {
      const width = m.wide ? 8 : 4;
      if (at + width > b.byteLength) continue;
      const v = new DataView(b.buffer);
      if (m.wide) v.setBigUint64(at, m.value, m.littleEndian);
      else v.setUint32(at, Number(m.value & 0xffffffffn), m.littleEndian);
    } else {
      const [lo, hi] = [m.from % b.byteLength, m.to % b.byteLength].sort((x, y) => x - y) as [number, number];
      const piece = b.slice(lo, Math.min(hi, lo + 64));
      b = m.remove ? Uint8Array.from([...b.subarray(0, lo), ...b.subarray(lo + piece.length)]) : Uint8Array.from([...b.subarray(0, at), ...piece, ...b.subarray(at)]);
    }
  }
  return b;
}

describe('GGUF header reader on damaged files, against @huggingface/gguf', () => {
  it('reads every valid base header as the library does, also 1, 2, 3 and 7 bytes at a time', async () => {
    for (const [what, bytes] of bases) {
      const d = await difference(bytes, [1, 2, 3, 7]);
      expect(d.every((x) => x === 'same' || x === 'bom'), `${what}: ${d.join(', ')}`).toBe(true);
    }
  });

  it('cut at any byte before its data starts, every base is refused as truncated, also read 1 byte at a time', async () => {
    for (const [what, base] of bases) {
      const whole = await ours(base);
      if (!('header' in whole)) throw whole.error;
      for (let n = 0; n < base.byteLength; n++) {
        const cut = base.subarray(0, n);
        for (const chunk of [HEADER_CHUNK, 1]) {
          const o = await ours(cut, chunk);
          if (n >= whole.header.dataOffset) expect(o, `${what} cut at ${n}`).toEqual(whole);
          else {
            if (!('error' in o)) throw new Error(`${what} cut at ${n} of ${base.byteLength} was read`);
            expect(o.error, `${what} cut at ${n}`).toBeInstanceOf(ModelFormatError);
            expect(o.error.message, `${what} cut at ${n}`).toMatch(n < 4 ? /is not a GGUF file/ : new RegExp(`of the ${n}-byte file`));
          }
        }
      }
    }
  });

  it('flipped bytes, huge counts and lengths, splices, cuts: the library\'s reading, a documented difference, or a ModelFormatError', async () => {
    const seen = new Map<Difference, number>();
    await fc.assert(fc.asyncProperty(fc.integer({ min: 0, max: bases.length - 1 }), fc.array(mutation, { minLength: 1, maxLength: 3 }), fc.constantFrom(1, 3, 5, 16), async (i, ms, chunk) => {
      for (const d of await difference(mutate(bases[i]![1], ms), [chunk])) seen.set(d, (seen.get(d) ?? 0) + 1);
    }), { numRuns: 400, seed: 20261204 });
    // The property is only as good as its reach: it saw files both read, both refuse, and the library misreads.
    expect((seen.get('same') ?? 0) + (seen.get('bom') ?? 0)).toBeGreaterThan(0);
    for (const d of ['both refuse', 'zeros', 'twice'] as const) expect(seen.get(d), d).toBeGreaterThan(0);
  });
});
