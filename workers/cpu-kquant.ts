/**
 * q8_m matrices (GGUF's Q4_1, Q5_x and K-quants) in a CPU rank's memory, for src/cpu/kquant.ts.
 * A fused matrix (wq|wk|wv, w1|w3) whose parts differ (Q4_K beside Q6_K, as Q4_K_M files have
 * them) is tiled as consecutive segments of rows, each in its own form, so Q4_K parts keep their
 * nibbles and Q6_K parts their groups of 16; each segment writes its columns of the output.
 */
import type { CpuKernels } from '../src/cpu/kernels.js';
import { CpuKQuantKernels, type KqForm, type KqPart } from '../src/cpu/kquant.js';
import { ModelFormatError } from '../src/errors.js';
import type { CpuMatrix } from './cpu-quant.js';
import { regroupQ8m, toQ8m } from './q8m-views.js';
import { sliceValues, type SliceView } from './slice-views.js';

/** A quantised part as q8_m (Q8_0 and Q4_0 have an exact form when their scales are halves, as GGUF's are). */
function asQ8m(p: SliceView, what: string): KqPart {
  if (p.dtype === 'q8_m') return p;
  if (p.dtype === 'q8_0' || p.dtype === 'q4_0') {
    const v = toQ8m(p, sliceValues(p));
    if (v) return v;
  }
  throw new ModelFormatError(`${what}: a ${p.dtype} part cannot join q8_m parts exactly on a CPU rank`, 'Use a GGUF file, whose quantised scales are halves');
}

/**
 * Parts (q8_m, or Q8_0/Q4_0 beside q8_m ones) of `cols` values a row into the memory: tiled
 * segments for a matmul, or in rows (codes, then pairs in the parts' common group) for the embedding.
 */
export function kquantMatrix(kn: CpuKernels, raw: readonly SliceView[], cols: number, layout: 'rows' | 'tiled', what: string): CpuMatrix {
  const parts = raw.map((p) => asQ8m(p, what));
  if (cols % 32 !== 0) throw new ModelFormatError(`${what}: a q8_m matrix on a CPU rank needs rows of whole groups of 32, got ${cols} values`);
  if (layout === 'rows') {
    const g = Math.min(...parts.map((p) => p.groupSize));
    const all = parts.map((p) => regroupQ8m({ dtype: 'q8_m', ...p }, g));
    const codes = kn.alloc(all.reduce((n, p) => n + p.q.byteLength, 0));
    const pairs = kn.alloc(all.reduce((n, p) => n + p.s.byteLength, 0));
    let [c, s] = [codes, pairs];
    for (const p of all) {
      new Uint8Array(kn.memory.buffer, c, p.q.byteLength).set(p.q);
      new Float32Array(kn.memory.buffer, s, p.s.length).set(p.s);
      c += p.q.byteLength;
      s += p.s.byteLength;
    }
    return { at: codes, dtype: 'q8_m', layout, scales: pairs, groupSize: g };
  }
  // Consecutive parts of one form share a segment.
  const runs: { form: KqForm; parts: KqPart[] }[] = [];
  for (const p of parts) {
    const form = CpuKQuantKernels.formOf(p);
    const last = runs.at(-1);
    if (last?.form === form) last.parts.push(p);
    else runs.push({ form, parts: [p] });
  }
  const kq = CpuKQuantKernels.of(kn);
  const segments = runs.map(({ form, parts: ps }) => {
    const rows = ps.reduce((n, p) => n + p.q.length / cols, 0);
    const at = kn.alloc(CpuKQuantKernels.tiledBytes(rows, cols, form));
    kq.tile(at, ps, cols, form);
    return { at, form, rows };
  });
  return { at: segments[0]!.at, dtype: 'q8_m', layout, segments };
}
