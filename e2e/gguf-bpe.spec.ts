import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test, expect } from './fixtures.js';
import { runGenerate } from '../src/cli/generate.js';
import type { Harness } from '../src/cli/browser.js';
import type { ModelConfig } from '../src/model/config.js';
import { loadGgufDequantized } from '../src/model/formats/gguf.js';
import { encodeGguf, ggufBpeKv } from '../src/model/formats/gguf-write.js';
import { HfTokenizer } from '../src/model/tokenizer/hf-tokenizer.js';
import { randomWeights, TINY_QWEN2 } from '../test-support/model/hf-testing.js';
import { bpeFixture } from '../test-support/model/gguf-bpe-fixture.js';
import { greedyDecided } from '../test-support/model/greedy-decided.js';

/**
 * GGUFs as people download them, written by this spec: a Llama 3.1-style file (byte-level BPE
 * "llama-bpe" tokenizer with a chat template, rope_freqs, no output.weight) and a Qwen2 one
 * (q/k/v biases, rotate_half rows, "qwen2" tokenizer). The prompt's tokens are the equivalent
 * tokenizer.json's; the generated ones are the oracle's on the weights the file holds, on GPU
 * and CPU ranks.
 */
const dir = mkdtempSync(join(tmpdir(), 'webgpu-tp-gguf-bpe-'));
test.afterAll(() => rmSync(dir, { recursive: true, force: true }));

const tok = bpeFixture(320);
const hfTok = new HfTokenizer(tok.json, tok.config);

/** Llama 3-like divisors for head size 16: frequencies 0–2 kept, 3 ramped, 4–7 slowed 8×. */
const FACTORS = [1, 1, 1, 4.45, 8, 8, 8, 8];
const LLAMA: ModelConfig = {
  dim: 64, hiddenDim: 128, nLayers: 2, nHeads: 4, nKvHeads: 2, vocabSize: 320, seqLen: 128, headSize: 16,
  sharedClassifier: true, normEps: 1e-5, ropeTheta: 1e4, ropeStyle: 'interleaved', ropeScaling: { type: 'factors', factors: FACTORS },
};
const llama = { config: LLAMA, weights: randomWeights(LLAMA, 21, 3) };
const qwen = { config: TINY_QWEN2, weights: randomWeights(TINY_QWEN2, 12, 3) };

function serve(h: Harness, name: string, bytes: Uint8Array): string {
  const path = join(dir, name);
  writeFileSync(path, bytes);
  return h.server.mountFile(`/files/gguf-bpe/${name}`, path);
}

const STEPS = 24;
const base = { maxTokens: STEPS, temperature: 0, topP: 0.9, seed: 1, ignoreEos: true, cache: false } as const;
const CPU = 'CPU (WebAssembly SIMD)';
/** TP 1 and 2 on the default (GPU) ranks, and TP 2 on CPU ranks. */
const RANKS = [[1, undefined], [2, undefined], [2, 'cpu']] as const;

test.describe.configure({ mode: 'serial' });

test('a Llama 3.1-style GGUF (BPE tokenizer, rope_freqs, tied output) at TP 1 and 2, GPU and CPU ranks: tokenizer.json\'s prompt tokens, the oracle\'s greedy tokens', async ({ harness }) => {
  const bytes = encodeGguf(llama, 'f32', ggufBpeKv(tok.gguf));
  const { model } = await loadGgufDequantized(bytes);
  expect(model.config.ropeScaling).toEqual({ type: 'factors', factors: FACTORS.map(Math.fround) });
  const url = serve(harness, 'llama31.gguf', bytes);
  const prompt = 'hello world 🙂 世界';
  const ids = hfTok.encode(prompt, true);
  expect(ids[0]).toBe(tok.id('<|begin_of_text|>'));
  const want = greedyDecided(model, ids, STEPS);
  expect(want.decided).toBeGreaterThanOrEqual(8);
  // the divisors change the continuation: a file whose rope_freqs were dropped would fail here
  const unscaled = greedyDecided({ ...model, config: { ...LLAMA, ropeScaling: undefined } }, ids, STEPS);
  expect(unscaled.tokens.slice(0, want.decided)).not.toEqual(want.tokens.slice(0, want.decided));
  for (const [tp, devices] of RANKS) {
    const r = await runGenerate(harness, { ...base, model: url, tp, prompt, ...(devices ? { devices } : {}) });
    expect(r.prompt_tokens).toEqual(ids);
    expect(r.tokens.slice(0, want.decided), `TP ${tp} ${devices ?? 'gpu'}`).toEqual(want.tokens.slice(0, want.decided));
    expect(r.stats.ranks.map((x) => x.adapter === CPU)).toEqual(Array(tp).fill(devices === 'cpu'));
  }
});

test('generation stops on the GGUF\'s EOS and on its EOT (<|eot_id|>), each an end-of-generation id', async ({ harness }) => {
  const bytes = encodeGguf(llama, 'f32', ggufBpeKv(tok.gguf));
  const { model } = await loadGgufDequantized(bytes);
  const url = serve(harness, 'llama31-stop.gguf', bytes);
  // prompts whose greedy continuations (top-two margins ≥ 0.14) reach each stop id within a few tokens
  for (const [prompt, stop] of [['6', '<|end_of_text|>'], [';', '<|eot_id|>']] as const) {
    const ids = hfTok.encode(prompt, true);
    const want = greedyDecided(model, ids, STEPS, 0.1);
    const at = want.tokens.indexOf(tok.id(stop));
    expect(at, prompt).toBeGreaterThan(0);
    expect(at).toBeLessThanOrEqual(want.decided);
    const r = await runGenerate(harness, { ...base, ignoreEos: false, model: url, tp: 1, prompt });
    expect(r.tokens, prompt).toEqual(want.tokens.slice(0, at));
  }
});

test('a Qwen2 GGUF (q/k/v biases, qwen2 pre-tokenizer) chats through tokenizer.chat_template at TP 1 and 2, GPU and CPU ranks: the oracle\'s greedy tokens', async ({ harness }) => {
  const bytes = encodeGguf(qwen, 'f32', ggufBpeKv(bpeFixture(320, 'qwen2').gguf));
  const { model } = await loadGgufDequantized(bytes);
  expect(model.config).toMatchObject({ qkvBias: true, ropeStyle: 'rotate_half', sharedClassifier: true });
  const url = serve(harness, 'qwen2.gguf', bytes);
  const content = 'Say hello 世界 🙂';
  const ids = hfTok.encode(hfTok.applyChatTemplate([{ role: 'user', content }]), false);
  const want = greedyDecided(model, ids, STEPS);
  expect(want.decided).toBeGreaterThanOrEqual(8);
  for (const [tp, devices] of RANKS) {
    const r = await runGenerate(harness, { ...base, model: url, tp, prompt: content, chat: true, ...(devices ? { devices } : {}) });
    expect(r.prompt_tokens).toEqual(ids);
    expect(r.tokens.slice(0, want.decided), `TP ${tp} ${devices ?? 'gpu'}`).toEqual(want.tokens.slice(0, want.decided));
    expect(r.stats.ranks.map((x) => x.adapter === CPU)).toEqual(Array(tp).fill(devices === 'cpu'));
  }
});

test('a GGUF whose tokenizer.ggml.pre is not supported fails to load with a TokenizerFormatError naming the field', async ({ harness }) => {
  const url = serve(harness, 'gpt2-pre.gguf', encodeGguf(llama, 'f32', ggufBpeKv({ ...tok.gguf, pre: 'gpt-2' })));
  const r = await harness.page.evaluate((o) => window.tp.engine.load(o), { ...base, model: url, tp: 1, prompt: '' });
  expect('error' in r ? r.error : null).toMatchObject({ name: 'TokenizerFormatError', message: expect.stringMatching(/tokenizer\.ggml\.pre is "gpt-2"; webgpu-tp reads "llama-bpe", "qwen2", "smollm", "default"/) });
});
