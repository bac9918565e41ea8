import 'fake-indexeddb/auto';
import { describe, it, expect } from 'vitest';
import { createStore, get, set } from 'idb-keyval';
import { getShard, putShard, clearShardCache, shardKey, type CachedShard } from './shard-cache.js';
import { makePlan } from '../parallel/plan.js';
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
