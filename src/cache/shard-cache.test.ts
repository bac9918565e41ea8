import 'fake-indexeddb/auto';
import { describe, it, expect } from 'vitest';
import { createStore, get, set } from 'idb-keyval';
import { getShard, putShard, clearShardCache, shardKey, type CachedShard } from './shard-cache.js';
import { makePlan, type RankPlan } from '../parallel/plan.js';
import { llama2cTensorTable } from '../model/formats/llama2c.js';
import type { ModelConfig } from '../model/config.js';

const config: ModelConfig = {
  dim: 64, hiddenDim: 172, nLayers: 5, nHeads: 8, nKvHeads: 4, vocabSize: 512, seqLen: 512, headSize: 8,
  sharedClassifier: true, normEps: 1e-5, ropeTheta: 10000, ropeStyle: 'interleaved',
};

describe('shard cache', () => {
  it('keys differ by model identity, rank and TP degree', () => {
    const t = llama2cTensorTable(config);
    const p1 = makePlan(config, { tensorParallel: 1 }, t);
    const p2 = makePlan(config, { tensorParallel: 2 }, t);
    const keys = new Set([shardKey('a', p1.ranks[0]!), shardKey('b', p1.ranks[0]!), shardKey('a', p2.ranks[0]!), shardKey('a', p2.ranks[1]!)]);
    expect(keys.size).toBe(4);
    expect(shardKey('a', p2.ranks[1]!)).toBe(shardKey('a', makePlan(config, { tensorParallel: 2 }, t).ranks[1]!));
  });

  it('keys never collide across models, TP degrees or splits, and are equal only for the same slices', () => {
    const t = llama2cTensorTable(config);
    const plans = [
      ...[1, 2, 4, 8].map((tp) => makePlan(config, { tensorParallel: tp }, t)),
      ...[[3, 1], [1, 3], [5, 3], [1, 1], [2, 1, 1], [1, 1, 2], [1, 2, 3, 4]].map((fractions) => makePlan(config, { fractions }, t)),
      makePlan(config, { fractions: [3, 1], hiddenBlock: 4 }, t),
    ];
    const ranks: RankPlan[] = plans.flatMap((p) => p.ranks);
    const identities = ['url:/models/stories260K.bin:1056540:"abc"', 'url:/models/stories260K.bin:1056540:"abd"', 'url:/other.bin:1056540:', 'file:stories260K.bin:1056540:0'];
    // What a shard holds: two keys may only match when these match.
    const content = (r: RankPlan) => JSON.stringify([r.heads, r.kvHeads, r.hidden, r.vocab, r.slices]);
    const byKey = new Map<string, string>();
    for (const id of identities) {
      for (const r of ranks) {
        const k = shardKey(id, r);
        const c = `${id}\n${content(r)}`;
        const seen = byKey.get(k);
        if (seen !== undefined) expect(seen, `key ${k}`).toBe(c);
        byKey.set(k, c);
      }
    }
    // Distinct shards of distinct models all got distinct keys.
    const distinct = new Set(identities.flatMap((id) => ranks.map((r) => `${id}\n${content(r)}`)));
    expect(byKey.size).toBe(distinct.size);
    // Different splits over the same degree do differ ([3, 1] vs [1, 3] vs even).
    const two = plans.filter((p) => p.world === 2);
    expect(new Set(two.map((p) => shardKey('m', p.ranks[0]!))).size).toBeGreaterThanOrEqual(3);
  });

  it('an entry with changed bytes, cut short, or not a shard at all is dropped; the refetched shard is then served', async () => {
    const store = createStore('test-shards-corrupt', 'shards');
    const bytes = new Uint8Array(4096).map((_, i) => (i * 31) & 0xff);
    const corruptions: [string, (e: CachedShard) => unknown][] = [
      ['a byte changed', (e) => { new Uint8Array(e.bytes)[4000] ^= 0x80; return e; }],
      ['bytes cut short (checksum recomputed, size still wrong)', (e) => ({ ...e, bytes: e.bytes.slice(0, 2048) })],
      ['checksum missing', (e) => ({ bytes: e.bytes })],
      ['bytes as a typed array', (e) => ({ ...e, bytes: new Uint8Array(e.bytes) })],
      ['a string', () => 'garbage'],
      ['a number', () => 7],
    ];
    for (const [what, corrupt] of corruptions) {
      await putShard('k', bytes, store);
      await set('k', corrupt((await get<CachedShard>('k', store))!), store);
      expect(await getShard('k', 4096, store), what).toBeUndefined();
      expect(await get('k', store), `${what}: deleted`).toBeUndefined();
      // The loader then refetches and stores the shard again; the next read serves it.
      await putShard('k', bytes, store);
      expect(new Uint8Array((await getShard('k', 4096, store))!), what).toEqual(bytes);
    }
  });

  it('round-trips a shard and drops corrupt or partial entries', async () => {
    const store = createStore('test-shards', 'shards');
    const bytes = new Uint8Array(1000).map((_, i) => i * 7);
    await putShard('k', bytes, store);
    expect(new Uint8Array((await getShard('k', 1000, store))!)).toEqual(bytes);
    // Wrong expected size: treated as partial, deleted.
    expect(await getShard('k', 999, store)).toBeUndefined();
    expect(await get('k', store)).toBeUndefined();
    // Flipped byte: checksum fails, deleted.
    await putShard('k', bytes, store);
    const entry = (await get<CachedShard>('k', store))!;
    new Uint8Array(entry.bytes)[10] ^= 1;
    await set('k', entry, store);
    expect(await getShard('k', 1000, store)).toBeUndefined();
    expect(await get('k', store)).toBeUndefined();
    await putShard('k', bytes, store);
    await clearShardCache(store);
    expect(await getShard('k', 1000, store)).toBeUndefined();
  });
});
