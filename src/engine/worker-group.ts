/**
 * The shard workers of one engine, seen from the main thread as a `StepBackend`: it spawns one
 * worker per rank, streams the model once and routes each rank its byte ranges, then drives
 * steps through the control block (post, await all done, read each rank's logits slice). The
 * main thread never blocks: every wait is `Atomics.waitAsync`.
 */
import * as Comlink from 'comlink';
import { installErrorTransfer } from './protocol.js';
import { ControlBlock, createCollectiveBuffer } from '../collective/index.js';
import { ByteRouter, type ByteRun } from '../loader/route.js';
import type { ByteSource } from '../loader/source.js';
import type { ModelConfig } from '../model/config.js';
import type { Plan } from '../parallel/plan.js';
import { commandWords, encodeStep } from './step-words.js';
import type { StepBackend, StepRow } from './scheduler.js';
import type { RankStats } from './types.js';
import { ModelFormatError, reviveError, WorkerFailedError, AbortedError, WebGpuTpError } from '../errors.js';
import type { ShardWorker, ShardInitResult } from '../../workers/shard.worker.js';
import { getShard, putShard, shardKey } from '../cache/shard-cache.js';
import type { Q8Activations } from '../gpu/matmul-q8.js';
// The shard worker is bundled inline (Vite `?worker&inline`): its code, dependencies included,
// is a string in the built module and starts as a module worker from a Blob URL. A
// `new URL('…worker.ts', import.meta.url)` worker would be a second file beside the library,
// and a consumer's dev server breaks it: dependency pre-bundling moves the library into
// node_modules/.vite/deps, where that relative URL is a 404. Inline costs one copy of the
// worker's code in the library, and needs no bundler or server setup; a Blob worker takes the
// page's COEP (require-corp or credentialless). It stays a module worker named
// `webgpu-tp rank N` (e2e/memory.spec.ts relies on both). The app build takes the same path.
import ShardWorkerCtor from '../../workers/shard.worker.ts?worker&inline';

installErrorTransfer();

/** Kernel variants measured on this page's adapter by the first rank that tuned. */
let tunedChoices: ShardInitResult['choices'] | undefined;

export interface LoadProgress {
  rank: number;
  loadedBytes: number;
  totalBytes: number;
  fromCache: boolean;
}

export interface WorkerGroupOptions {
  config: ModelConfig;
  plan: Plan;
  source: ByteSource;
  /** Rows per step (prefill chunk). */
  maxRows: number;
  /** Sequences batched at once: KV-cache slots per rank. */
  maxSlots: number;
  contextLength: number;
  spin: number;
  /** Longest a rank may wait in a collective, and the main thread for a step (ms). */
  timeoutMs: number;
  onProgress?: (p: LoadProgress) => void;
  signal?: AbortSignal;
  /** Keep each rank's packed shard in IndexedDB and reuse it (default true). */
  cache?: boolean;
  /** Inputs of Q8_0 matmuls: int8 per group (W8A8) or f32 (default). */
  activations?: Q8Activations;
}

interface Rank {
  worker: Worker;
  api: Comlink.Remote<ShardWorker>;
  info: ShardInitResult;
  /** Set when the worker raised an uncaught error or failed to load. */
  dead?: string;
  /** Settles when the worker dies: every control call races it, so none can hang. */
  died: Promise<never>;
}

export class WorkerGroup implements StepBackend {
  readonly maxRows: number;
  readonly contextLength: number;
  readonly maxSlots: number;
  private readonly ctrl: ControlBlock;
  private readonly words: Int32Array;
  private readonly logits: Float32Array;
  private readonly maxLogitRows: number;
  private readonly logitStride: number;
  private disposed = false;
  /** Load-time problems that did not stop the load (e.g. the cache was unavailable). */
  readonly warnings: string[] = [];

  private constructor(
    private readonly o: WorkerGroupOptions,
    private readonly ranks: Rank[],
    collective: SharedArrayBuffer,
    logits: SharedArrayBuffer,
    maxLogitRows: number,
    logitStride: number,
  ) {
    this.maxRows = o.maxRows;
    this.contextLength = o.contextLength;
    this.maxSlots = o.maxSlots;
    this.ctrl = new ControlBlock(collective);
    this.words = new Int32Array(commandWords(o.maxRows));
    this.logits = new Float32Array(logits);
    this.maxLogitRows = maxLogitRows;
    this.logitStride = logitStride;
  }

  static async create(o: WorkerGroupOptions): Promise<WorkerGroup> {
    const { config: c, plan } = o;
    const world = plan.world;
    // Every sequence of a full batch may want its logits in the same step.
    const maxLogitRows = Math.min(o.maxSlots, o.maxRows);
    const logitStride = Math.max(...plan.ranks.map((r) => r.vocab[1] - r.vocab[0]));
    const collective = createCollectiveBuffer({ world, slotFloats: o.maxRows * c.dim, commandWords: commandWords(o.maxRows) });
    const logits = new SharedArrayBuffer(world * maxLogitRows * logitStride * 4);
    const ranks: Rank[] = [];
    const group = new WorkerGroup(o, ranks, collective, logits, maxLogitRows, logitStride);
    try {
      // Spawn and initialise every rank's device in parallel with the download. Kernel
      // variants are measured once (rank 0 of the page's first engine) and handed on:
      // tuning compiles several pipelines, seconds on a CPU adapter, so N ranks must not repeat it.
      const first = tunedChoices ? undefined : plan.ranks[0]!;
      const initRank = async (rp: (typeof plan.ranks)[number]) => {
        const worker = new ShardWorkerCtor({ name: `webgpu-tp rank ${rp.rank}` });
        let die!: (e: Error) => void;
        const died = new Promise<never>((_, reject) => (die = reject));
        died.catch(() => {});
        const rank: Rank = { worker, api: Comlink.wrap<ShardWorker>(worker), died, info: { adapter: '', kernels: '', initMs: 0, choices: { gemm: 'regblock', gemv: 'tree' } } };
        worker.addEventListener('error', (e) => {
          rank.dead = e.message || 'the worker failed to start or raised an uncaught error';
          die(new WorkerFailedError(rp.rank, rank.dead));
        });
        ranks[rp.rank] = rank;
        rank.info = await alive(rank, rank.api.init({
          rank: rp.rank, world, config: c, plan: rp, collective, logits, logitStride, maxRows: o.maxRows, maxLogitRows,
          contextLength: o.contextLength, slots: o.maxSlots, spin: o.spin, timeoutMs: o.timeoutMs, choices: tunedChoices,
          activations: o.activations,
        }));
        tunedChoices ??= rank.info.choices;
      };
      const inits = (async () => {
        if (first) await initRank(first);
        await Promise.all(plan.ranks.filter((rp) => rp !== first).map(initRank));
      })();
      inits.catch(() => {}); // awaited below; this only keeps an early load failure from leaving it unhandled
      const shards = await loadShards(o, group.warnings);
      await inits;
      await Promise.all(
        plan.ranks.map(async (rp, i) => {
          const buf = shards[i]!.bytes.buffer as ArrayBuffer;
          await alive(ranks[rp.rank]!, ranks[rp.rank]!.api.load(Comlink.transfer(buf, [buf])));
          o.onProgress?.({ rank: rp.rank, loadedBytes: rp.byteLength, totalBytes: rp.byteLength, fromCache: shards[i]!.fromCache });
        }),
      );
      for (const r of ranks) await alive(r, r.api.start());
      return group;
    } catch (e) {
      await group.dispose();
      throw e;
    }
  }

  async step(rows: StepRow[], logitsFor: number[]): Promise<Float32Array[]> {
    if (logitsFor.length > this.maxLogitRows) throw new RangeError(`at most ${this.maxLogitRows} logit rows per step`);
    const live = encodeStep(this.words, this.maxRows, {
      tokens: rows.map((r) => r.token),
      positions: rows.map((r) => r.position),
      slots: rows.map((r) => r.slot),
      logitRows: logitsFor,
    });
    const seq = this.ctrl.postStep(this.words.subarray(0, live));
    // A dead worker fails the step at once instead of after the timeout.
    await Promise.race([this.ctrl.waitAllDone(seq, this.o.timeoutMs * 2), ...this.ranks.map((r) => r.died)]);
    for (let r = 0; r < this.ranks.length; r++) {
      if (this.ctrl.status(r) !== 0) throw await this.rankError(r);
    }
    // Each rank's logits are its vocabulary slice; the full row is their concatenation. A rank
    // writes its rows packed at its own slice width, from the start of its region.
    const c = this.o.config;
    return logitsFor.map((_, j) => {
      const out = new Float32Array(c.vocabSize);
      for (const rp of this.o.plan.ranks) {
        const n = rp.vocab[1] - rp.vocab[0];
        const base = rp.rank * this.maxLogitRows * this.logitStride + j * n;
        out.set(this.logits.subarray(base, base + n), rp.vocab[0]);
      }
      return out;
    });
  }

  private async rankError(r: number): Promise<Error> {
    const rank = this.ranks[r]!;
    if (rank.dead) return new WorkerFailedError(r, rank.dead);
    const s = await rank.api.takeError();
    const e = s ? reviveError(s) : new WorkerFailedError(r, 'the step failed without an error');
    return e instanceof WebGpuTpError ? e : new WorkerFailedError(r, e.message);
  }

  async stats(): Promise<RankStats[]> {
    return Promise.all(this.ranks.map((r) => r.api.stats()));
  }

  async resetStats(): Promise<void> {
    await Promise.all(this.ranks.map((r) => r.api.resetStats()));
  }

  /** Stops every worker and frees every device. Safe to call twice. */
  async dispose(): Promise<void> {
    if (this.disposed) return;
    this.disposed = true;
    this.ctrl.dispose();
    await Promise.all(
      this.ranks.map(async (r) => {
        if (!r) return;
        await Promise.race([r.api.dispose().catch(() => {}), new Promise((ok) => setTimeout(ok, 2000))]);
        r.api[Comlink.releaseProxy]();
        r.worker.terminate();
      }),
    );
  }
}

/** `p`, unless the rank's worker dies first: then its WorkerFailedError. */
function alive<T>(rank: Rank, p: Promise<T>): Promise<T> {
  return Promise.race([p, rank.died]);
}

/**
 * Each rank's packed shard (its slices one after the other in plan order, each dense): from
 * the cache where an entry is valid, else from one streamed pass over the model that fills
 * every missing rank at once. Fresh shards are stored before they are handed to the workers.
 */
async function loadShards(o: WorkerGroupOptions, warnings: string[]): Promise<{ bytes: Uint8Array; fromCache: boolean }[]> {
  const ranks = o.plan.ranks;
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
  const fresh = missing.length ? await routeShards(o, missing) : [];
  const out = ranks.map((rp, i) => {
    const hit = cached[i];
    if (hit) {
      o.onProgress?.({ rank: rp.rank, loadedBytes: rp.byteLength, totalBytes: rp.byteLength, fromCache: true });
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
        warnings.push(`could not cache rank ${i}'s shard (${(e as Error).name}: ${(e as Error).message}); the next load downloads again`);
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
async function routeShards(o: WorkerGroupOptions, which: number[]): Promise<Uint8Array[]> {
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
        o.onProgress!({ rank: rp.rank, loadedBytes: p.copied, totalBytes: p.needed, fromCache: false });
      });
    }
  }
  if (!router.complete || router.offset !== size) {
    throw new ModelFormatError(`the model stream ended at byte ${router.offset} of ${size}`, 'Retry; the download was cut short');
  }
  return targets.map((t) => t.dst);
}
