import { test, expect } from './fixtures.js';

/** Bytes a request asked for: the whole file without a Range, else the range's length. */
function requestedBytes(range: string | undefined, size: number): number {
  const m = /^bytes=(\d+)-(\d*)$/.exec(range ?? '');
  if (!m) return size;
  const end = m[2] ? Number(m[2]) : size - 1;
  return end - Number(m[1]) + 1;
}

test('a second load of the same model and split comes from the shard cache, with no weight requests', async ({ harness }) => {
  const model = '/models/stories260K.bin';
  const opts = { model, tokenizer: '/models/tok512.bin', tp: 2, prompt: '', maxTokens: 1, temperature: 0, topP: 0.9, seed: 1, cache: true };
  const size = 1056540;
  await harness.page.evaluate(() => window.tp.engine.clearCache());
  const weightBytes = () =>
    harness.server.log.filter((r) => r.path === model).reduce((a, r) => a + requestedBytes(r.range, size), 0);

  const before = weightBytes();
  const first = await harness.page.evaluate((o) => window.tp.engine.load(o), opts);
  expect('error' in first ? first.error : null).toBeNull();
  expect(weightBytes() - before).toBeGreaterThanOrEqual(size);
  await harness.page.evaluate(() => window.tp.engine.disposeAll());

  const mid = weightBytes();
  const progress = await harness.page.evaluate(async (o) => {
    const events: { rank: number; fromCache: boolean }[] = [];
    const r = await window.tp.engine.load({ ...o, onProgressLog: events });
    return { r, events };
  }, opts);
  expect('error' in progress.r ? progress.r.error : null).toBeNull();
  // Only the 28-byte header and the identity probe (size, ETag) may touch the file.
  expect(weightBytes() - mid).toBeLessThanOrEqual(64);
  expect([...new Set(progress.events.filter((e) => e.fromCache).map((e) => e.rank))].sort()).toEqual([0, 1]);
  expect(progress.events.some((e) => !e.fromCache)).toBe(false);

  // The cached engine still generates the reference tokens.
  const out = await harness.page.evaluate((o) => window.tp.engine.generate({ ...o, maxTokens: 24 }), opts);
  expect('error' in out ? out.error : null).toBeNull();
  if (!('error' in out)) expect(out.text.startsWith('Once upon a time, there was a little girl named Lily.')).toBe(true);
  await harness.page.evaluate(() => window.tp.engine.disposeAll());
  await harness.page.evaluate(() => window.tp.engine.clearCache());
});

test('a full quota does not stop the load: it goes on without the cache and says so in stats()', async ({ harness }) => {
  const opts = { model: '/models/stories260K.bin', tokenizer: '/models/tok512.bin', tp: 2, prompt: '', maxTokens: 24, temperature: 0, topP: 0.9, seed: 1, cache: true };
  await harness.page.evaluate(() => window.tp.engine.clearCache());
  await harness.page.evaluate(() => {
    const put = IDBObjectStore.prototype.put;
    (window as unknown as { restorePut: () => void }).restorePut = () => (IDBObjectStore.prototype.put = put);
    IDBObjectStore.prototype.put = function () {
      throw new DOMException('The quota has been exceeded.', 'QuotaExceededError');
    };
  });
  try {
    const out = await harness.page.evaluate((o) => window.tp.engine.generate(o), opts);
    expect('error' in out ? out.error : null).toBeNull();
    if ('error' in out) return;
    expect(out.text.startsWith('Once upon a time, there was a little girl named Lily.')).toBe(true);
    expect(out.stats.warnings.join('\n')).toMatch(/could not cache rank 0's shard \(QuotaExceededError/);
  } finally {
    await harness.page.evaluate(() => (window as unknown as { restorePut: () => void }).restorePut());
    await harness.page.evaluate(() => window.tp.engine.disposeAll());
  }
});
