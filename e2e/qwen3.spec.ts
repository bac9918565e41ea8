import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test, expect } from './fixtures.js';
import { runGenerate } from '../src/cli/generate.js';
import type { Harness } from '../src/cli/browser.js';
import { loadGgufDequantized } from '../src/model/formats/gguf.js';
import { encodeGguf, ggufBpeKv } from '../src/model/formats/gguf-write.js';
import { HfTokenizer } from '../src/model/tokenizer/hf-tokenizer.js';
import { exportHf } from '../test-support/model/hf-export.js';
import { randomWeights, TINY_QWEN3 } from '../test-support/model/hf-testing.js';
import { bpeFixture } from '../test-support/model/gguf-bpe-fixture.js';
import { greedyDecided } from '../test-support/model/greedy-decided.js';
import type { QkNormCase } from '../test-support/page/kernels-qk-norm.js';

/**
 * Qwen3 (per-head q/k RMSNorm before RoPE, head_dim 24 ≠ dim/heads) as a GGUF and as Hugging
 * Face safetensors, both written here from one random model: GPU ranks at TP 1 and 2 and CPU
 * ranks at TP 2 give the CPU oracle's greedy tokens. Before that, the q/k norm kernel alone
 * against the oracle on odd sizes.
 */
const dir = mkdtempSync(join(tmpdir(), 'webgpu-tp-qwen3-'));
test.afterAll(() => rmSync(dir, { recursive: true, force: true }));

const tok = bpeFixture(TINY_QWEN3.vocabSize, 'qwen2');
const hfTok = new HfTokenizer(tok.json, tok.config);
const qwen3 = { config: TINY_QWEN3, weights: randomWeights(TINY_QWEN3, 33, 3) };

function serve(h: Harness, name: string, bytes: Uint8Array): string {
  const path = join(dir, name);
  writeFileSync(path, bytes);
  return h.server.mountFile(`/files/qwen3/${name}`, path);
}

const STEPS = 20;
const base = { maxTokens: STEPS, temperature: 0, topP: 0.9, seed: 1, ignoreEos: true, cache: false, chat: true } as const;
const CPU = 'CPU (WebAssembly SIMD)';
/** TP 1 and 2 on the default (GPU) ranks, and TP 2 on CPU ranks. */
const RANKS = [[1, undefined], [2, undefined], [2, 'cpu']] as const;

test.describe.configure({ mode: 'serial' });

test('the q/k norm kernel on odd sizes (head 13, 7, 1; GQA; q off the row start; v and slack after k): the oracle per head, the rest untouched', async ({ harness }) => {
  const cases: QkNormCase[] = [
    { m: 1, nHeads: 3, nKv: 1, headSize: 13, slack: 26 },
    { m: 5, nHeads: 5, nKv: 2, headSize: 7, slack: 3, qOffset: 2 },
    { m: 3, nHeads: 4, nKv: 2, headSize: 24, slack: 48 },
    { m: 2, nHeads: 2, nKv: 2, headSize: 1, slack: 0 },
  ];
  const results = await harness.page.evaluate((cs) => Promise.all(cs.map((c) => window.tp.qkNorm.testQkNorm(c))), cases);
  results.forEach((r, i) => {
    expect(r.worst, JSON.stringify(cases[i])).toBeLessThanOrEqual(1);
    expect(r.untouched, JSON.stringify(cases[i])).toBe(true);
  });
});

test('a Qwen3 GGUF and the same model as Qwen3ForCausalLM safetensors at TP 1 and 2, GPU and CPU ranks: the oracle\'s greedy tokens', async ({ harness }) => {
  const gguf = encodeGguf(qwen3, 'f32', ggufBpeKv(tok.gguf));
  const { model } = await loadGgufDequantized(gguf);
  expect(model.config).toMatchObject({ qkNorm: true, headSize: 24, ropeStyle: 'rotate_half' });
  const hfFiles = exportHf(TINY_QWEN3, qwen3.weights, { dtype: 'BF16', eosTokenId: tok.id('<|end_of_text|>') });
  hfFiles.set('tokenizer.json', new TextEncoder().encode(JSON.stringify(tok.json)));
  hfFiles.set('tokenizer_config.json', new TextEncoder().encode(JSON.stringify(tok.config)));
  const hfBase = '/hf/qwen3/resolve/main';
  for (const [file, bytes] of hfFiles) {
    writeFileSync(join(dir, file), bytes);
    harness.server.mountFile(`${hfBase}/${file}`, join(dir, file));
  }
  const sources = [['gguf', serve(harness, 'qwen3.gguf', gguf)], ['hf', { hf: hfBase }]] as const;

  const content = 'Say hello 世界 🙂';
  const ids = hfTok.encode(hfTok.applyChatTemplate([{ role: 'user', content }]), false);
  const want = greedyDecided(model, ids, STEPS);
  expect(want.decided).toBeGreaterThanOrEqual(8);
  // the norms decide the continuation: a runtime that skipped them would fail here
  const { qNorm: _q, kNorm: _k, ...plain } = qwen3.weights;
  expect(greedyDecided({ config: TINY_QWEN3, weights: plain }, ids, STEPS).tokens.slice(0, want.decided)).not.toEqual(want.tokens.slice(0, want.decided));
  for (const [kind, modelSrc] of sources) {
    for (const [tp, devices] of RANKS) {
      const r = await runGenerate(harness, { ...base, model: modelSrc, tp, prompt: content, ...(devices ? { devices } : {}) });
      const label = `${kind} TP ${tp} ${devices ?? 'gpu'}`;
      expect(r.prompt_tokens, label).toEqual(ids);
      expect(r.tokens.slice(0, want.decided), label).toEqual(want.tokens.slice(0, want.decided));
      expect(r.stats.ranks.map((x) => x.adapter === CPU), label).toEqual(Array(tp).fill(devices === 'cpu'));
    }
  }
});
