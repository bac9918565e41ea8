import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Page } from '@playwright/test';
import { test, expect } from './fixtures.js';
import { runGenerate } from '../src/cli/generate.js';
import type { Harness } from '../src/cli/browser.js';
import type { PageGenerateOptions } from '../src/cli/page/types.js';
import type { WebGpuTpError } from '../src/errors.js';
import { loadLlama2c } from '../src/model/formats/llama2c.js';
import { loadGgufDequantized } from '../src/model/formats/gguf.js';
import type { GgmlType } from '../src/model/formats/gguf-blocks.js';
import { Tokenizer } from '../src/model/tokenizer/tokenizer.js';
import { argmax, generate } from '../src/model/reference.js';
import { modelsDir, readArrayBuffer } from '../test-support/fixtures/paths.js';
import { allOf, encodeTypedGguf, kquantModel, q4kmMix, type TypeOf } from '../test-support/model/kquant-gguf.js';
import type { Q8mMatmulCase } from '../test-support/page/kernels-q8m.js';
import type { Check } from '../test-support/page/kernels.js';

/**
 * GGUF K-quants (Q4_K, Q5_K, Q6_K) and Q4_1 / Q5_0 / Q5_1 on GPU ranks, kept as byte codes and
 * (scale, min) pairs: the kernels against the oracle on ggml's dequantised weights, then the
 * engine's greedy tokens against the oracle's. A tiny dim-512 Llama (rows of two super-blocks)
 * in a Q4_K_M-style mix with its tied embedding in Q6_K, at TP 1 and 2; stories260K (rows of 64)
 * for the 32-value types.
 */
const tok = Tokenizer.parse(readFileSync(resolve(modelsDir, 'tok512.bin')), 512);
const stories = loadLlama2c(readArrayBuffer(resolve(modelsDir, 'stories260K.bin')));
const dir = mkdtempSync(join(tmpdir(), 'webgpu-tp-kquant-'));
test.afterAll(() => rmSync(dir, { recursive: true, force: true }));

function serve(h: Harness, name: string, bytes: Uint8Array): string {
  const path = join(dir, `${name}.gguf`);
  writeFileSync(path, bytes);
  return h.server.mountFile(`/files/kquant/${name}.gguf`, path);
}

async function oracle(bytes: Uint8Array, steps: number): Promise<number[]> {
  const { model } = await loadGgufDequantized(bytes);
  return generate(model, [1], steps, (l) => argmax(l, 512)).slice(1);
}

const base: Omit<PageGenerateOptions, 'model' | 'tp' | 'maxTokens'> = { prompt: '', temperature: 0, topP: 0.9, seed: 1, cache: false, ignoreEos: true };

async function each<T>(page: Page, fn: 'testQ8mMatmul' | 'testQ8mEmbed', cases: T[]): Promise<(Check & { chunks: number })[]> {
  return page.evaluate(
    async ([name, cs]) => {
      const f = window.tp.q8m[name] as (c: unknown) => Promise<Check & { chunks: number }>;
      const out: (Check & { chunks: number })[] = [];
      for (const c of cs) out.push(await f(c));
      return out;
    },
    [fn, cases] as const,
  );
}

function expectWithin(results: Check[], cases: unknown[]): void {
  const bad = results.map((r, i) => ({ r, c: cases[i] })).filter(({ r }) => !(r.worst <= 1));
  expect(bad, JSON.stringify(bad.slice(0, 5))).toEqual([]);
}

test.describe.configure({ mode: 'serial' });

test('q8_m matmul (gemv, gemm, fused inputs, split bindings) and embedding match the oracle for every type', async ({ harness }) => {
  const cases: Q8mMatmulCase[] = [];
  for (const type of ['Q4_K', 'Q5_K', 'Q6_K'] as const) {
    cases.push({ type, m: 1, k: 256, n: 33, input: 'rmsnorm', bias: true }, { type, m: 5, k: 512, n: 20, input: 'siluMul', accumulate: true });
  }
  for (const type of ['Q4_1', 'Q5_0', 'Q5_1'] as const) {
    cases.push({ type, m: 1, k: 96, n: 65, accumulate: true }, { type, m: 9, k: 64, n: 17, input: 'rmsnorm' });
  }
  cases.push({ type: 'Q6_K', m: 3, k: 256, n: 40, bindingLimit: 4096 });
  const r = await each(harness.page, 'testQ8mMatmul', cases);
  expectWithin(r, cases);
  expect(r.at(-1)!.chunks).toBeGreaterThan(1);
  const emb = [
    { type: 'Q6_K', vocab: 97, dim: 256, tokens: [96, 0, 50, 50] },
    { type: 'Q4_K', vocab: 40, dim: 512, tokens: [39, 1], bindingLimit: 8192 },
    { type: 'Q5_0', vocab: 30, dim: 64, tokens: [29, 3] },
  ];
  const e = await each(harness.page, 'testQ8mEmbed', emb);
  expectWithin(e, emb);
  expect(e[1]!.chunks).toBeGreaterThan(1);
});

test('a Q4_K_M-style GGUF (Q4_K, Q5_K, Q6_K attn_v, tied Q6_K embedding, Q8_0/Q4_0 fused beside them) at TP 1 and 2: the oracle\'s greedy tokens; auto puts it on a CPU rank', async ({ harness }) => {
  test.setTimeout(60_000);
  const bytes = encodeTypedGguf(kquantModel(), q4kmMix, tok);
  const url = serve(harness, 'q4_k_m', bytes);
  const steps = 32;
  const want = await oracle(bytes, steps);
  // A different model from its f32 form: the test must see the quantised values.
  expect(want).not.toEqual(generate(kquantModel(), [1], steps, (l) => argmax(l, 512)).slice(1));
  for (const tp of [1, 2]) {
    const r = await runGenerate(harness, { ...base, model: url, tp, maxTokens: steps });
    expect(r.tp).toBe(tp);
    expect(r.tokens, `TP ${tp}`).toEqual(want);
    for (const rs of r.stats.ranks) expect(rs.precision.weights).toBe('q8_m');
  }
  // `auto` on this machine's fallback adapter picks CPU ranks, which run q8_m too (kquant.wat)
  const auto = await runGenerate(harness, { ...base, model: url, tp: 1, devices: 'auto', maxTokens: 4 });
  expect(auto.tokens).toEqual(want.slice(0, 4));
  expect(auto.stats.ranks.map((x) => x.backend)).toEqual(['cpu']);
  // CPU ranks alone, but q8_m matrices beside the Q8_0/Q4_0 ones: f32 activations unless asked
  expect(auto.stats.placement?.activations).toBe('f32');
  // 6:2 heads would start rank 1 at column 384 of wo, inside a super-block: refused before loading
  const e = await runGenerate(harness, { ...base, model: url, tp: 2, split: [0.75, 0.25], maxTokens: 2 }).then(() => undefined, (x: unknown) => x as WebGpuTpError);
  expect(e?.code).toBe('PLAN');
  expect(e?.message).toMatch(/column 384 of wo, inside a K-quant super-block of 256 .*tensorParallel 1, 2\./);
});

test('stories260K as GGUF Q4_1, Q5_0 and Q5_1 (w2 F16): the oracle\'s greedy tokens on GPU ranks', async ({ harness }) => {
  test.setTimeout(60_000);
  const steps = 40;
  const runs: [GgmlType, number][] = [['Q4_1', 2], ['Q5_0', 1], ['Q5_1', 2]];
  for (const [type, tp] of runs) {
    const typeOf: TypeOf = allOf(type);
    const bytes = encodeTypedGguf(stories, typeOf, tok);
    const want = await oracle(bytes, steps);
    const r = await runGenerate(harness, { ...base, model: serve(harness, type, bytes), tp, maxTokens: steps });
    expect(r.tokens, `${type} TP ${tp}`).toEqual(want);
    for (const rs of r.stats.ranks) expect(rs.precision.weights).toBe('mixed'); // q8_m beside w2's f16
  }
});
