/**
 * A rank's packed shard (its slices one after the other in plan order, each dense): from the
 * IndexedDB cache, or from one streamed pass over the model. The host's worker group loads its
 * local ranks' shards here; a rank in another tab runs the same code in its own worker.
 */
import { AbortedError, ModelFormatError } from '../errors.js';
import { ByteRouter, type ByteRun } from '../loader/route.js';
import type { ByteSource } from '../loader/source.js';
import type { Plan } from '../parallel/plan.js';
import { getShard, putShard, shardKey } from '../cache/shard-cache.js';

/** One rank's shard loading: from the cache, or copied out of the model stream so far. */
export interface LoadProgress {
  rank: number;
  /**
   * Ranks in the placement this load is for. Under `devices: 'auto'` the candidate placements
   * that must be timed load one after another, so the events of one load can follow another's.
   */
  world: number;
  loadedBytes: number;
  totalBytes: number;
  fromCache: boolean;
}

/** What loading needs to know: the plan, where the bytes come from, and whether to cache. */
export interface ShardLoad {
  /** The ranks' plans, indexed as `which` names them. */
  plan: Pick<Plan, 'ranks'>;
  source: ByteSource;
  /** Keep each rank's packed shard in IndexedDB and reuse it (default true). */
  cache?: boolean;
  signal?: AbortSignal;
  onProgress?: (p: LoadProgress) => void;
}

/**
 * The packed shards of ranks `which` (each rank's slices one after the other in plan order,
 * each dense), in that order: from the cache where an entry is valid, else from one streamed
 * pass over the model that fills every missing rank at once. Fresh shards are stored before
 * they are handed to the workers.
 */
export async function loadShards(o: ShardLoad, which: number[], warnings: string[]): Promise<{ bytes: Uint8Array; fromCache: boolean }[]> {
  const ranks = which.map((i) => o.plan.ranks[i]!);
  const identity = o.cache === false ? undefined : await o.source.identity();
  const keys = identity ? ranks.map((rp) => shardKey(identity, rp)) : [];
  let cached: (ArrayBuffer | undefined)[] = ranks.map(() => undefined);
  let cacheUsable = !!identity;
  if (identity) {
    try {
      cached = await Promise.all(ranks.map((rp, i) => getShard(keys[i]!, rp.byteLength)));
    } catch (e) {
      cacheUsable = false;
      warnings.push(`shard cache unavailable, loading without it: ${(e as Error).message}`);
    }
  }
  const missing = ranks.map((_, i) => i).filter((i) => !cached[i]);
  const fresh = missing.length ? await routeShards(o, missing.map((i) => which[i]!)) : [];
  const out = ranks.map((rp, i) => {
    const hit = cached[i];
    if (hit) {
      o.onProgress?.({ rank: rp.rank, world: o.plan.ranks.length, loadedBytes: rp.byteLength, totalBytes: rp.byteLength, fromCache: true });
      return { bytes: new Uint8Array(hit), fromCache: true };
    }
    return { bytes: fresh[missing.indexOf(i)]!, fromCache: false };
  });
  if (cacheUsable) {
    for (const i of missing) {
      try {
        await putShard(keys[i]!, out[i]!.bytes);
      } catch (e) {
        // Quota or a private-mode IndexedDB: the model still loads, only the next load is slower.
        warnings.push(`could not cache rank ${ranks[i]!.rank}'s shard (${(e as Error).name}: ${(e as Error).message}); the next load downloads again`);
        break;
      }
    }
  }
  return out;
}

/**
 * Streams the model once and copies each rank's slices into that rank's packed buffer
 * (its slices one after the other in plan order, each dense).
 */
async function routeShards(o: ShardLoad, which: number[]): Promise<Uint8Array[]> {
  const size = await o.source.size();
  const chosen = which.map((i) => o.plan.ranks[i]!);
  const targets = chosen.map((rp) => {
    const runs: ByteRun[] = [];
    let base = 0;
    for (const s of rp.slices) {
      for (const r of s.ranges) runs.push({ fileOffset: r.fileOffset, length: r.length, dstOffset: base + r.dstOffset });
      base += s.byteLength;
    }
    return { runs, dst: new Uint8Array(base) };
  });
  const router = new ByteRouter(targets);
  let lastReport = 0;
  for await (const chunk of o.source.chunks(o.signal)) {
    if (o.signal?.aborted) throw new AbortedError('model load aborted');
    router.push(chunk);
    if (o.onProgress && (router.offset - lastReport > 8 << 20 || router.offset === size)) {
      lastReport = router.offset;
      chosen.forEach((rp, i) => {
        const p = router.progress(i);
        o.onProgress!({ rank: rp.rank, world: o.plan.ranks.length, loadedBytes: p.copied, totalBytes: p.needed, fromCache: false });
      });
    }
  }
  if (!router.complete || router.offset !== size) {
    throw new ModelFormatError(`the model stream ended at byte ${router.offset} of ${size}`, 'Retry; the download was cut short');
  }
  return targets.map((t) => t.dst);
}
