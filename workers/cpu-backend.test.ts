/**
 * The backend-neutral forward on the CPU backend (WebAssembly SIMD kernels) in Node, with the
 * real stories260K and an in-thread communicator (the shared-memory one blocks its thread while it
 * waits, so ranks in one thread need one that awaits): greedy tokens must be run.c's.
 */
import { statSync } from 'node:fs';
import { resolve } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { describe, expect, it } from 'vitest';
import greedy from '../test-support/fixtures/stories260K-greedy.json';
import { modelsDir, readArrayBuffer } from '../test-support/fixtures/paths.js';
import { parseLlama2cHeader } from '../src/model/formats/llama2c.js';
import { argmax, generate as oracleGenerate } from '../src/model/reference.js';
import { loadLlama2c } from '../src/model/formats/llama2c.js';
import { makePlan, type PlanOptions } from '../src/parallel/plan.js';
import { packRank } from '../test-support/model/shard-bytes.js';
import type { Communicator } from '../src/collective/communicator.js';
import { relaxedSimdAvailable, type CpuKernelVariant } from '../src/cpu/kernels.js';
import { createCpuBackend } from './cpu-backend.js';
import { forward } from './forward.js';
import { chooseRowSum } from './row-sum.js';

// Node 20 has relaxed SIMD behind a flag: set before the first validation, both kernel builds run here.
setFlagsFromString('--experimental-wasm-relaxed-simd');
const variants: CpuKernelVariant[] = relaxedSimdAvailable() ? ['simd', 'relaxed'] : ['simd'];

const path = resolve(modelsDir, 'stories260K.bin');
const file = new Uint8Array(readArrayBuffer(path));
const { config: c } = parseLlama2cHeader(file.subarray(0, 28), statSync(path).size);


/** world communicators in one thread: each collective awaits every rank, then sums in rank order. */
function inThread(world: number, slotFloats: number): Communicator[] {
  const slots = Array.from({ length: world }, () => new Float32Array(slotFloats));
  let [arrived, waiting] = [0, [] as (() => void)[]];
  const barrier = () => new Promise<void>((resolve) => {
    waiting.push(resolve);
    if (++arrived < world) return;
    for (const w of waiting) w();
    [arrived, waiting] = [0, []];
  });
  const collect = async (f: () => Float32Array) => {
    await barrier();
    const v = f();
    await barrier();
    return v;
  };
  return slots.map((slot, rank) => ({
    rank, world,
    slot: (n) => slot.subarray(0, n),
    allReduce: (n) => collect(() => {
      const sum = slots[0]!.slice(0, n);
      for (const s of slots.slice(1)) for (let i = 0; i < n; i++) sum[i] = Math.fround(sum[i]! + s[i]!);
      return sum;
    }),
    broadcast: (n, root) => collect(() => slots[root]!.slice(0, n)),
    barrier,
    close() {},
  }));
}

/**
 * Greedy generation on CPU ranks split as `opts` says: the fixture's first `prefill` tokens in one step (every
 * row's logits kept, to check the small-m path), then one token a step until the fixture's length.
 * Returns the tokens and, per prefill row, the argmax of its logits.
 */
async function generate(opts: PlanOptions, prefill: number, variant: CpuKernelVariant, kvCache: 'f32' | 'f16' = 'f32'): Promise<{ tokens: number[]; prefillNext: number[] }> {
  const plan = makePlan(c, opts);
  const tp = plan.world;
  const backend = createCpuBackend({ variant });
  const comms = inThread(tp, prefill * c.dim);
  const ranks = plan.ranks.map((r) => {
    const sum = chooseRowSum(r.rank, tp, false);
    const w = backend.createWeights(c, r, packRank(r, file));
    const s = backend.createState(c, r, w, {
      maxM: prefill, maxLogitRows: prefill, contextLength: c.seqLen, slots: 1, rows: sum.binding,
      activations: 'f32', exact: false, kvCache, profile: false,
    });
    return { r, sum, s, comm: comms[r.rank]! };
  });
  const times = { compute: 0, readback: 0, allreduce: 0, upload: 0, roundtrips: [] };
  /** One step over `tokens` at positions pos.., every row's logits: (rows, vocab). */
  const step = async (tokens: number[], pos: number): Promise<Float32Array[]> => {
    const m = tokens.length;
    const input = {
      m, tokens: Int32Array.from(tokens), positions: Int32Array.from(tokens, (_, i) => pos + i),
      slots: new Int32Array(m), logitRows: Int32Array.from(tokens, (_, i) => i),
    };
    const outs = ranks.map((k) => new Float32Array(m * (k.r.vocab[1] - k.r.vocab[0])));
    await Promise.all(ranks.map((k, i) => forward(backend, k.s, k.sum, k.comm, input, outs[i]!, times)));
    return tokens.map((_, row) => {
      const logits = new Float32Array(c.vocabSize);
      for (const [i, k] of ranks.entries()) {
        const n = k.r.vocab[1] - k.r.vocab[0];
        logits.set(outs[i]!.subarray(row * n, (row + 1) * n), k.r.vocab[0]);
      }
      return logits;
    });
  };
  const tokens = greedy.tokens.slice(0, prefill);
  const rows = await step(tokens, 0);
  const prefillNext = rows.map((l) => argmax(l, c.vocabSize));
  let next = prefillNext[prefill - 1]!;
  while (tokens.length < greedy.tokens.length && next !== 1) {
    tokens.push(next);
    if (tokens.length === greedy.tokens.length) break;
    next = argmax((await step([next], tokens.length - 1))[0]!, c.vocabSize);
  }
  for (const k of ranks) k.comm.close();
  return { tokens, prefillNext };
}

describe('forward on CPU ranks (WebAssembly SIMD) with stories260K', () => {
  // 3:3:2 starts rank 1's query heads inside a kv group (the kvGroup head offset).
  const splits: [string, PlanOptions][] = [
    ['TP 1', { tensorParallel: 1 }], ['TP 2', { tensorParallel: 2 }], ['TP 4', { tensorParallel: 4 }], ['fractions 3:3:2', { fractions: [3, 3, 2] }],
  ];
  const cases = variants.flatMap((v) => splits.map(([name, opts]) => [name, v, opts] as const));
  it.each(cases)('%s (%s kernels) gives run.c\'s greedy tokens', async (_, variant, opts) => {
    const { tokens } = await generate(opts, 1, variant);
    expect(tokens).toEqual(greedy.tokens);
  });

  // The oracle with its f16 cache (K and V rounded to halves as they enter it), as long as the fixture.
  const oracleF16 = oracleGenerate(loadLlama2c(file.buffer as ArrayBuffer), [1], greedy.tokens.length - 1, (l) => argmax(l, c.vocabSize), 'f16');
  const f16Cases = variants.flatMap((v) => splits.slice(0, 2).map(([name, opts]) => [name, v, opts] as const));
  it.each(f16Cases)('%s (%s kernels), f16 KV cache: the oracle\'s greedy tokens with its f16 cache', async (_, variant, opts) => {
    const { tokens } = await generate(opts, 5, variant, 'f16');
    expect(tokens).toEqual(oracleF16);
  });

  it.each(cases)('%s (%s kernels): a prefill of 5 fixture tokens predicts each next one, then decodes run.c\'s tokens', async (_, variant, opts) => {
    const { tokens, prefillNext } = await generate(opts, 5, variant);
    expect(prefillNext).toEqual(greedy.tokens.slice(1, 6));
    expect(tokens).toEqual(greedy.tokens);
  });
});
