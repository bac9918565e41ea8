// One CPU rank's prefill, kernel by kernel: a Q4_0 model with int8 activations (the default for a
// Q4_0 GGUF on CPU ranks), its prompt in the engine's 64-row chunks, each op timed alone on one
// core (median of 7 timed runs), beside the core's i8-dot and f32-FMA peaks (relaxed SIMD) and a
// decode step's matmuls on the same shard, so the op that bounds prefill, its distance from the
// peak and prefill's edge over decode are plain. Random weights and inputs:
// the kernels' work does not depend on the values. Collectives are not timed.
// Usage: npx tsx scripts/cpu-prefill-profile.mts [--shape stories110M|stories15M] [--tp 2] [--prompt 180] (stories15M: --tp 1)
import { setFlagsFromString } from 'node:v8';
import { parseArgs } from 'node:util';
import { CpuKernels } from '../src/cpu/kernels.ts';
import { CpuQuantKernels } from '../src/cpu/quant.ts';
import { CpuQuantGemm } from '../src/cpu/qgemm.ts';
import { DOT_PEAK_RELAXED_WASM_BASE64 } from '../src/cli/page/dot-peak-wasm.ts';
import { FMA_PEAK_RELAXED_WASM_BASE64 } from '../src/cli/page/fma-peak-wasm.ts';

// Before the first kernels are made: Node 20 has relaxed SIMD behind a flag.
setFlagsFromString('--experimental-wasm-relaxed-simd');

const SHAPES = {
  stories15M: { dim: 288, hidden: 768, nHeads: 6, nLayers: 6, vocab: 32000 },
  stories110M: { dim: 768, hidden: 2048, nHeads: 12, nLayers: 12, vocab: 32000 },
} as const;
const { values: opt } = parseArgs({ options: { shape: { type: 'string', default: 'stories110M' }, tp: { type: 'string', default: '2' }, prompt: { type: 'string', default: '180' } } });
const shape = SHAPES[opt.shape as keyof typeof SHAPES];
if (!shape) throw new Error(`--shape: expected one of ${Object.keys(SHAPES).join(', ')}, got ${opt.shape}`);
const tp = Number(opt.tp);
const promptLen = Number(opt.prompt);
const CHUNK = 64;
const hs = shape.dim / shape.nHeads;
const nh = shape.nHeads / tp;
const qDim = nh * hs;
const qkvN = 3 * qDim;
const hidden = shape.hidden / tp;
const vocab = shape.vocab / tp;
const maxK = Math.max(shape.dim, hidden);
// Q4_0 rows are whole groups of 32: stories15M's 288-wide heads block (qDim) splits into them only at TP 1.
for (const [name, k] of [['dim', shape.dim], ['qDim', qDim], ['hidden', hidden]] as const) {
  if (k % 32 !== 0) throw new Error(`--shape ${opt.shape} at --tp ${tp}: ${name} ${k} is not whole groups of 32 (Q4_0); try --tp 1`);
}

const kn = CpuKernels.create(1 << 20, { variant: 'relaxed' });
const qk = CpuQuantKernels.create(kn);
const gemm = CpuQuantGemm.create(kn, CHUNK, maxK);
let seed = 1;
const rand = () => ((seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32) * 2 - 1;
/** An (n, k) Q4_0 matrix of random nibbles and scales, tiled. */
const q4 = (n: number, k: number): number => {
  const q = Uint8Array.from({ length: (n * k) / 2 }, () => (rand() * 128 + 128) & 255);
  const s = Float32Array.from({ length: (n * k) / 32 }, () => 0.01 + 0.01 * rand());
  const at = kn.alloc(CpuQuantKernels.tiledBytes(n, k, 'q4_0'));
  qk.tile(at, [{ q, s }], k, 'q4_0');
  return at;
};
const floats = (n: number, scale = 1): number => {
  const at = kn.alloc(n * 4);
  kn.f32(at, n).set(Float32Array.from({ length: n }, () => rand() * scale));
  return at;
};
const w = { qkv: q4(qkvN, shape.dim), wo: q4(shape.dim, qDim), w13: q4(2 * hidden, shape.dim), w2: q4(shape.dim, hidden), out: q4(vocab, shape.dim) };
const x = floats(CHUNK * shape.dim);
const xn = floats(CHUNK * shape.dim);
const g = floats(shape.dim);
const qkv = floats(CHUNK * qkvN);
const att = floats(CHUNK * qDim);
const h13 = floats(CHUNK * 2 * hidden, 4);
const hb = floats(CHUNK * hidden);
const xa = kn.alloc(CpuQuantKernels.activationBytes(CHUNK, maxK));
const seq = Math.max(promptLen, CHUNK);
const cos = floats(seq * (hs / 2));
const sin = floats(seq * (hs / 2));
const kc = floats(seq * nh * hs);
const vc = floats(seq * nh * hs);
const positions = kn.alloc(CHUNK * 4);
const slots = kn.alloc(CHUNK * 4);
kn.i32(slots, CHUNK).fill(0);
const logits = kn.alloc(vocab * 4);

const med = (v: number[]) => v.sort((a, b) => a - b)[v.length >> 1]!;
/** ms per call of f: 7 timed runs of enough calls for ~20 ms each, after warm-up. */
function time(f: () => void): number {
  f();
  let reps = 1;
  for (let t = performance.now(); performance.now() - t < 20; reps++) f();
  const runs: number[] = [];
  for (let i = 0; i < 7; i++) {
    const t = performance.now();
    for (let r = 0; r < reps; r++) f();
    runs.push((performance.now() - t) / reps);
  }
  return med(runs);
}

/** The ops of one layer for a chunk of m rows at positions p0.., as the CPU backend runs them. */
const layerOps = (m: number, p0: number): [string, () => void, number][] => {
  const setPos = () => kn.i32(positions, m).set(Int32Array.from({ length: m }, (_, i) => p0 + i));
  setPos();
  const a8 = (k: number, n: number, wt: number, y: number, xin: number, xStride = k) => () => {
    qk.quantize(xa, xin, m, k, xStride, false);
    gemm.matmulA8({ y, xa, w: wt, dtype: 'q4_0', m, k, n });
  };
  const ops2 = 2 * m; // multiply-adds count as 2 ops
  return [
    ['rmsnorm ×2', () => { kn.rmsnorm(xn, x, g, m, shape.dim, 1e-5); kn.rmsnorm(xn, x, g, m, shape.dim, 1e-5); }, 0],
    ['quantizeA8 (k dim, dim, qDim, hidden)', () => { qk.quantize(xa, xn, m, shape.dim, shape.dim, false); qk.quantize(xa, xn, m, shape.dim, shape.dim, false); qk.quantize(xa, att, m, qDim, qDim, false); qk.quantize(xa, hb, m, hidden, hidden, false); }, 0],
    ['gemm qkv', () => gemm.matmulA8({ y: qkv, xa, w: w.qkv, dtype: 'q4_0', m, k: shape.dim, n: qkvN }), ops2 * shape.dim * qkvN],
    ['rope + kvWrite', () => {
      kn.rope(qkv, qkvN, nh, hs, cos, sin, positions, m, 'interleaved');
      kn.rope(qkv + qDim * 4, qkvN, nh, hs, cos, sin, positions, m, 'interleaved');
      kn.kvWrite(qkv + qDim * 4, qkvN, nh, hs, positions, slots, m, kc, seq);
      kn.kvWrite(qkv + 2 * qDim * 4, qkvN, nh, hs, positions, slots, m, vc, seq);
    }, 0],
    ['attention', () => kn.attention({ out: att, q: qkv, qStride: qkvN, k: kc, v: vc, maxSeq: seq, nKv: nh, positions, slots, m, nHeads: nh, headSize: hs, kvMul: 1, headOffset: 0, kvDtype: 'f32' }), 0],
    ['gemm wo', () => gemm.matmulA8({ y: x, xa, w: w.wo, dtype: 'q4_0', m, k: qDim, n: shape.dim, accumulate: true }), ops2 * qDim * shape.dim],
    ['gemm w13', () => gemm.matmulA8({ y: h13, xa, w: w.w13, dtype: 'q4_0', m, k: shape.dim, n: 2 * hidden }), ops2 * shape.dim * 2 * hidden],
    ['siluMul', () => kn.siluMul(hb, h13, h13 + hidden * 4, hidden, m, 2 * hidden), 0],
    ['gemm w2', () => gemm.matmulA8({ y: x, xa, w: w.w2, dtype: 'q4_0', m, k: hidden, n: shape.dim, accumulate: true }), ops2 * hidden * shape.dim],
    ['add (residual)', () => kn.add(x, xn, m * shape.dim), 0],
    // The classifier, once a chunk, on the last row only (small-m kernel).
    ['classifier (1 row) / nLayers', () => { qk.quantize(xa, xn, 1, shape.dim, shape.dim, false); qk.matmulA8({ y: logits, xa, w: w.out, dtype: 'q4_0', m: 1, k: shape.dim, n: vocab }); }, 0],
    ['(quantize + gemm w13 together)', a8(shape.dim, 2 * hidden, w.w13, h13, xn), 0],
  ];
};

// Chunks of the prompt, each op's time summed over them and the layers.
const total = new Map<string, { ms: number; ops: number }>();
for (let p0 = 0; p0 < promptLen; p0 += CHUNK) {
  const m = Math.min(CHUNK, promptLen - p0);
  for (const [name, f, ops] of layerOps(m, p0)) {
    const ms = time(f) * (name.startsWith('classifier') ? 1 : shape.nLayers);
    const t = total.get(name) ?? { ms: 0, ops: 0 };
    total.set(name, { ms: t.ms + ms, ops: t.ops + ops * (name.startsWith('classifier') ? 0 : shape.nLayers) });
  }
}

// Peaks: the same loops as `bench kernels` (dot-peak.wat, fma-peak.wat), relaxed builds.
const instance = (base64: string) => new WebAssembly.Instance(new WebAssembly.Module(Buffer.from(base64, 'base64'))).exports;
const dotI8 = instance(DOT_PEAK_RELAXED_WASM_BASE64).dotI8 as (turns: number, seed: number) => number;
const fma = instance(FMA_PEAK_RELAXED_WASM_BASE64).peak as (turns: number, s: number) => number;
const N = 1 << 22;
// Per turn: 10 dots of 16 products each (a multiply-add counting as 2 ops), or 10 FMAs of 4 lanes.
const i8Gops = (320 * N) / (time(() => dotI8(N, 1)) * 1e6);
const fmaGops = (80 * N) / (time(() => fma(N, 0.001)) * 1e6);

// A decode step's matmuls on the same shard (m 1, the small-m kernel), over every layer's own
// weights as decode streams them, plus the classifier: the other side of prefill / decode.
const decodeW = Array.from({ length: shape.nLayers }, () => [[qkvN, shape.dim], [shape.dim, qDim], [2 * hidden, shape.dim], [shape.dim, hidden]].map(([n, k]) => ({ n: n!, k: k!, w: q4(n!, k!) })));
qk.quantize(xa, xn, 1, shape.dim, shape.dim, false);
const decodeMs = time(() => {
  for (const layer of decodeW) for (const { n, k, w } of layer) qk.matmulA8({ y: logits, xa, w, dtype: 'q4_0', m: 1, k, n });
  qk.matmulA8({ y: logits, xa, w: w.out, dtype: 'q4_0', m: 1, k: shape.dim, n: vocab });
});
const layerMacs = shape.nLayers * (qkvN * shape.dim + shape.dim * qDim + 2 * hidden * shape.dim + shape.dim * hidden);
const decodeGops = (2 * (layerMacs + vocab * shape.dim)) / (decodeMs * 1e6);

const sum = [...total].filter(([n]) => !n.startsWith('(')).reduce((s, [, t]) => s + t.ms, 0);
console.log(`${opt.shape}, TP ${tp}, one rank, Q4_0 × int8 (relaxed SIMD), prompt ${promptLen} in chunks of ${CHUNK}: per-op ms summed over chunks and ${shape.nLayers} layers`);
for (const [name, t] of total) {
  const rate = t.ops ? `  ${(t.ops / (t.ms * 1e6)).toFixed(1)} Gop/s (${((100 * t.ops) / (t.ms * 1e6) / i8Gops).toFixed(0)}% of the i8-dot peak)` : '';
  console.log(`${name.padEnd(40)} ${t.ms.toFixed(1).padStart(8)} ms ${name.startsWith('(') ? '' : `${((100 * t.ms) / sum).toFixed(1).padStart(5)}%`}${rate}`);
}
console.log(`${'total'.padEnd(40)} ${sum.toFixed(1).padStart(8)} ms  → ${((promptLen / sum) * 1000).toFixed(0)} tok/s for this rank alone`);
console.log(`peaks (dot-peak.wat, fma-peak.wat): i8 dot (i16x8.relaxed_dot_i8x16_i7x16_s + add) ${i8Gops.toFixed(1)} Gop/s, f32 FMA (f32x4.relaxed_madd) ${fmaGops.toFixed(1)} Gop/s`);
const gemmMs = [...total].filter(([n]) => n.startsWith('gemm')).reduce((t, [, v]) => t + v.ms, 0);
console.log(`decode matmuls (m 1, ${shape.nLayers} layers' own weights + classifier): ${decodeMs.toFixed(2)} ms a token, ${decodeGops.toFixed(1)} Gop/s (${((100 * decodeGops) / i8Gops).toFixed(0)}% of the i8-dot peak); prefill GEMMs ${(gemmMs / promptLen).toFixed(2)} ms a token, ${((2 * layerMacs * promptLen) / (gemmMs * 1e6)).toFixed(1)} Gop/s`);
console.log(`this rank's kernels alone: decode matmuls / prefill total per token ${(decodeMs / (sum / promptLen)).toFixed(2)}×, / prefill GEMMs ${(decodeMs / (gemmMs / promptLen)).toFixed(2)}×`);
