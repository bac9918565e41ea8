/**
 * Quantised prefill on CPU ranks (issue 23): stories260K as GGUF Q8_0 and Q4_0 (its MLP cut to
 * 128 wide, so that w2 too is whole groups of 32 at TP 2 and every matrix is quantised), a prompt of 128
 * tokens or more prefilled in chunks of 64 rows, which the ranks multiply with the quantised GEMM
 * (src/cpu/qgemm.ts), must give the greedy tokens of the same prompt fed one token a step (the
 * small-m kernels), weight-only and with int8 activations, at TP 1 and 2. With int8 activations
 * the GEMM's sums are the small-m kernel's bit for bit; weight-only they round otherwise, so the
 * oracle's top-2 margin at every generated step is checked first and its tokens are matched too.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { test, expect } from './fixtures.js';
import { runGenerate } from '../src/cli/generate.js';
import type { PageGenerateOptions } from '../src/cli/page/types.js';
import { loadLlama2c } from '../src/model/formats/llama2c.js';
import { loadGgufDequantized } from '../src/model/formats/gguf.js';
import { encodeGguf, type GgufQuant } from '../src/model/formats/gguf-write.js';
import { Tokenizer } from '../src/model/tokenizer/tokenizer.js';
import { createRunState, forward, generateLoop, type ReferenceModel } from '../src/model/reference.js';
import { modelsDir, readArrayBuffer } from '../test-support/fixtures/paths.js';

const PROMPT = 'Tom had a small boat. Every morning he took it to the lake with his sister Sue. They liked to look at the fish '
  + 'and the ducks. One day the wind was very strong and the boat went far from the shore. Sue was scared, but Tom held '
  + 'her hand and said they would be fine. He rowed and rowed until they were back. Their dad was waiting with a big '
  + 'smile and warm bread. That night, Sue told Tom';
const TOKENS = 16;

test.describe.configure({ mode: 'serial' });

const HIDDEN = 128;

/** stories260K with only its first HIDDEN MLP channels (w1's and w3's rows, w2's columns). */
function narrowMlp(m: ReferenceModel): ReferenceModel {
  const { dim, hiddenDim: h, nLayers } = m.config;
  const rows = (w: Float32Array) => Float32Array.from({ length: nLayers * HIDDEN * dim }, (_, i) => {
    const [l, j] = [Math.floor(i / (HIDDEN * dim)), i % (HIDDEN * dim)];
    return w[l * h * dim + j]!;
  });
  const w2 = Float32Array.from({ length: nLayers * dim * HIDDEN }, (_, i) => {
    const [r, c] = [Math.floor(i / HIDDEN), i % HIDDEN];
    return m.weights.w2[r * h + c]!;
  });
  return { ...m, config: { ...m.config, hiddenDim: HIDDEN }, weights: { ...m.weights, w1: rows(m.weights.w1), w3: rows(m.weights.w3), w2 } };
}

const stories = narrowMlp(loadLlama2c(readArrayBuffer(resolve(modelsDir, 'stories260K.bin'))));
const tok = Tokenizer.parse(readFileSync(resolve(modelsDir, 'tok512.bin')), 512);
const dir = mkdtempSync(join(tmpdir(), 'webgpu-tp-cpu-prefill-quant-'));
test.afterAll(() => rmSync(dir, { recursive: true, force: true }));

for (const quant of ['q8_0', 'q4_0'] as const satisfies readonly GgufQuant[]) {
  test(`a 128-token prompt prefilled through the quantised GEMM on CPU ranks (${quant.toUpperCase()}, TP 1 and 2, weight-only and int8) gives the tokens of one token a step`, async ({ harness }) => {
    test.setTimeout(120_000);
    const bytes = encodeGguf(stories, quant, tok);
    const path = join(dir, `stories260K-${quant}.gguf`);
    writeFileSync(path, bytes);
    const url = harness.server.mountFile(`/files/cpu-prefill-quant/stories260K-${quant}.gguf`, path);
    const { layout, model: f32 } = await loadGgufDequantized(bytes);
    expect(layout.tensors.filter((t) => t.name.includes('layers.')).map((t) => t.dtype)).not.toContain('f16');
    for (const int8Activations of [false, true]) {
      for (const tp of [1, 2]) {
        const what = `${quant} TP ${tp} ${int8Activations ? 'int8' : 'weight-only'}`;
        const base: PageGenerateOptions = { model: url, tp, devices: 'cpu', prompt: PROMPT, maxTokens: TOKENS, temperature: 0, topP: 0.9, seed: 1, cache: false, int8Activations };
        const chunked = await runGenerate(harness, base);
        expect(chunked.prompt_tokens.length, what).toBeGreaterThanOrEqual(128);
        const stepped = await runGenerate(harness, { ...base, noPrefillBatch: true });
        expect(stepped.prompt_tokens, what).toEqual(chunked.prompt_tokens);
        expect(chunked.tokens, what).toHaveLength(TOKENS);
        expect(chunked.tokens, what).toEqual(stepped.tokens);
        if (int8Activations) continue;
        // Weight-only: the f32 oracle on the dequantised weights, with room between its top two.
        const p = chunked.prompt_tokens;
        const s = createRunState(f32.config);
        let margin = Infinity;
        const pick = (l: Float32Array): number => {
          const order = Array.from(l.keys()).sort((a, b) => l[b]! - l[a]!);
          margin = Math.min(margin, l[order[0]!]! - l[order[1]!]!);
          return order[0]!;
        };
        const want = generateLoop(f32.config.seqLen, p, p.length + TOKENS - 1, (t, pos) => forward(f32, s, t, pos), pick).slice(p.length);
        expect(margin, what).toBeGreaterThan(1e-3);
        expect(chunked.tokens, what).toEqual(want);
      }
    }
  });
}
