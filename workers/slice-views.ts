/**
 * A rank's packed shard as views per tensor (f32 values, or a quantised plane and its group
 * scales, as src/parallel/plan.ts packs them), and the one form that tensors fused into one
 * matrix (wq|wk|wv, w1|w3) share when their dtypes differ, as GGUF files mix them. Every
 * conversion is exact: a Q4_0 group is a Q8_0 group of 32 with int8 values nibble − 8, and any
 * quantised value or half is an f32, and a q8_m group (GGUF's Q4_1/Q5_x and K-quants) is two
 * groups of half its size with the same (scale, min).
 */
import type { RankPlan } from '../src/parallel/plan.js';
import { quantScalesOffset } from '../src/parallel/plan.js';
import { dequantizeQ8 } from '../src/model/reference-q8.js';
import { dequantizeQ4, q4ToQ8 } from '../src/model/reference-q4.js';
import { ModelFormatError } from '../src/errors.js';
import { dequantize } from '../src/model/formats/gguf-blocks.js';
import { dequantizeQ8m, regroupQ8m, toQ8m } from './q8m-views.js';

/** A slice of the packed shard: f32 values, or a quantised values plane and its group scales. */
export type SliceView =
  | { dtype: 'f32'; f: Float32Array }
  /** IEEE halves, as the file stores them (rows of an even length). */
  | { dtype: 'f16'; h: Uint16Array }
  | { dtype: 'q8_0'; q: Int8Array; s: Float32Array; groupSize: number }
  | { dtype: 'q4_0'; q: Uint8Array; s: Float32Array; groupSize: number }
  /** Byte codes and (scale, min) pairs, two floats per group: value = code · scale + min. */
  | { dtype: 'q8_m'; q: Uint8Array; s: Float32Array; groupSize: number };

export function sliceViews(r: RankPlan, packed: ArrayBuffer): Map<string, SliceView> {
  const views = new Map<string, SliceView>();
  let offset = 0;
  for (const s of r.slices) {
    const n = s.shape[0] * s.shape[1];
    if (s.dtype === 'f32') views.set(s.name, { dtype: 'f32', f: new Float32Array(packed, offset, s.byteLength / 4) });
    else if (s.dtype === 'f16') views.set(s.name, { dtype: 'f16', h: new Uint16Array(packed, offset, n) });
    else {
      const g = s.groupSize!;
      const dtype = s.dtype as 'q8_0' | 'q4_0' | 'q8_m';
      const scales = new Float32Array(packed, offset + quantScalesOffset(dtype, n), (n / g) * (dtype === 'q8_m' ? 2 : 1));
      views.set(s.name, dtype === 'q8_0' ? { dtype, q: new Int8Array(packed, offset, n), s: scales, groupSize: g }
        : dtype === 'q8_m' ? { dtype, q: new Uint8Array(packed, offset, n), s: scales, groupSize: g }
        : { dtype, q: new Uint8Array(packed, offset, n / 2), s: scales, groupSize: g });
    }
    offset += s.byteLength;
  }
  if (offset !== packed.byteLength) throw new ModelFormatError(`rank ${r.rank}: shard is ${packed.byteLength} bytes, its plan says ${offset}`);
  return views;
}

/** A rank's slices by name: `view` is a ModelFormatError naming the rank where the shard lacks one, `f32` also where it is not f32. */
export function shardViews(r: RankPlan, packed: ArrayBuffer): { view: (name: string) => SliceView; f32: (name: string) => Float32Array } {
  const views = sliceViews(r, packed);
  const view = (name: string): SliceView => {
    const v = views.get(name);
    if (!v) throw new ModelFormatError(`rank ${r.rank}: tensor ${name} is missing from its shard`);
    return v;
  };
  const f32 = (name: string): Float32Array => {
    const v = view(name);
    if (v.dtype !== 'f32') throw new ModelFormatError(`rank ${r.rank}: tensor ${name} must be f32, got ${v.dtype}`);
    return v.f;
  };
  return { view, f32 };
}

/** How many values a slice holds, whatever its dtype. */
export function sliceValues(v: SliceView): number {
  return v.dtype === 'f32' ? v.f.length : v.dtype === 'f16' ? v.h.length : v.dtype === 'q8_m' ? v.q.length : v.s.length * v.groupSize;
}

const gcd = (a: number, b: number): number => (b === 0 ? a : gcd(b, a % b));

function groupOf(v: SliceView): number {
  return v.dtype === 'f32' || v.dtype === 'f16' ? 0 : v.groupSize;
}

/**
 * `parts` in the form they can be fused in: unchanged when they agree; all Q8_0 of one group size
 * when they are Q4_0 and Q8_0 in groups of 32; all q8_m in groups that divide every part's when a
 * q8_m is among quantised parts (Q4_K beside Q6_K, or beside Q8_0); otherwise f32.
 */
export function commonForm(parts: SliceView[]): SliceView[] {
  const first = parts[0]!;
  if (parts.every((p) => p.dtype === first.dtype && groupOf(p) === groupOf(first))) return parts;
  if (parts.every((p) => (p.dtype === 'q8_0' || p.dtype === 'q4_0') && p.groupSize === 32)) {
    return parts.map((p) => (p.dtype === 'q4_0' ? { dtype: 'q8_0', ...q4ToQ8(p, sliceValues(p)), groupSize: 32 } : p));
  }
  if (parts.some((p) => p.dtype === 'q8_m') && parts.every((p) => p.dtype === 'q8_m' || p.dtype === 'q8_0' || p.dtype === 'q4_0')) {
    const g = parts.map(groupOf).reduce(gcd);
    const all = parts.map((p) => (p.dtype === 'q8_m' ? p : toQ8m(p as Exclude<SliceView, { dtype: 'q8_m' | 'f32' | 'f16' }>, sliceValues(p))));
    if (all.every((p) => p !== undefined)) return all.map((p) => regroupQ8m(p, g));
  }
  return parts.map((p): SliceView => {
    if (p.dtype === 'f32') return p;
    const n = sliceValues(p);
    if (p.dtype === 'f16') {
      const f = new Float32Array(n);
      dequantize('F16', new Uint8Array(p.h.buffer, p.h.byteOffset, p.h.byteLength), f);
      return { dtype: 'f32', f };
    }
    if (p.dtype === 'q8_m') return { dtype: 'f32', f: dequantizeQ8m(p) };
    return { dtype: 'f32', f: p.dtype === 'q8_0' ? dequantizeQ8(p, n, p.groupSize) : dequantizeQ4(p, n) };
  });
}
