import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Page } from '@playwright/test';
import { test, expect } from './fixtures.js';
import { runGenerate } from '../src/cli/generate.js';
import type { F16Check, F16MatmulCase } from '../test-support/page/kernels-f16.js';
import { loadLlama2c } from '../src/model/formats/llama2c.js';
import { loadGgufDequantized } from '../src/model/formats/gguf.js';
import { encodeGguf } from '../src/model/formats/gguf-write.js';
import { Tokenizer } from '../src/model/tokenizer/tokenizer.js';
import { argmax, generate } from '../src/model/reference.js';
import { modelsDir, readArrayBuffer } from '../test-support/fixtures/paths.js';
import { makePlan, rankWeightBytes } from '../src/parallel/plan.js';

/**
 * f16 weights (GGUF F16 matrices kept in f16 on the GPU). SwiftShader has no shader-f16, so what
 * runs here is the packed path (halves unpacked from u32 words), and every result says so; the
 * native variants' WGSL is validated in src/gpu/f16-kernels.test.ts. The kernels against the f32
 * oracle on the f16-rounded weights, then the engine on stories260K written as GGUF F16.
 */
async function each<T>(page: Page, fn: 'testF16Matmul' | 'testF16Embed', cases: T[]): Promise<F16Check[]> {
  return page.evaluate(
    async ([name, cs]) => {
      const f = window.tp.f16[name] as (c: unknown) => Promise<unknown>;
      const out: unknown[] = [];
      for (const c of cs) out.push(await f(c));
      return out;
    },
    [fn, cases] as const,
  ) as Promise<F16Check[]>;
}

function expectWithin(results: F16Check[], cases: unknown[]): void {
  const bad = results.map((r, i) => ({ r, c: cases[i] })).filter(({ r }) => !(r.worst <= 1));
  expect(bad, JSON.stringify(bad.slice(0, 5))).toEqual([]);
  // the gate: no shader-f16 on SwiftShader, so the packed kernels ran
  for (const r of results) expect([r.shaderF16, r.kernels]).toEqual([false, 'packed']);
}

test.describe.configure({ mode: 'serial' });

test('f16 matmul: gemv and gemm, fused inputs, bias, accumulate, rows not a multiple of 4; and split across bindings', async ({ harness }) => {
  const cases: F16MatmulCase[] = [];
  for (const input of ['plain', 'rmsnorm', 'siluMul'] as const) {
    // k = 86: w2's columns per rank at TP 2 (hidden 172), padded to 88 halves a row
    for (const k of [6, 86, 256]) {
      cases.push({ m: 1, k, n: 65, input, bias: true }, { m: 1, k, n: 3, input, accumulate: true });
      cases.push({ m: 17, k, n: 33, input, accumulate: true }, { m: 3, k, n: 130, input, bias: true });
    }
  }
  const split: F16MatmulCase[] = [{ m: 1, k: 64, n: 97, bindingLimit: 512 }, { m: 5, k: 86, n: 97, input: 'rmsnorm', bindingLimit: 512 }];
  const all = [...cases, ...split];
  const r = await each(harness.page, 'testF16Matmul', all);
  expectWithin(r, all);
  for (const x of r.slice(cases.length)) expect(x.chunks).toBeGreaterThan(1);
});

test('f16 embedding: exactly the halves, one binding or split across several', async ({ harness }) => {
  const emb = [{ vocab: 512, dim: 64, tokens: [0, 511, 7, 7, 300] }, { vocab: 97, dim: 86, tokens: [96, 0, 50], bindingLimit: 512 }];
  const e = await each(harness.page, 'testF16Embed', emb);
  expectWithin(e, emb);
  expect(e[1]!.chunks).toBeGreaterThan(1);
});

const stories = loadLlama2c(readArrayBuffer(resolve(modelsDir, 'stories260K.bin')));
const tok = Tokenizer.parse(readFileSync(resolve(modelsDir, 'tok512.bin')), 512);
const dir = mkdtempSync(join(tmpdir(), 'webgpu-tp-f16-'));
test.afterAll(() => rmSync(dir, { recursive: true, force: true }));

test('stories260K as GGUF F16 at TP 1 and 2: the oracle\'s greedy tokens on the f16-rounded weights; stats say f16 weights, packed kernels, half the bytes', async ({ harness }) => {
  test.setTimeout(180_000);
  const bytes = encodeGguf(stories, 'f16', tok);
  const path = join(dir, 'stories260K-f16.gguf');
  writeFileSync(path, bytes);
  const url = harness.server.mountFile('/files/f16/stories260K-f16.gguf', path);
  const { layout, model } = await loadGgufDequantized(bytes);
  // TP 1 decodes from BOS (gemv); TP 2 first prefills a prompt (gemm), its w2 rows of 86 halves.
  for (const [tp, prompt] of [[1, ''], [2, 'Once upon a time, Lily']] as const) {
    const r = await runGenerate(harness, { model: url, tp, prompt, maxTokens: 60, temperature: 0, topP: 0.9, seed: 1, cache: false });
    const p = r.prompt_tokens;
    const want = generate(model, p, p.length + 59, (l) => argmax(l, 512)).slice(p.length);
    expect(r.tokens, `TP ${tp}`).toEqual(want);
    const plan = makePlan(layout.config, { tensorParallel: tp }, layout.tensors);
    expect(r.stats.ranks.length).toBe(tp);
    for (const rs of r.stats.ranks) {
      expect(rs.precision).toMatchObject({ weights: 'f16', math: 'f32', f16Kernels: 'packed', kvCache: 'f32' });
      // every matrix 2 bytes a value, the norms f32: just over half the f32 figure
      const f32 = rankWeightBytes(layout.config, plan.ranks[rs.rank]!);
      expect(rs.weightBytes / f32).toBeGreaterThan(0.5);
      expect(rs.weightBytes / f32).toBeLessThan(0.51);
    }
  }
});
