/**
 * Bad K-quant and BPE GGUFs (issue 25's "bad files"), refused in the browser before any rank
 * worker starts, on both rank kinds: K-quant data cut short, an even TP 2 split that would cut
 * one of wo's 256-value super-blocks (a stories110M-shaped 768-wide wo: 1.5 blocks a rank), and
 * a `tokenizer.ggml.pre` no family here uses. Workers are counted from outside the engine
 * (e2e/counting.ts), so the engine's own bookkeeping cannot hide one.
 */
import { expect, withInitScript } from './fixtures.js';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Harness } from '../src/cli/browser.js';
import type { SerializedError } from '../src/errors.js';
import { encodeGguf, ggufBpeKv } from '../src/model/formats/gguf-write.js';
import { Tokenizer } from '../src/model/tokenizer/tokenizer.js';
import { modelsDir } from '../test-support/fixtures/paths.js';
import { bpeFixture } from '../test-support/model/gguf-bpe-fixture.js';
import { KQUANT_CONFIG, encodeTypedGguf, kquantModel, q4kmMix } from '../test-support/model/kquant-gguf.js';
import { COUNTING_INIT, counts } from './counting.js';

const test = withInitScript(COUNTING_INIT);

const dir = mkdtempSync(join(tmpdir(), 'webgpu-tp-kquant-refusals-'));
test.afterAll(() => rmSync(dir, { recursive: true, force: true }));

function serve(h: Harness, name: string, bytes: Uint8Array): string {
  const path = join(dir, name);
  writeFileSync(path, bytes);
  return h.server.mountFile(`/files/kquant-refusals/${name}`, path);
}

// One layer of the stories110M shape (12 heads of 64: wo is 768 = 3 super-blocks wide); a
// hidden size of 768 (3 blocks, as wo) keeps ggml's reference quantiser quick and TP 3 whole.
const tok = Tokenizer.parse(readFileSync(resolve(modelsDir, 'tok512.bin')), 512);
// Written when the test runs, not when Playwright collects the file in every process.
const mix = () => encodeTypedGguf(kquantModel({ ...KQUANT_CONFIG, dim: 768, hiddenDim: 768, nHeads: 12, nKvHeads: 12, nLayers: 1 }), q4kmMix, tok);

/** createEngine in the page, then the rank workers it started (counted outside the engine). */
async function tryCreate(h: Harness, o: { model: string; tensorParallel: number; devices: 'cpu' | 'gpu' }): Promise<{ result: { tp: number } | { error: SerializedError }; workers: number }> {
  const before = (await counts(h.page)).workersMade;
  const result = await h.page.evaluate((x) => window.tp.engine.tryCreate({ ...x, cache: false }), o);
  return { result, workers: (await counts(h.page)).workersMade - before };
}

function expectRefused(o: Awaited<ReturnType<typeof tryCreate>>, code: string, message: RegExp): void {
  expect('error' in o.result ? o.result.error : o.result).toMatchObject({ code, message: expect.stringMatching(message) });
  expect(o.workers).toBe(0);
}

test.describe.configure({ mode: 'serial' });

test('bad K-quant and BPE GGUFs are refused, typed, before any rank worker starts, on CPU and GPU ranks', async ({ counted }) => {
  const bytes = mix();
  const good = serve(counted, 'mix.gguf', bytes);
  const cut = serve(counted, 'cut.gguf', bytes.subarray(0, bytes.byteLength - 100));
  const pre = serve(counted, 'pre.gguf', encodeGguf({ config: { ...KQUANT_CONFIG, vocabSize: 320 }, weights: kquantModel({ ...KQUANT_CONFIG, vocabSize: 320 }).weights }, 'f32', ggufBpeKv({ ...bpeFixture(320).gguf, pre: 'gpt-2' })));
  for (const devices of ['cpu', 'gpu'] as const) {
    // The counter sees the workers of a load that succeeds: 1 and 3 keep super-blocks whole.
    const ok = await tryCreate(counted, { model: good, tensorParallel: 1, devices });
    expect(ok.result, devices).toEqual({ tp: 1 });
    expect(ok.workers).toBe(1);
    expectRefused(await tryCreate(counted, { model: good, tensorParallel: 2, devices }), 'PLAN', /inside a K-quant super-block of 256 .*tensorParallel 1, 3\./);
    expectRefused(await tryCreate(counted, { model: cut, tensorParallel: 1, devices }), 'MODEL_FORMAT', /cut short/);
    expectRefused(await tryCreate(counted, { model: pre, tensorParallel: 1, devices }), 'TOKENIZER_FORMAT', /tokenizer\.ggml\.pre is "gpt-2"/);
  }
});
