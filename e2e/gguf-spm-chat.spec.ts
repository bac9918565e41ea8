import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { test, expect } from './fixtures.js';
import { runGenerate } from '../src/cli/generate.js';
import type { ModelConfig } from '../src/model/config.js';
import { encodeGguf } from '../src/model/formats/gguf-write.js';
import { Tokenizer } from '../src/model/tokenizer/tokenizer.js';
import { modelsDir } from '../test-support/fixtures/paths.js';
import { randomWeights } from '../test-support/model/hf-testing.js';
import { greedyDecided } from '../test-support/model/greedy-decided.js';
import { ADDED_TOKENS, INST_TEMPLATE, spmChatKv } from '../test-support/model/spm-chat-fixture.js';

/**
 * `--chat` on a SentencePiece GGUF: a Llama whose vocabulary is tok512 plus a fine-tune's control
 * tokens, carrying Mistral-Instruct's [INST] template. The rendered prompt's `<s>`, `[INST]`
 * and `[/INST]` become their ids (each stretch between them is run.c's encoding of it), and
 * the continuation is the oracle's, on GPU and CPU ranks.
 */
const dir = mkdtempSync(join(tmpdir(), 'webgpu-tp-spm-chat-'));
test.afterAll(() => rmSync(dir, { recursive: true, force: true }));

const tok = Tokenizer.parse(readFileSync(resolve(modelsDir, 'tok512.bin')), 512);
const id = (text: string) => 512 + ADDED_TOKENS.findIndex(([t]) => t === text);
const CONFIG: ModelConfig = {
  dim: 64, hiddenDim: 128, nLayers: 2, nHeads: 4, nKvHeads: 2, vocabSize: 512 + ADDED_TOKENS.length, seqLen: 128, headSize: 16,
  sharedClassifier: true, normEps: 1e-5, ropeTheta: 1e4, ropeStyle: 'interleaved',
};
const model = { config: CONFIG, weights: randomWeights(CONFIG, 44, 3) };

test('a SentencePiece GGUF with an [INST] chat template chats at TP 1 (GPU) and TP 2 (CPU): its control tokens\' ids, the oracle\'s greedy tokens', async ({ harness }) => {
  const path = join(dir, 'spm-chat.gguf');
  writeFileSync(path, encodeGguf(model, 'f32', spmChatKv(tok, INST_TEMPLATE)));
  const url = harness.server.mountFile('/files/spm-chat/model.gguf', path);
  const content = 'Tell me a story about Lily';
  const ids = [1, id('[INST]'), ...tok.encode(` ${content} `, false), id('[/INST]')];
  const want = greedyDecided(model, ids, 16);
  expect(want.decided).toBeGreaterThanOrEqual(8);
  for (const [tp, devices] of [[1, undefined], [2, 'cpu']] as const) {
    const r = await runGenerate(harness, {
      model: url, tp, prompt: content, chat: true, maxTokens: 16, temperature: 0, topP: 0.9, seed: 1, ignoreEos: true, cache: false, ...(devices ? { devices } : {}),
    });
    expect(r.prompt_tokens, `TP ${tp}`).toEqual(ids);
    expect(r.tokens.slice(0, want.decided), `TP ${tp}`).toEqual(want.tokens.slice(0, want.decided));
  }
});
