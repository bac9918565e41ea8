/**
 * f16 weights on CPU ranks (issue 22): stories260K written as GGUF F16, as e2e/f16.spec.ts
 * writes it, must give the oracle's greedy tokens on the same halves (the f16-rounded weights,
 * widened to f32) at CPU TP 1, 2 and 4, and beside a SwiftShader rank; each CPU rank holds its
 * matrices as halves.
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

const CPU = 'CPU (WebAssembly SIMD)';

test.describe.configure({ mode: 'serial' });

const dir = mkdtempSync(join(tmpdir(), 'webgpu-tp-cpu-f16-'));
test.afterAll(() => rmSync(dir, { recursive: true, force: true }));

test('stories260K as GGUF F16 on CPU ranks at TP 1, 2 and 4, and a SwiftShader rank beside a CPU rank: the oracle\'s greedy tokens on the same halves', async ({ harness }) => {
  test.setTimeout(120_000);
  const stories = loadLlama2c(readArrayBuffer(resolve(modelsDir, 'stories260K.bin')));
  const tok = Tokenizer.parse(readFileSync(resolve(modelsDir, 'tok512.bin')), 512);
  const bytes = encodeGguf(stories, 'f16', tok);
  const path = join(dir, 'stories260K-f16.gguf');
  writeFileSync(path, bytes);
  const url = harness.server.mountFile('/files/cpu-f16/stories260K-f16.gguf', path);
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
