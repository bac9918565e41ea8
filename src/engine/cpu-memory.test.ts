import { describe, expect, it } from 'vitest';
import { checkCpuRanksFit, cpuFitsAt, evenRankShapes, cpuRankBytes, smallestCpuDegree, WASM_MEMORY_BYTES } from './cpu-memory.js';
import { placeRanks } from './placement.js';
import { RankMemoryError } from '../errors.js';
import { llama2cConfig } from '../model/synth.js';
import { llama2cTensorTable } from '../model/formats/llama2c.js';
import type { TensorInfo } from '../model/config.js';
import { makePlan } from '../parallel/plan.js';

// stories260K's shape, and a Llama-2-7B shape in f32 (~27 GB): far over one 4 GiB memory.
const small = llama2cConfig({ dim: 64, hiddenDim: 172, nLayers: 5, nHeads: 8, nKvHeads: 4, vocabSize: 512, seqLen: 512 });
const big = llama2cConfig({ dim: 4096, hiddenDim: 11008, nLayers: 32, nHeads: 32, nKvHeads: 32, vocabSize: 32000, seqLen: 4096 });
const sizes = { contextLength: 512, maxBatch: 4, maxRows: 64, kvBytes: 4 };
const bigSizes = { contextLength: 1024, maxBatch: 1, maxRows: 64, kvBytes: 4 };
const all = (n: number) => Array.from({ length: n }, () => true);

describe('CPU rank memory', () => {
  it('counts the shard, the KV cache and the activations of a rank', () => {
    const plan = makePlan(small, { tensorParallel: 2 });
    const r = plan.ranks[1]!;
    const b = cpuRankBytes(small, r, sizes);
    expect(b.shard).toBe(r.byteLength);
    // layers × (K and V) × slots × its 2 kv heads × positions × head size × 4 bytes
    expect(b.kvCache).toBe(5 * 2 * 4 * 2 * 512 * 8 * 4);
    // 4 heads + 2·2 kv heads of 8; 86 hidden units; 256 vocabulary rows; 4 logit rows
    const floats = 3 * 64 + 3 * 64 * 64 + 64 * 64 + 64 * 32 + 3 * 64 * 86 + 4 * (64 + 256) + 512 + 512 * 8;
    expect(b.activations).toBe(floats * 4);
    expect(b.total).toBe(b.shard + b.kvCache + b.activations);
    expect(cpuRankBytes(small, r, { ...sizes, kvBytes: 2 }).kvCache).toBe(b.kvCache / 2);
  });

  it('the even plan\'s rank shapes, counted without slicing every row, are the plan\'s', () => {
    for (const d of [1, 2, 4, 8]) {
      const plan = makePlan(small, { tensorParallel: d });
      expect(evenRankShapes(small, undefined, d)).toEqual(plan.ranks.map(({ slices: _, ...r }) => r));
    }
  });

  it('a model too large for one rank names the smallest degree that fits, and fits there', () => {
    const fit = smallestCpuDegree(big, undefined, bigSizes)!;
    expect(fit).toBe(8);
    expect(cpuFitsAt(big, undefined, 4, bigSizes)).toBe(false);
    const one = makePlan(big, { tensorParallel: 1 });
    const e = (() => {
      try {
        checkCpuRanksFit(big, undefined, one, all(1), bigSizes);
      } catch (x) {
        return x;
      }
    })() as RankMemoryError;
    expect(e).toBeInstanceOf(RankMemoryError);
    expect(e.code).toBe('RANK_MEMORY');
    expect(e.fitsAt).toBe(8);
    expect(e.bytes).toBeGreaterThan(26e9);
    expect(e.limit).toBe(WASM_MEMORY_BYTES);
    expect(e.message).toMatch(/^At TP=1 a CPU rank needs 2\d\.\d\d GiB \(rank 0: shard .* MiB \+ KV cache 1024\.0 MiB \+ activations .* MiB\), over one WebAssembly memory's 4\.00 GiB/);
    expect(e.remedy).toContain('at least 8 CPU ranks (tensorParallel: 8)');
    expect(() => checkCpuRanksFit(big, undefined, makePlan(big, { tensorParallel: 8 }), all(8), bigSizes)).not.toThrow();
    // GPU ranks in the plan are not counted: only the CPU one must fit.
    expect(() => checkCpuRanksFit(big, undefined, one, [false], bigSizes)).not.toThrow();
    // More context per rank can need more ranks.
    expect(smallestCpuDegree(big, undefined, { ...bigSizes, contextLength: 4096, maxBatch: 4 })).toBeGreaterThan(8);
  });

  it('none fits: the error says so', () => {
    const huge = llama2cConfig({ dim: 8192, hiddenDim: 28672, nLayers: 80, nHeads: 8, nKvHeads: 8, vocabSize: 128000, seqLen: 4096 });
    expect(smallestCpuDegree(huge, undefined, bigSizes)).toBeUndefined();
    try {
      checkCpuRanksFit(huge, undefined, makePlan(huge, { tensorParallel: 1 }), all(1), bigSizes);
      expect.unreachable();
    } catch (e) {
      expect((e as RankMemoryError).fitsAt).toBeUndefined();
      expect((e as RankMemoryError).remedy).toContain('No degree fits');
    }
  });

  it('auto on CPU ranks starts at the smallest degree that fits, even past the cores', async () => {
    const never = async () => {
      throw new Error('nothing may be probed here');
    };
    const p = await placeRanks({}, big, bigSizes, never, never, { hasGpu: false, cores: 2, kvBytes: 4 });
    expect('candidates' in p).toBe(false);
    if ('candidates' in p) return;
    expect(p.specs).toHaveLength(8);
    expect(p.report.reason).toContain('a CPU rank holds at most 4 GiB, so at least 8 ranks');
    const t = await placeRanks({}, big, bigSizes, never, never, { hasGpu: false, cores: 16, kvBytes: 4 });
    expect('candidates' in t && t.labels).toEqual(['8 CPU ranks', '16 CPU ranks']);
  });

  it('counts a quantised shard\'s values and scales, and the int8 rows of a rank with int8 activations', () => {
    // Every matrix Q4_0 or Q8_0 (GGUF's groups of 32) as the GGUF loader describes it: byteLength the values alone.
    const c = llama2cConfig({ dim: 64, hiddenDim: 128, nLayers: 3, nHeads: 8, nKvHeads: 4, vocabSize: 96, seqLen: 64 });
    for (const dtype of ['q4_0', 'q8_0'] as const) {
      const tensors: TensorInfo[] = llama2cTensorTable(c).map((t) => {
        if (t.shape[0] === 1) return t;
        const n = t.shape[0] * t.shape[1];
        const byteLength = dtype === 'q4_0' ? n / 2 : n;
        return { ...t, dtype, byteLength, quant: { groupSize: 32, scaleOffset: t.offset + byteLength } };
      });
      for (const d of [1, 2]) {
        const plan = makePlan(c, { tensorParallel: d }, tensors);
        const shapes = evenRankShapes(c, tensors, d);
        expect(shapes.map((r) => r.byteLength), `${dtype} TP ${d}`).toEqual(plan.ranks.map((r) => r.byteLength));
        // values plus a 4-byte scale per 32: 0.625 (Q4_0) or 1.125 (Q8_0) bytes a value, over f32's 4
        const f32 = evenRankShapes(c, undefined, d)[0]!.byteLength;
        const norms = (2 * c.nLayers + 1) * c.dim * 4;
        expect((shapes[0]!.byteLength - norms) / (f32 - norms)).toBeCloseTo((dtype === 'q4_0' ? 0.625 : 1.125) / 4, 10);
      }
    }
    const r = makePlan(c, { tensorParallel: 2 }).ranks[0]!;
    const s = { contextLength: 64, maxBatch: 2, maxRows: 16, kvBytes: 4 };
    // 16 rows of the widest input (hidden/2 = 64 = dim), three bytes each plus 8 bytes per group of 32
    expect(cpuRankBytes(c, r, { ...s, int8Activations: true }).activations - cpuRankBytes(c, r, s).activations).toBe(16 * 64 * 3.25);
  });
});
