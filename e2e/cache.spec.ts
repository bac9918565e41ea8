import { test, expect } from './fixtures.js';
import { MODEL_HEADER_BYTES } from '../src/model/formats/detect.js';

/** Bytes a request asked for: the whole file without a Range, else the range's length. */
function requestedBytes(range: string | undefined, size: number): number {
  const m = /^bytes=(\d+)-(\d*)$/.exec(range ?? '');
  if (!m) return size;
  const end = m[2] ? Number(m[2]) : size - 1;
  return end - Number(m[1]) + 1;
}

// CPU ranks: the host reads, checks and stores every rank's shard (src/engine/load-shards.ts)
// whatever the rank's kind; GPU ranks from the cache are the demo's reload and the faults' rebuilds.
test('a second load of the same model and split comes from the shard cache, with no weight requests', async ({ harness }) => {
  const model = '/models/stories260K.bin';
  const opts = { model, tokenizer: '/models/tok512.bin', tp: 2, prompt: '', maxTokens: 1, temperature: 0, topP: 0.9, seed: 1, cache: true, devices: 'cpu' as const };
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
  // Only the header (read as MODEL_HEADER_BYTES, enough for a v2 header) and the identity probe
  // (size, ETag) may touch the file.
  expect(weightBytes() - mid).toBeLessThanOrEqual(MODEL_HEADER_BYTES + 64);
  expect([...new Set(progress.events.filter((e) => e.fromCache).map((e) => e.rank))].sort()).toEqual([0, 1]);
  expect(progress.events.some((e) => !e.fromCache)).toBe(false);
  // The engine's stats say the same of each rank's shard.
  if (!('error' in progress.r)) expect(progress.r.shards.map((x) => x.fromCache)).toEqual([true, true]);

  // The cached engine still generates the reference tokens.
  const out = await harness.page.evaluate((o) => window.tp.engine.generate({ ...o, maxTokens: 24 }), opts);
  expect('error' in out ? out.error : null).toBeNull();
  if (!('error' in out)) expect(out.text.startsWith('Once upon a time, there was a little girl named Lily.')).toBe(true);
  await harness.page.evaluate(() => window.tp.engine.disposeAll());
  await harness.page.evaluate(() => window.tp.engine.clearCache());
});

test('a full quota does not stop the load: it goes on without the cache and says so in stats()', async ({ harness }) => {
  const opts = { model: '/models/stories260K.bin', tokenizer: '/models/tok512.bin', tp: 2, prompt: '', maxTokens: 24, temperature: 0, topP: 0.9, seed: 1, cache: true, devices: 'cpu' as const };
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

test('a corrupted cache entry is detected after a reload: that rank is fetched again and the output is the reference', async ({ harness }) => {
  const model = '/models/stories260K.bin';
  const opts = { model, tokenizer: '/models/tok512.bin', tp: 2, prompt: '', maxTokens: 24, temperature: 0, topP: 0.9, seed: 1, cache: true, devices: 'cpu' as const };
  const size = 1056540;
  const weightBytes = () =>
    harness.server.log.filter((r) => r.path === model).reduce((a, r) => a + requestedBytes(r.range, size), 0);
  await harness.page.evaluate(() => window.tp.engine.clearCache());
  const first = await harness.page.evaluate((o) => window.tp.engine.load(o), opts);
  expect('error' in first ? first.error : null).toBeNull();
  await harness.page.evaluate(() => window.tp.engine.disposeAll());

  // Flip one byte in the middle of one rank's stored shard, straight through IndexedDB.
  const entries = await harness.page.evaluate(
    () =>
      new Promise<number>((resolve, reject) => {
        const open = indexedDB.open('webgpu-tp');
        open.onerror = () => reject(open.error);
        open.onsuccess = () => {
          const tx = open.result.transaction('shards', 'readwrite');
          const store = tx.objectStore('shards');
          let n = 0;
          const cursor = store.openCursor();
          cursor.onsuccess = () => {
            const c = cursor.result;
            if (!c) return;
            if (n++ === 0) {
              const v = c.value as { bytes: ArrayBuffer; sha256: string };
              const b = new Uint8Array(v.bytes);
              b[b.length >> 1]! ^= 0xff;
              c.update(v);
            }
            c.continue();
          };
          tx.oncomplete = () => {
            open.result.close();
            resolve(n);
          };
          tx.onerror = () => reject(tx.error);
        };
      }),
  );
  expect(entries).toBe(2);

  await harness.page.reload();
  await harness.page.waitForFunction(() => (window as unknown as { tpReady?: boolean }).tpReady === true);
  const mark = weightBytes();
  const second = await harness.page.evaluate(async (o) => {
    const events: { rank: number; fromCache: boolean }[] = [];
    const r = await window.tp.engine.load({ ...o, onProgressLog: events });
    return { r, events };
  }, opts);
  expect('error' in second.r ? second.r.error : null).toBeNull();
  const done = (fromCache: boolean) => [...new Set(second.events.filter((e) => e.fromCache === fromCache).map((e) => e.rank))];
  expect(done(true)).toHaveLength(1);
  expect(done(false)).toHaveLength(1);
  if (!('error' in second.r)) expect(second.r.shards.map((x, r) => x.fromCache === done(true).includes(r))).toEqual([true, true]);
  expect(weightBytes() - mark).toBeGreaterThanOrEqual(size);
  const out = await harness.page.evaluate((o) => window.tp.engine.generate(o), opts);
  expect('error' in out ? out.error : null).toBeNull();
  if (!('error' in out)) expect(out.text.startsWith('Once upon a time, there was a little girl named Lily.')).toBe(true);
  await harness.page.evaluate(() => window.tp.engine.disposeAll());

  // The refetched shard was stored again: the next load is all cache hits.
  const third = await harness.page.evaluate(async (o) => {
    const events: { rank: number; fromCache: boolean }[] = [];
    const r = await window.tp.engine.load({ ...o, onProgressLog: events });
    return { r, events };
  }, opts);
  expect('error' in third.r ? third.r.error : null).toBeNull();
  expect(third.events.some((e) => !e.fromCache)).toBe(false);
  await harness.page.evaluate(() => window.tp.engine.disposeAll());
  await harness.page.evaluate(() => window.tp.engine.clearCache());
});
