/**
 * The per-rank shard cache: each rank's packed shard in IndexedDB (through idb-keyval), so a
 * second load of the same model at the same split makes no weight requests. An entry's key
 * covers the model's identity, the rank's slice list (so TP degree and split) and the plan
 * version; its value carries a SHA-256 of the bytes, checked on every read, so a corrupt or
 * partial entry is dropped and refetched rather than loaded.
 */
import { createStore, get, set, del, clear, type UseStore } from 'idb-keyval';
import { planVersion, sliceListHash, type RankPlan } from '../parallel/plan.js';

export interface CachedShard {
  bytes: ArrayBuffer;
  /** Hex SHA-256 of `bytes`. */
  sha256: string;
}

let defaultStore: UseStore | undefined;
/** The store, created on first use (IndexedDB may be missing where the cache is never used). */
export function defaultShardStore(): UseStore {
  return (defaultStore ??= createStore('webgpu-tp', 'shards'));
}

export function shardKey(modelIdentity: string, rank: RankPlan): string {
  return `v${planVersion}|${modelIdentity}|${sliceListHash(rank)}`;
}

export async function sha256Hex(bytes: ArrayBuffer | Uint8Array): Promise<string> {
  const view = bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes);
  const digest = await crypto.subtle.digest('SHA-256', view as Uint8Array<ArrayBuffer>);
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, '0')).join('');
}

/**
 * The shard stored under `key`, or undefined when there is none, it has the wrong size or its
 * checksum fails (the bad entry is deleted). `expectedBytes` guards against partial writes.
 */
export async function getShard(key: string, expectedBytes: number, store: UseStore = defaultShardStore()): Promise<ArrayBuffer | undefined> {
  const entry = await get<CachedShard>(key, store);
  if (!entry) return undefined;
  const ok = entry.bytes instanceof ArrayBuffer && entry.bytes.byteLength === expectedBytes && (await sha256Hex(entry.bytes)) === entry.sha256;
  if (!ok) {
    await del(key, store);
    return undefined;
  }
  return entry.bytes;
}

/** Stores a shard (a structured clone of `bytes`; the caller may transfer its buffer afterwards). */
export async function putShard(key: string, bytes: Uint8Array, store: UseStore = defaultShardStore()): Promise<void> {
  const whole = bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength && bytes.buffer instanceof ArrayBuffer;
  const own: ArrayBuffer = whole ? (bytes.buffer as ArrayBuffer) : bytes.slice().buffer;
  await set(key, { bytes: own, sha256: await sha256Hex(bytes) } satisfies CachedShard, store);
}

export async function deleteShard(key: string, store: UseStore = defaultShardStore()): Promise<void> {
  await del(key, store);
}

/** Removes every cached shard. */
export async function clearShardCache(store: UseStore = defaultShardStore()): Promise<void> {
  await clear(store);
}
