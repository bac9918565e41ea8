/**
 * A CPU rank's q8_m kernels (kquant.wat), on the memory of its `CpuKernels`: GGUF's Q4_1, Q5_0,
 * Q5_1, Q4_K, Q5_K and Q6_K as byte codes and (scale, min) pairs, value = code·scale + min.
 * Matrices are tiled once in JS, codes below 16 packed two a byte; matmuls take f32 activations
 * (weight-only) or the input quantised to int8 per group of 32 (quant.ts `quantize`) first.
 */
import { CPU_KQUANT_RELAXED_WASM_BASE64, CPU_KQUANT_WASM_BASE64 } from './kquant-wasm.js';
import { variantModules } from './wasm-variants.js';
import { matmulFlags, type CpuKernels } from './kernels.js';
import { ModelFormatError } from '../errors.js';

/**
 * How a tiled q8_m matrix stores its codes: `nibble` (every code < 16, groups of 32: Q4_K, Q4_1),
 * or a byte each in groups of 32 or 16: `small32` / `small16` when every code is below 64 (Q5_x,
 * Q5_K), which int8 activations then take through the relaxed i8 × i7 dot; `q6` when besides every
 * min of a group of 16 is −32·scale (Q6_K), stored without its mins (1.25 bytes a value against
 * small16's 1.5); else `byte32` / `byte16` (Q8_0 parts, codes to 255).
 */
export type KqForm = 'nibble' | 'byte32' | 'byte16' | 'small32' | 'small16' | 'q6';

/** Rows of q8_m values: a byte code each, two floats (scale, min) per group of groupSize (32 or 16). */
export interface KqPart {
  q: Uint8Array;
  s: Float32Array;
  groupSize: number;
}

interface KQuantExports {
  sums16(dst: number, x: number, xStride: number, m: number, k: number): void;
  matmulKQ(y: number, ys: number, x: number, xStride: number, xs16: number, w: number, m: number, k: number, n: number, flags: number, bias: number, form: number): void;
  a8sums16(dst: number, xa: number, m: number, k: number): void;
  matmulKQA8(y: number, ys: number, xa: number, xi16: number, w: number, m: number, k: number, n: number, flags: number, bias: number, form: number): void;
  embedKQ(y: number, q: number, s: number, tokens: number, m: number, dim: number, gs: number): void;
}

interface KqMatmulBase {
  y: number; // (m, ys) f32: the product goes to columns 0..n of each row
  /** Floats between y's rows (default n). */
  ys?: number;
  w: number; // (n, k) tiled (`tile`)
  form: KqForm;
  m: number;
  k: number;
  n: number;
  /** y += the product instead of y = it. */
  accumulate?: boolean;
  /** (n,) f32 added to the product (before it is accumulated). */
  bias?: number;
}

/** Weight-only: x (m, k; rows xStride floats apart), xs16 its `sums16`. */
export interface KqMatmulArgs extends KqMatmulBase {
  x: number;
  xStride?: number;
  xs16: number;
}

/** int8 activations: xa quant.ts `quantize`'s m rows of k values, xi16 their `a8sums16`. */
export interface KqMatmulA8Args extends KqMatmulBase {
  xa: number;
  xi16: number;
}

/** Rows of a q8_m matrix tiled in one form, starting where the segment before it ends. */
export interface KqSegment {
  at: number;
  form: KqForm;
  rows: number;
}

export const KQ_CHUNK = 32;
/** kquant.wat's form: its layout (0 nibbles, 1 bytes in groups of 32, 2 of 16, 3 q6), | 4 for byte codes below 64. */
const FORM_CODE: Readonly<Record<KqForm, number>> = { nibble: 0, byte32: 1, byte16: 2, small32: 5, small16: 6, q6: 3 };
/** Bytes of one (block of four rows, 32 values): codes, then scales, then mins (none in q6). */
const CHUNK_BYTES: Readonly<Record<KqForm, number>> = { nibble: 96, byte32: 160, byte16: 192, small32: 160, small16: 192, q6: 160 };
/** Where a chunk's scales start. */
const SCALES_AT: Readonly<Record<KqForm, number>> = { nibble: 64, byte32: 128, byte16: 128, small32: 128, small16: 128, q6: 128 };
const SMALL_CODES = 64;
const groupOf = (form: KqForm): number => (form === 'byte16' || form === 'small16' || form === 'q6' ? 16 : 32);
const isSmall = (form: KqForm): boolean => form === 'small32' || form === 'small16' || form === 'q6';

/** Whether every group's min is −32·scale (Q6_K's x = d·sc·(q − 32)): q6 tiles then store no min. */
function minsAreQ6(p: KqPart): boolean {
  for (let i = 0; i < p.s.length; i += 2) if (p.s[i + 1] !== -32 * p.s[i]!) return false;
  return true;
}

/** Every code's bits or'd: below 16 (or 64) exactly when every code is. */
function codeBits(q: Uint8Array): number {
  let bits = 0;
  for (let i = 0; i < q.length; i++) bits |= q[i]!;
  return bits;
}

const kquantModule = variantModules(CPU_KQUANT_WASM_BASE64, CPU_KQUANT_RELAXED_WASM_BASE64);

const instances = new WeakMap<CpuKernels, CpuKQuantKernels>();


export class CpuKQuantKernels {
  private constructor(private readonly kn: CpuKernels, private readonly k: KQuantExports) {}

  /** The q8_m kernels on `kn`'s memory, in its build (relaxed or plain SIMD). */
  static create(kn: CpuKernels): CpuKQuantKernels {
    const inst = new WebAssembly.Instance(kquantModule(kn.variant), { env: { memory: kn.memory } });
    return new CpuKQuantKernels(kn, inst.exports as unknown as KQuantExports);
  }

  /** The q8_m kernels on `kn`'s memory, one instance per memory. */
  static of(kn: CpuKernels): CpuKQuantKernels {
    let kq = instances.get(kn);
    if (!kq) {
      kq = CpuKQuantKernels.create(kn);
      instances.set(kn, kq);
    }
    return kq;
  }

  /** The form a part tiles in: nibbles where it can, else bytes in its group size, small where every code is below 64. */
  static formOf(p: KqPart): KqForm {
    if (p.groupSize !== 16 && p.groupSize !== 32) throw new ModelFormatError(`q8_m groups of ${p.groupSize} values are not GGUF's (32 or 16)`);
    const bits = codeBits(p.q);
    if (p.groupSize === 16) return bits >= SMALL_CODES ? 'byte16' : minsAreQ6(p) ? 'q6' : 'small16';
    return bits < 16 ? 'nibble' : bits < SMALL_CODES ? 'small32' : 'byte32';
  }

  /** Bytes of an (n, k) matrix tiled in `form`: its rows padded to a multiple of four. */
  static tiledBytes(n: number, k: number, form: KqForm): number {
    return Math.ceil(n / 4) * (k / KQ_CHUNK) * CHUNK_BYTES[form];
  }

  /** Bytes of `sums16` or `a8sums16` for m rows of k values. */
  static sumsBytes(m: number, k: number): number {
    return (m * k) / 4;
  }

  /**
   * Writes the parts' rows (k values each, one after another; every part of `form`'s group
   * size, or 32 for byte16, whose halves then share a pair) at dst in the tiled layout.
   */
  tile(dst: number, parts: readonly KqPart[], k: number, form: KqForm): void {
    if (k % KQ_CHUNK !== 0) throw new ModelFormatError(`a q8_m matrix on a CPU rank needs rows of whole groups of ${KQ_CHUNK}, got ${k} values`);
    if (isSmall(form)) {
      for (const p of parts) if (codeBits(p.q) >= SMALL_CODES) throw new ModelFormatError(`q8_m codes of 64 or more cannot tile as ${form} (codes below ${SMALL_CODES})`);
    }
    if (form === 'q6') {
      for (const p of parts) if (!minsAreQ6(p)) throw new ModelFormatError('q8_m groups whose min is not −32·scale cannot tile as q6 (Q6_K\'s form)', 'Tile them as small16');
    }
    const rows = parts.flatMap((p) => Array.from({ length: p.q.length / k }, (_, r) => ({ p, r })));
    const n = rows.length;
    const total = CpuKQuantKernels.tiledBytes(n, k, form);
    const out = new Uint8Array(total);
    const f = new Float32Array(out.buffer);
    const cb = CHUNK_BYTES[form];
    const g = k / KQ_CHUNK;
    for (let i = 0; i < n; i += 4) {
      for (let c = 0; c < 4 && i + c < n; c++) {
        const { p, r } = rows[i + c]!;
        if (p.groupSize !== 32 && p.groupSize !== groupOf(form)) throw new ModelFormatError(`q8_m groups of ${p.groupSize} cannot tile as ${form}`);
        for (let j = 0; j < g; j++) {
          const o = ((i / 4) * g + j) * cb;
          const e0 = r * k + j * KQ_CHUNK;
          if (form === 'nibble') {
            for (let e = 0; e < 16; e++) out[o + c * 16 + e] = p.q[e0 + e]! | (p.q[e0 + e + 16]! << 4);
          } else {
            out.set(p.q.subarray(e0, e0 + KQ_CHUNK), o + c * 32);
          }
          // Scales and mins of values 0..15 and 16..31 (one pair when the group is 32).
          const pair = (half: number) => 2 * Math.floor((e0 + 16 * half) / p.groupSize);
          const s = (o + SCALES_AT[form]) / 4;
          if (form === 'q6') {
            f[s + c] = p.s[pair(0)]!;
            f[s + 4 + c] = p.s[pair(1)]!;
          } else if (groupOf(form) === 16) {
            f[s + c] = p.s[pair(0)]!;
            f[s + 4 + c] = p.s[pair(1)]!;
            f[s + 8 + c] = p.s[pair(0) + 1]!;
            f[s + 12 + c] = p.s[pair(1) + 1]!;
          } else {
            f[s + c] = p.s[pair(0)]!;
            f[s + 4 + c] = p.s[pair(0) + 1]!;
          }
        }
      }
    }
    new Uint8Array(this.kn.memory.buffer, dst, total).set(out);
  }

  /** m rows of x (k floats, xStride apart) summed per 16 values into dst (sumsBytes(m, k)). */
  sums16(dst: number, x: number, m: number, k: number, xStride = k): void {
    this.k.sums16(dst, x, xStride, m, k);
  }

  /** y = x·wᵀ (+ bias), or y += it: per group scale·Σ code·x + min·Σx. */
  matmul(a: KqMatmulArgs): void {
    // f32 activations convert every code alike: the layout alone.
    this.k.matmulKQ(a.y, a.ys ?? a.n, a.x, a.xStride ?? a.k, a.xs16, a.w, a.m, a.k, a.n, matmulFlags(a), a.bias ?? 0, FORM_CODE[a.form] & 3);
  }

  /** quant.ts `quantize`'s m rows of k values at xa, summed per 16 values into dst (sumsBytes(m, k)). */
  a8sums16(dst: number, xa: number, m: number, k: number): void {
    this.k.a8sums16(dst, xa, m, k);
  }

  /** y = xa·wᵀ (+ bias), or y += it: per group of 32 activations, ((f32)Σ code·xq · scale + (f32)Σxq · min) · xs. */
  matmulA8(a: KqMatmulA8Args): void {
    this.k.matmulKQA8(a.y, a.ys ?? a.n, a.xa, a.xi16, a.w, a.m, a.k, a.n, matmulFlags(a), a.bias ?? 0, FORM_CODE[a.form]);
  }

  /** y[r] = row tokens[r] of a (vocab, dim) q8_m table (codes at q, pairs at s per group of gs), dequantised. */
  embed(y: number, q: number, s: number, tokens: number, m: number, dim: number, gs: number): void {
    this.k.embedKQ(y, q, s, tokens, m, dim, gs);
  }
}
