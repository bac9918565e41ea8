/**
 * f16 weights on CPU ranks (issue 22): stories260K written as GGUF F16, as e2e/f16.spec.ts
 * writes it, must give the oracle's greedy tokens on the same halves (the f16-rounded weights,
 * widened to f32) at CPU TP 1, 2 and 4, and beside a SwiftShader rank; each CPU rank holds its
 * matrices as halves. A prompt of 128+ tokens prefilled in chunks of 64 rows (the GEMM on f16
 * panels, issue 23) must give the bits of one token a step: the same tokens and log-probabilities.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { test, expect } from './fixtures.js';
import { runGenerate } from '../src/cli/generate.js';
import { loadLlama2c } from '../src/model/formats/llama2c.js';
import { loadGgufDequantized } from '../src/model/formats/gguf.js';
import { encodeGguf } from '../src/model/formats/gguf-write.js';
import { Tokenizer } from '../src/model/tokenizer/tokenizer.js';
import { argmax, generate } from '../src/model/reference.js';
import { modelsDir, readArrayBuffer } from '../test-support/fixtures/paths.js';
import { makePlan, rankWeightBytes } from '../src/parallel/plan.js';
import type { DevicesOption } from '../src/engine/placement.js';
import type { Harness } from '../src/cli/browser.js';
import type { PageGenerateOptions } from '../src/cli/page/types.js';
import type { GenerateChunk } from '../src/engine/types.js';
import { generateChunks, LONG_PROMPT } from './page-api.js';

const CPU = 'CPU (WebAssembly SIMD)';

test.describe.configure({ mode: 'serial' });

const dir = mkdtempSync(join(tmpdir(), 'webgpu-tp-cpu-f16-'));
test.afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** stories260K as GGUF F16 (written once), mounted on h's server: its bytes and URL. */
let gguf: Uint8Array | undefined;
function f16Model(h: Harness): { bytes: Uint8Array; url: string } {
  const path = join(dir, 'stories260K-f16.gguf');
  if (!gguf) {
    const stories = loadLlama2c(readArrayBuffer(resolve(modelsDir, 'stories260K.bin')));
    const tok = Tokenizer.parse(readFileSync(resolve(modelsDir, 'tok512.bin')), 512);
    gguf = encodeGguf(stories, 'f16', tok);
    writeFileSync(path, gguf);
  }
  return { bytes: gguf, url: h.server.mountFile('/files/cpu-f16/stories260K-f16.gguf', path) };
}

test('stories260K as GGUF F16 on CPU ranks at TP 1, 2 and 4, and a SwiftShader rank beside a CPU rank: the oracle\'s greedy tokens on the same halves', async ({ harness }) => {
  test.setTimeout(120_000);
  const { bytes, url } = f16Model(harness);
  const { layout, model } = await loadGgufDequantized(bytes);
  // TP 1 decodes from BOS (the gemv); TP 2 and 4 first prefill a prompt (the small-m kernel),
  // and at TP 4 w2's 172 columns split in pairs of halves as 44/44/42/42.
  const runs: { tp: number; devices: DevicesOption; prompt: string; adapters: string[] }[] = [
    { tp: 1, devices: 'cpu', prompt: '', adapters: [CPU] },
    { tp: 2, devices: 'cpu', prompt: 'Once upon a time, Lily', adapters: [CPU, CPU] },
    { tp: 4, devices: 'cpu', prompt: 'Once upon a time, Lily', adapters: [CPU, CPU, CPU, CPU] },
    { tp: 2, devices: [{ forceFallbackAdapter: true }, { cpu: true }], prompt: 'Tom had a red ball', adapters: ['swiftshader', CPU] },
  ];
  for (const run of runs) {
    const what = `TP ${run.tp} on ${run.adapters.join(' + ')}`;
    const r = await runGenerate(harness, { model: url, tp: run.tp, devices: run.devices, prompt: run.prompt, maxTokens: 60, temperature: 0, topP: 0.9, seed: 1, cache: false });
    const p = r.prompt_tokens;
    const want = generate(model, p, p.length + 59, (l) => argmax(l, 512)).slice(p.length);
    expect(r.tokens, what).toEqual(want);
    expect(r.stats.ranks.map((x) => x.adapter), what).toEqual(run.adapters);
    const plan = makePlan(layout.config, { tensorParallel: run.tp }, layout.tensors);
    for (const rs of r.stats.ranks) {
      expect(rs.precision, what).toMatchObject({ weights: 'f16', math: 'f32', kvCache: 'f32' });
      // every matrix 2 bytes a value, the norms f32: just over half the f32 figure
      const f32 = rankWeightBytes(layout.config, plan.ranks[rs.rank]!);
      expect(rs.weightBytes / f32, what).toBeGreaterThan(0.5);
      expect(rs.weightBytes / f32, what).toBeLessThan(0.51);
    }
  }
});

for (const tp of [1, 2]) {
  test(`GGUF F16 on ${tp} CPU rank${tp === 1 ? '' : 's'}: a 128-token prompt prefilled through the GEMM gives one token a step's tokens and log-probabilities, bit for bit`, async ({ harness }) => {
    test.setTimeout(120_000);
    const { url } = f16Model(harness);
    const o: PageGenerateOptions = { model: url, tp, devices: 'cpu', prompt: LONG_PROMPT, maxTokens: 16, temperature: 0, topP: 1, seed: 1, cache: false };
    const opts = { maxTokens: 16, temperature: 0, topLogprobs: 5, ignoreEos: true };
    const chunked = await generateChunks(harness, o, LONG_PROMPT, opts);
    expect(chunked.promptTokens.length).toBeGreaterThanOrEqual(128);
    const stepped = await generateChunks(harness, { ...o, noPrefillBatch: true }, LONG_PROMPT, opts);
    expect(stepped.promptTokens).toEqual(chunked.promptTokens);
    const steps = chunked.chunks.filter((c) => !c.done);
    expect(steps).toHaveLength(16);
    const view = (cs: GenerateChunk[]) => cs.filter((c) => !c.done).map((c) => ({ token: c.token, logprobs: c.logprobs }));
    expect(view(stepped.chunks)).toEqual(view(chunked.chunks));
    expect(steps.every((c) => c.logprobs!.top.length === 5)).toBe(true);
  });
}
