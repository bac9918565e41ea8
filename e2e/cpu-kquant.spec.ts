/**
 * GGUF K-quants on CPU ranks (issue 25 item 1): a stories110M-shaped Llama (dim 768, hidden 2048:
 * rows of whole super-blocks; two layers, a tied 512-token vocabulary) written as a Q4_K_M-style
 * mix, and a one-layer model as pure Q5_K and as pure Q6_K, decoded on CPU ranks, must give the
 * oracle's greedy tokens: the f32 oracle on ggml's dequantised weights for weight-only, the int8
 * oracle (reference-q8m.ts's sums) for int8 activations. At two ranks an uneven 8:4 head split
 * keeps wo's super-blocks whole and gives the same tokens; the even 6:6 split is a PlanError
 * naming the degrees that work; `auto` takes CPU ranks for it where it would for any model.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { test, expect } from './fixtures.js';
import { runGenerate } from '../src/cli/generate.js';
import type { Harness } from '../src/cli/browser.js';
import type { PageGenerateOptions } from '../src/cli/page/types.js';
import type { WebGpuTpError } from '../src/errors.js';
import { loadGgufDequantized } from '../src/model/formats/gguf.js';
import { Tokenizer } from '../src/model/tokenizer/tokenizer.js';
import { argmax } from '../src/model/reference.js';
import { generateInt8, loadGgufInt8 } from '../src/model/reference-int8.js';
import { modelsDir } from '../test-support/fixtures/paths.js';
import { greedyDecided } from '../test-support/model/greedy-decided.js';
import { KQUANT_CONFIG, allOf, encodeTypedGguf, kquantModel, q4kmMix, type TypeOf } from '../test-support/model/kquant-gguf.js';

const CPU = 'CPU (WebAssembly SIMD)';
const STEPS = 24;
const tok = Tokenizer.parse(readFileSync(resolve(modelsDir, 'tok512.bin')), 512);
const SHAPE = { ...KQUANT_CONFIG, dim: 768, hiddenDim: 2048, nHeads: 12, nKvHeads: 12 };
// Seed 7 gives the mix tokens whose top-two margins all exceed 1e-3. The pure files are one layer
// (ggml's reference quantiser takes seconds per layer in JS), and seed 8 decides their tokens too.
// Made when a test runs, not when Playwright collects the file in every process.
const model = () => kquantModel(SHAPE, 7);
const oneLayer = () => kquantModel({ ...SHAPE, nLayers: 1 }, 8);
const dir = mkdtempSync(join(tmpdir(), 'webgpu-tp-cpu-kquant-'));
test.afterAll(() => rmSync(dir, { recursive: true, force: true }));

const base: Omit<PageGenerateOptions, 'model' | 'tp'> = {
  devices: 'cpu', prompt: '', maxTokens: STEPS, temperature: 0, topP: 0.9, seed: 1, cache: false, ignoreEos: true,
};

function serve(h: Harness, name: string, bytes: Uint8Array): string {
  const path = join(dir, `${name}.gguf`);
  writeFileSync(path, bytes);
  return h.server.mountFile(`/files/cpu-kquant/${name}.gguf`, path);
}

/** The file, its URL and the oracle's greedy tokens from BOS (every one decided by more than 1e-3). */
async function kquantFile(h: Harness, name: string, typeOf: TypeOf, m = model): Promise<{ bytes: Uint8Array; url: string; want: number[] }> {
  const bytes = encodeTypedGguf(m(), typeOf, tok);
  const { model: deq } = await loadGgufDequantized(bytes);
  const { tokens, decided } = greedyDecided(deq, [1], STEPS);
  expect(decided, `${name}: the oracle's margins`).toBe(STEPS);
  return { bytes, url: serve(h, name, bytes), want: tokens };
}

test.describe.configure({ mode: 'serial' });

test('a stories110M-shaped Q4_K_M-style mix on CPU ranks: the oracle\'s greedy tokens at TP 1 (weight-only and int8) and at TP 2 split 8:4; 6:6 is a PlanError', async ({ harness }) => {
  test.setTimeout(90_000);
  const { bytes, url, want } = await kquantFile(harness, 'q4_k_m', q4kmMix);
  const r1 = await runGenerate(harness, { ...base, model: url, tp: 1 });
  expect(r1.tokens, 'TP 1 weight-only').toEqual(want);
  expect(r1.stats.ranks.map((x) => [x.adapter, x.precision.weights])).toEqual([[CPU, 'q8_m']]);
  const r2 = await runGenerate(harness, { ...base, model: url, tp: 2, split: [0.6667, 0.3333] });
  expect(r2.tokens, 'TP 2, 8:4').toEqual(want);
  expect(r2.stats.ranks.map((x) => x.adapter)).toEqual([CPU, CPU]);
  const e = await runGenerate(harness, { ...base, model: url, tp: 2, maxTokens: 2 }).then(() => undefined, (x: unknown) => x as WebGpuTpError);
  expect(e?.code).toBe('PLAN');
  expect(e?.message).toMatch(/column 384 of wo, inside a K-quant super-block of 256 .*tensorParallel 1, 3\./);
  // int8 activations: the int8 oracle's tokens, which are not weight-only's
  const int8 = await loadGgufInt8(bytes);
  const want8 = generateInt8(int8, [1], STEPS, (l) => argmax(l, 512)).slice(1);
  expect(want8).not.toEqual(want);
  const r8 = await runGenerate(harness, { ...base, model: url, tp: 1, int8Activations: true });
  expect(r8.tokens, 'TP 1 int8').toEqual(want8);
  // auto no longer sends q8_m to GPU ranks by rule: on this machine's fallback adapter it takes a CPU rank.
  const auto = await runGenerate(harness, { ...base, model: url, tp: 1, devices: 'auto', maxTokens: 4 });
  expect(auto.tokens).toEqual(want.slice(0, 4));
  expect(auto.stats.ranks.map((x) => x.backend)).toEqual(['cpu']);
});

test('pure Q5_K and pure Q6_K stories110M-shaped files (one layer) on CPU ranks: the oracle\'s greedy tokens', async ({ harness }) => {
  test.setTimeout(60_000);
  for (const type of ['Q5_K', 'Q6_K'] as const) {
    const { url, want } = await kquantFile(harness, type, allOf(type), oneLayer);
    const r = await runGenerate(harness, { ...base, model: url, tp: 1 });
    expect(r.tokens, type).toEqual(want);
    expect(r.stats.ranks.map((x) => x.precision.weights)).toEqual(['q8_m']);
  }
});
