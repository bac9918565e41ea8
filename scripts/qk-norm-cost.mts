// The CPU ranks' q/k norm (Qwen3) beside the qkv matmul it follows, on one rank (relaxed SIMD),
// for Qwen3 shapes at m = 1 and 16: medians of 9 timed runs. Usage: npx tsx scripts/qk-norm-cost.mts
import { setFlagsFromString } from 'node:v8';
import { CpuKernels } from '../src/cpu/kernels.ts';
import { qkNorm } from '../src/cpu/qk-norm.ts';

// Before the first kernels are made: Node 20 has relaxed SIMD behind a flag.
setFlagsFromString('--experimental-wasm-relaxed-simd');
for (const [label, dim, nh, nkv, hs] of [['Qwen3-0.6B TP1', 1024, 16, 8, 128], ['Qwen3-0.6B TP2', 1024, 8, 4, 128], ['Qwen3-4B TP2', 2560, 16, 4, 128]] as const) {
  for (const m of [1, 16]) {
    const n = (nh + 2 * nkv) * hs;
    const kn = CpuKernels.create();
    const w = kn.alloc(CpuKernels.tiledBytes(n, dim, 'f32'));
    kn.tile(w, [Float32Array.from({ length: n * dim }, (_, i) => Math.sin(i) * 0.01)], dim);
    const x = kn.alloc(m * dim * 4);
    kn.f32(x, m * dim).fill(0.5);
    const y = kn.alloc(m * n * 4);
    const g = kn.alloc(2 * hs * 4);
    kn.f32(g, 2 * hs).fill(1.1);
    const mm = () => kn.matmul({ y, x, w, dtype: 'f32', layout: 'tiled', m, k: dim, n });
    const qk = () => qkNorm(kn, { qkv: y, rowStride: n, nHeads: nh, nKv: nkv, headSize: hs, weight: g, eps: 1e-6, m });
    const time = (f: () => void, reps: number) => {
      const t = performance.now();
      for (let i = 0; i < reps; i++) f();
      return (performance.now() - t) / reps;
    };
    for (let i = 0; i < 20; i++) { mm(); qk(); }
    const a: number[] = [];
    const b: number[] = [];
    for (let i = 0; i < 9; i++) { a.push(time(mm, 20)); b.push(time(qk, 200)); }
    const med = (v: number[]) => v.sort((p, q) => p - q)[4]!;
    console.log(`${label} m=${m}: qkv matmul ${(med(a) * 1000).toFixed(1)} us, q/k norm ${(med(b) * 1000).toFixed(2)} us, ratio ${(med(b) / med(a) * 100).toFixed(2)}%`);
  }
}
