/**
 * GGUF Q8_0 and Q4_0 on CPU ranks (issue 23 item 1): stories260K written as each, decoded on
 * CPU ranks at TP 1 (from BOS: the gemv) and TP 2 (after a prompt: the small-m kernels too),
 * weight-only and with int8 activations, must give the oracle's greedy tokens: the f32 oracle
 * on the dequantised weights, and the int8 oracle (runq.c's W8A8 arithmetic, split as the ranks
 * split the row-parallel matmuls) for int8 activations, which CPU ranks alone run by default.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { test, expect } from './fixtures.js';
import { runGenerate } from '../src/cli/generate.js';
import { loadLlama2c } from '../src/model/formats/llama2c.js';
import { loadGgufDequantized } from '../src/model/formats/gguf.js';
import { encodeGguf, type GgufQuant } from '../src/model/formats/gguf-write.js';
import { Tokenizer } from '../src/model/tokenizer/tokenizer.js';
import { argmax, generate } from '../src/model/reference.js';
import { generateInt8, loadGgufInt8 } from '../src/model/reference-int8.js';
import { makePlan } from '../src/parallel/plan.js';
import { modelsDir, readArrayBuffer } from '../test-support/fixtures/paths.js';

const CPU = 'CPU (WebAssembly SIMD)';

test.describe.configure({ mode: 'serial' });

const stories = loadLlama2c(readArrayBuffer(resolve(modelsDir, 'stories260K.bin')));
const tok = Tokenizer.parse(readFileSync(resolve(modelsDir, 'tok512.bin')), 512);
const dir = mkdtempSync(join(tmpdir(), 'webgpu-tp-cpu-quant-'));
test.afterAll(() => rmSync(dir, { recursive: true, force: true }));

for (const quant of ['q8_0', 'q4_0'] as const satisfies readonly GgufQuant[]) {
  test(`stories260K as GGUF ${quant.toUpperCase()} on CPU ranks at TP 1 and 2, weight-only and int8: the oracle's greedy tokens`, async ({ harness }) => {
    test.setTimeout(120_000);
    const bytes = encodeGguf(stories, quant, tok);
    const path = join(dir, `stories260K-${quant}.gguf`);
    writeFileSync(path, bytes);
    const url = harness.server.mountFile(`/files/cpu-quant/stories260K-${quant}.gguf`, path);
    const { layout, model: f32 } = await loadGgufDequantized(bytes);
    const int8Model = await loadGgufInt8(bytes);
    const c = layout.config;
    const pick = (l: Float32Array) => argmax(l, c.vocabSize);
    const seen: Record<string, number[]> = {};
    for (const int8 of [false, true]) {
      // Q4_0's int8 runs take the default of CPU ranks alone (the option unset), Q8_0's ask for it.
      const int8Activations = int8 ? (quant === 'q4_0' ? undefined : true) : false;
      // TP 1 long enough for Q4_0's int8 tokens to part from weight-only's (e2e/w4a8.spec.ts: within 100).
      for (const [tp, prompt, tokens] of [[1, '', 100], [2, 'Once upon a time, Lily', 40]] as const) {
        const what = `${quant} TP ${tp} ${int8 ? 'int8' : 'weight-only'}${int8Activations === undefined ? ' (default)' : ''}`;
        const r = await runGenerate(harness, {
          model: url, tp, devices: 'cpu', prompt, maxTokens: tokens, temperature: 0, topP: 0.9, seed: 1, cache: false, int8Activations,
        });
        const p = r.prompt_tokens;
        const ranks = makePlan(c, { tensorParallel: tp }, layout.tensors).ranks;
        const split = tp === 1 ? undefined : {
          wo: [0, ...ranks.map((x) => x.heads[1] * c.headSize)],
          w2: [0, ...ranks.map((x) => x.hidden[1])],
        };
        const want = (int8
          ? generateInt8(int8Model, p, p.length + tokens - 1, pick, split)
          : generate(f32, p, p.length + tokens - 1, pick)).slice(p.length);
        expect(r.tokens, what).toEqual(want);
        expect(r.stats.ranks.map((x) => x.adapter), what).toEqual(Array(tp).fill(CPU));
        expect(r.stats.placement?.activations, what).toBe(int8 ? 'int8' : 'f32');
        // w2's 172 columns are no whole groups of 32, so the file keeps it f16 beside the quantised matrices.
        expect(layout.tensors.find((t) => t.name === 'layers.0.feed_forward.w2')!.dtype).toBe('f16');
        expect(layout.tensors.find((t) => t.name === 'layers.0.attention.wq')!.dtype).toBe(quant);
        for (const rs of r.stats.ranks) expect(rs.precision.weights, what).toBe('mixed');
        seen[what] = want;
      }
    }
    // Not vacuous: Q4_0's int8 activations take other tokens than weight-only (Q8_0's do not on
    // this model; reference-int8.test.ts checks that its logits differ).
    if (quant === 'q4_0') expect(seen['q4_0 TP 1 int8 (default)']).not.toEqual(seen['q4_0 TP 1 weight-only']);
  });
}
