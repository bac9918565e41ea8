/**
 * The shard workers of one engine, seen from the main thread as a `StepBackend`: it spawns one
 * worker per rank, streams the model once and routes each rank its byte ranges, then drives
 * steps through the control block (post, await all done, read each rank's logits slice). The
 * main thread never blocks: every wait is `Atomics.waitAsync`.
 *
 * Recovery: when a step fails (a rank reports an error, its worker dies, or the step times
 * out), the group aborts the control block so the other ranks leave their collectives and park,
 * throws the culprit's typed error to the scheduler (which fails every sequence of the batch),
 * and rebuilds the dead, hung or device-lost ranks from the shard cache; the next step waits
 * for the rebuild and the group reset (ARCHITECTURE.md, decision 12).
 *
 * Ranks in other tabs (`tabs`): shared memory cannot reach them, so the whole group runs in
 * message mode: every rank, local or not, gets each step as a Comlink call and all-reduces over
 * the message transport. A failed step there is not rebuilt: the engine reports the culprit and
 * stays broken (ARCHITECTURE.md, decision 19). Without tabs nothing of this runs.
 */
import * as Comlink from 'comlink';
import { installErrorTransfer } from './protocol.js';
import { ControlBlock, createCollectiveMemory, STATUS_OK, type CollectiveBuffer } from '../collective/index.js';
import type { ByteSource } from '../loader/source.js';
import type { ModelConfig } from '../model/config.js';
import type { Plan, RankPlan } from '../parallel/plan.js';
import { commandWords, encodeStep } from './step-words.js';
import type { StepBackend, StepRow } from './scheduler.js';
import type { RankStats } from './types.js';
import {
  reviveError, serializeError, WorkerFailedError, AbortedError, WebGpuTpError, DeviceLostError, CollectiveTimeoutError, DisposedError,
} from '../errors.js';
import type { ShardWorker, ShardInitResult } from '../../workers/shard.worker.js';
import { loadShards } from './load-shards.js';
import { acceptTabs, TAB_REMEDY, type TabHost, type TabPeer } from './tab-host.js';
import { collectiveGroup } from './tab-link.js';
import type { DeviceSpec } from '../gpu/adapter.js';
import type { Q8Activations } from '../gpu/matmul-q8.js';
import type { KvCacheOption } from '../gpu/kv-format.js';
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

/** Longest a live rank may take to park after an abort before it counts as hung (ms). */
const PARK_GRACE_MS = 5000;

/** Kernel variants measured by the first rank that tuned on each adapter (by identity key). */
const tunedChoices = new Map<string, ShardInitResult['choices']>();

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
  /** Time kernels with timestamp queries (see EngineOptions.profile). */
  profile?: boolean;
  onProgress?: (p: LoadProgress) => void;
  signal?: AbortSignal;
  /** Keep each rank's packed shard in IndexedDB and reuse it (default true). */
  cache?: boolean;
  /** Per rank: the adapter its worker asks for (default adapter when absent). */
  devices?: (DeviceSpec | undefined)[];
  /** Per rank: its adapter's identity, so kernel tuning runs once per adapter. */
  adapterKeys?: string[];
  /** Inputs of Q8_0 matmuls: int8 per group (W8A8) or f32 (default). */
  activations?: Q8Activations;
  /** W8A8: runq.c's arithmetic bit for bit (see EngineOptions.runqExact). */
  runqExact?: boolean;
  /** The KV cache's values (see EngineOptions.kvCache). */
  kvCache?: KvCacheOption;
  /** The last `count` ranks run in other tabs that join on `id` (see EngineOptions.tabs). */
  tabs?: TabRanksOptions;
}

export interface TabRanksOptions {
  id: string;
  count: number;
  /** Longest wait for the tabs to join (ms). */
  joinTimeoutMs: number;
  /** What a tab rank loads its shard from: an absolute URL it fetches, or a Blob it is sent. */
  model: string | Blob;
}

interface Rank {
  /** Absent for a rank in another tab (its worker lives there). */
  worker?: Worker;
  /** The joined tab a tab rank runs in. */
  tab?: TabPeer;
  api: Comlink.Remote<ShardWorker>;
  info: ShardInitResult;
  /** Set when the worker raised an uncaught error, failed to load, or was terminated. */
  dead?: string;
  /** Settles when the worker dies: every control call races it, so none can hang. */
  died: Promise<never>;
  /** Marks the rank dead and settles `died` (with `error`, default a WorkerFailedError). */
  kill(reason: string, error?: Error): void;
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
  /** The rebuild after a failed step; the next step waits for it. */
  private recovery: Promise<void> = Promise.resolve();
  /** Set when a rebuild failed: the group cannot run steps any more. */
  private broken?: Error;
  /** Load-time problems that did not stop the load (e.g. the cache was unavailable). */
  readonly warnings: string[] = [];
  /** Message mode (some rank is in another tab): the joined tabs. */
  private tabHost?: TabHost;
  private messageSeq = 0;

  private constructor(
    private readonly o: WorkerGroupOptions,
    private readonly ranks: Rank[],
    private readonly collective: CollectiveBuffer,
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
    const collective = createCollectiveMemory({ world, slotFloats: o.maxRows * c.dim, commandWords: commandWords(o.maxRows) });
    const logits = new SharedArrayBuffer(world * maxLogitRows * logitStride * 4);
    const ranks: Rank[] = [];
    const group = new WorkerGroup(o, ranks, collective, logits, maxLogitRows, logitStride);
    try {
      const tabRanks = o.tabs ? plan.ranks.slice(world - o.tabs.count).map((rp) => rp.rank) : [];
      if (o.tabs) {
        group.tabHost = await acceptTabs({ id: o.tabs.id, ranks: tabRanks, world, joinTimeoutMs: o.tabs.joinTimeoutMs, silenceMs: o.timeoutMs, signal: o.signal });
      }
      const local = plan.ranks.filter((rp) => !tabRanks.includes(rp.rank));
      // Spawn and initialise every rank's device in parallel with the download. Kernel
      // variants are measured once per adapter (the first rank on it of the page's first
      // engine) and handed on: tuning compiles several pipelines, seconds on a CPU adapter,
      // so N ranks must not repeat it.
      const keyOf = (r: number) => o.adapterKeys?.[r] ?? 'default';
      const firsts = plan.ranks.filter((rp, i) => !tunedChoices.has(keyOf(rp.rank)) && plan.ranks.findIndex((q) => keyOf(q.rank) === keyOf(rp.rank)) === i);
      const inits = (async () => {
        await Promise.all(firsts.map((rp) => group.spawnRank(rp)));
        await Promise.all(plan.ranks.filter((rp) => !firsts.includes(rp)).map((rp) => group.spawnRank(rp)));
      })();
      inits.catch(() => {}); // awaited below; this only keeps an early load failure from leaving it unhandled
      const shards = await loadShards(o, local.map((rp) => rp.rank), group.warnings);
      await inits;
      await Promise.all(
        plan.ranks.map(async (rp) => {
          const rank = ranks[rp.rank]!;
          if (rank.tab) {
            // A tab rank fetches its own slices (or reads the Blob it was sent) in its worker.
            rank.tab.setState('loading');
            const r = await alive(rank, rank.api.loadFrom(o.tabs!.model, o.cache ?? true));
            o.onProgress?.({ rank: rp.rank, loadedBytes: rp.byteLength, totalBytes: rp.byteLength, fromCache: r.fromCache });
            return;
          }
          const i = local.indexOf(rp);
          const buf = shards[i]!.bytes.buffer as ArrayBuffer;
          await alive(ranks[rp.rank]!, ranks[rp.rank]!.api.load(Comlink.transfer(buf, [buf])));
          o.onProgress?.({ rank: rp.rank, loadedBytes: rp.byteLength, totalBytes: rp.byteLength, fromCache: shards[i]!.fromCache });
        }),
      );
      for (const r of ranks) await alive(r, r.api.start());
      for (const r of ranks) r.tab?.setState('running');
      return group;
    } catch (e) {
      await group.dispose();
      throw e;
    }
  }

  /** Starts rank `rp`'s worker and its device; the rank is in `ranks` from the start, so dispose reaches it. */
  private async spawnRank(rp: RankPlan): Promise<Rank> {
    const o = this.o;
    const key = o.adapterKeys?.[rp.rank] ?? 'default';
    const { config: c, plan } = o;
    if (this.disposed) throw new DisposedError();
    const tab = this.tabHost?.peers.get(rp.rank);
    const worker = tab ? undefined : new ShardWorkerCtor({ name: `webgpu-tp rank ${rp.rank}` });
    let die!: (e: Error) => void;
    const died = new Promise<never>((_, reject) => (die = reject));
    died.catch(() => {});
    const rank: Rank = {
      worker, tab, api: Comlink.wrap<ShardWorker>(tab ? tab.endpoint : worker!), died,
      info: { adapter: '', kernels: '', initMs: 0, choices: { gemm: 'regblock', gemv: 'tree' } },
      kill(reason, error) {
        if (rank.dead) return;
        rank.dead = reason;
        die(error ?? new WorkerFailedError(rp.rank, reason));
      },
    };
    worker?.addEventListener('error', (e) => rank.kill(e.message || 'the worker failed to start or raised an uncaught error'));
    tab?.died.catch((e: Error) => rank.kill(e.message, e));
    this.ranks[rp.rank] = rank;
    // Message mode shares no memory: steps come as calls, sums go over the message transport.
    const shared = this.tabHost
      ? { messages: { group: collectiveGroup(this.tabHost.session) } }
      : { collective: this.collective, logits: this.logits.buffer as SharedArrayBuffer };
    rank.info = await alive(rank, rank.api.init({
      rank: rp.rank, world: plan.world, config: c, plan: rp, ...shared,
      logitStride: this.logitStride, maxRows: o.maxRows, maxLogitRows: this.maxLogitRows,
      contextLength: o.contextLength, slots: o.maxSlots, spin: o.spin, timeoutMs: o.timeoutMs, profile: o.profile,
      // A tab's adapter is its own: it measures its kernels itself.
      choices: tab ? undefined : tunedChoices.get(key), device: o.devices?.[rp.rank], activations: o.activations,
      runqExact: o.runqExact, kvCache: o.kvCache,
    }));
    if (!tab && !tunedChoices.has(key)) tunedChoices.set(key, rank.info.choices);
    return rank;
  }

  async step(rows: StepRow[], logitsFor: number[]): Promise<Float32Array[]> {
    await this.recovery;
    if (this.disposed) throw new DisposedError();
    if (this.broken) throw this.broken;
    if (logitsFor.length > this.maxLogitRows) throw new RangeError(`at most ${this.maxLogitRows} logit rows per step`);
    const live = encodeStep(this.words, this.maxRows, {
      tokens: rows.map((r) => r.token),
      positions: rows.map((r) => r.position),
      slots: rows.map((r) => r.slot),
      logitRows: logitsFor,
    });
    if (this.tabHost) return this.stepByMessages(this.words.slice(0, live), logitsFor.length);
    const seq = this.ctrl.postStep(this.words.subarray(0, live));
    // A dead worker fails the step at once, and a failed rank as soon as it reports, instead
    // of after the others time out in the collective it never joined.
    const outcome = await Promise.race([
      this.ctrl.waitStep(seq, this.o.timeoutMs * 2),
      ...this.ranks.map((r) => r.died.catch(() => 'dead' as const)),
    ]);
    if (outcome !== 'done' || this.ranks.some((_, r) => this.ctrl.status(r) !== STATUS_OK)) throw await this.fail(seq, outcome === 'timeout');
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

  /**
   * Message mode: every rank runs the step as a call and returns its logits rows. The first
   * failure (a rank's error, a rank or tab gone, or the step timeout) fails the step.
   */
  private async stepByMessages(words: Int32Array, nLogits: number): Promise<Float32Array[]> {
    const seq = ++this.messageSeq;
    const calls = this.ranks.map((r) => alive(r, r.api.step(words)));
    let timer: ReturnType<typeof setTimeout> | undefined;
    const outcome = await Promise.race([
      Promise.all(calls).catch(() => 'failed' as const),
      new Promise<'timeout'>((ok) => (timer = setTimeout(() => ok('timeout'), this.o.timeoutMs * 2))),
    ]);
    clearTimeout(timer);
    if (typeof outcome === 'string') throw await this.failByMessages(calls, seq);
    const c = this.o.config;
    return Array.from({ length: nLogits }, (_, j) => {
      const out = new Float32Array(c.vocabSize);
      for (const rp of this.o.plan.ranks) {
        const n = rp.vocab[1] - rp.vocab[0];
        out.set(outcome[rp.rank]!.subarray(j * n, (j + 1) * n), rp.vocab[0]);
      }
      return out;
    });
  }

  /**
   * Message mode: a step failed. Aborts every live rank's collectives so none waits on, lets
   * the calls settle, and names the culprit: a rank that died or whose tab left (the host saw
   * it), else a rank's own error, else the peer a rank's collective named (gone or silent),
   * else a timeout naming the ranks that never answered. The group is then broken: tab ranks
   * are not rebuilt, so every later step fails at once, saying to create a new engine.
   */
  private async failByMessages(calls: Promise<Float32Array>[], seq: number): Promise<Error> {
    if (this.disposed) return new DisposedError();
    for (const r of this.ranks) if (!r.dead) r.api.abortStep(`step ${seq} failed on another rank`).catch(() => {});
    const settled = await Promise.all(calls.map((c) => Promise.race([
      c.then(() => null, (e: unknown) => (e instanceof Error ? e : new Error(String(e)))),
      new Promise<'hung'>((ok) => setTimeout(() => ok('hung'), Math.min(this.o.timeoutMs, PARK_GRACE_MS))),
    ])));
    const errors = settled.map((e, r) => (this.ranks[r]!.dead ? 'dead' : e));
    const dead = this.ranks.findIndex((r) => r.dead);
    const typed = (e: unknown): e is WebGpuTpError => e instanceof WebGpuTpError;
    const own = errors.find((e) => typed(e) && !(e instanceof AbortedError) && !(e instanceof CollectiveTimeoutError) && !(e instanceof WorkerFailedError));
    const gone = errors.find((e) => e instanceof WorkerFailedError);
    const silent = errors.find((e) => e instanceof CollectiveTimeoutError);
    const hung = errors.map((e, r) => (e === 'hung' ? r : -1)).filter((r) => r >= 0);
    let error: Error;
    if (dead >= 0) {
      error = await this.ranks[dead]!.died.catch((e: Error) => e);
    } else if (own || gone || silent) error = (own ?? gone ?? silent) as Error;
    else if (hung.length) error = new CollectiveTimeoutError('step', seq, hung, this.o.timeoutMs * 2, undefined, TAB_REMEDY);
    else error = (errors.find((e) => e instanceof Error) as Error | undefined) ?? new WorkerFailedError(0, `step #${seq} failed without an error`, TAB_REMEDY);
    const culprit = typed(error) ? withRemedy(error, TAB_REMEDY) : error;
    this.broken = new WorkerFailedError(
      (culprit as { rank?: number }).rank ?? (culprit as { missingRanks?: number[] }).missingRanks?.[0] ?? 0,
      `an earlier step failed, and ranks in other tabs are not rebuilt (${culprit.message})`, TAB_REMEDY,
    );
    return culprit;
  }

  /**
   * A step failed. Releases the other ranks from their collectives (abort), waits until every
   * live rank has parked, names the culprit, and starts rebuilding the ranks that are dead,
   * hung or lost their device; the next step waits for that. Returns the error that every
   * sequence of the failed step gets: the dead rank's `WorkerFailedError`, else the
   * `DeviceLostError`, else the rank's own typed error, else a timeout naming the hung ranks.
   */
  private async fail(seq: number, timedOut = false): Promise<Error> {
    if (this.disposed) return new DisposedError();
    this.ctrl.abort();
    const world = this.ranks.length;
    const dead = this.ranks.map((r, i) => (r.dead ? i : -1)).filter((i) => i >= 0);
    const live = this.ranks.map((_, i) => i).filter((i) => !dead.includes(i));
    // A live rank parks within one sleep slice of a collective, or when its current GPU work
    // ends; one that has not after a few seconds is dead or hung, and is replaced.
    const hung = await this.ctrl.waitParked(live, seq, Math.min(this.o.timeoutMs, PARK_GRACE_MS));
    if (this.disposed) return new DisposedError();
    const errors = new Map<number, Error>();
    for (const r of live.filter((i) => !hung.includes(i))) {
      const rank = this.ranks[r]!;
      const s = await Promise.race([alive(rank, rank.api.takeError()), new Promise<null>((ok) => setTimeout(() => ok(null), 2000))]).catch(() => null);
      if (!s) continue;
      const e = reviveError(s);
      errors.set(r, e instanceof WebGpuTpError ? e : new WorkerFailedError(r, e.message));
    }
    const lost = [...errors].filter(([, e]) => e instanceof DeviceLostError).map(([r]) => r);
    const rebuild = [...new Set([...dead, ...hung, ...lost])].sort((a, b) => a - b);
    const own = [...errors.values()].find((e) => !(e instanceof AbortedError) && !(e instanceof CollectiveTimeoutError) && !(e instanceof DeviceLostError));
    const error =
      dead.length ? new WorkerFailedError(dead[0]!, this.ranks[dead[0]!]!.dead!)
      : lost.length ? errors.get(lost[0]!)!
      : own ? own
      : hung.length ? new CollectiveTimeoutError('step', seq, hung, this.o.timeoutMs * 2)
      : [...errors.values()][0] ??
        // Every rank finished in the end, without an error: the step was only slower than the timeout.
        (timedOut
          ? new CollectiveTimeoutError('step', seq, live, this.o.timeoutMs * 2, undefined, 'The step was still computing: on a slow adapter pass a larger timeoutMs to createEngine, or a smaller maxRows')
          : new WorkerFailedError(0, `step #${seq} failed on ${world} rank(s) without an error`));
    this.recovery = this.recover(rebuild).catch((e: unknown) => {
      // Every later step fails with this, so "retry" is no remedy any more.
      const broken = e instanceof WebGpuTpError ? e : new WorkerFailedError(rebuild[0] ?? 0, `could not rebuild: ${(e as Error).message}`);
      this.broken = broken instanceof DisposedError ? broken : withRemedy(broken, 'The engine could not rebuild the failed rank: dispose() it and create a new engine');
    });
    return error;
  }

  /**
   * Replaces ranks `which` (new worker, new device, shard from the IndexedDB cache or else one
   * more pass over the source) and resets the group. Every other rank is parked meanwhile.
   */
  private async recover(which: number[]): Promise<void> {
    for (const r of which) {
      const old = this.ranks[r]!;
      // A rank that still answers frees its buffers first; a dead one took them with it.
      if (!old.dead) await Promise.race([old.api.dispose().catch(() => {}), old.died.catch(() => {}), new Promise((ok) => setTimeout(ok, 2000))]);
      old.kill('replaced after a failed step');
      old.api[Comlink.releaseProxy]();
      old.worker?.terminate();
    }
    if (which.length) {
      const rps = which.map((r) => this.o.plan.ranks[r]!);
      const [shards] = await Promise.all([loadShards(this.o, which, this.warnings), ...rps.map((rp) => this.spawnRank(rp))]);
      await Promise.all(rps.map(async (rp, i) => {
        if (this.disposed) throw new DisposedError();
        const buf = shards[i]!.bytes.buffer as ArrayBuffer;
        await alive(this.ranks[rp.rank]!, this.ranks[rp.rank]!.api.load(Comlink.transfer(buf, [buf])));
      }));
    }
    if (this.disposed) throw new DisposedError();
    this.ctrl.resetGroup();
    for (const r of which) await alive(this.ranks[r]!, this.ranks[r]!.api.start());
  }

  /**
   * @internal Fault injection for tests: terminates rank `r`'s worker. `announce` marks it dead
   * at once; without it the group learns only from timeouts, as after a silent crash.
   */
  _terminateRankForTest(r: number, announce: boolean): void {
    const rank = this.ranks[r];
    if (!rank) throw new RangeError(`no rank ${r}`);
    if (announce) rank.kill('its worker was terminated');
    rank.worker?.terminate();
  }

  /** @internal Fault injection for tests: destroys rank `r`'s GPU device, as a GPU reset would. */
  async _destroyDeviceForTest(r: number): Promise<void> {
    const rank = this.ranks[r];
    if (!rank) throw new RangeError(`no rank ${r}`);
    await rank.api._destroyDeviceForTest();
  }

  /** The adapter each rank's worker got, by name. */
  adapterNames(): string[] {
    return this.ranks.map((r) => r.info.adapter);
  }

  async stats(): Promise<RankStats[]> {
    await this.recovery;
    if (this.broken && this.tabHost) throw this.broken;
    return Promise.all(this.ranks.map((r) => alive(r, r.api.stats())));
  }

  async resetStats(): Promise<void> {
    await this.recovery;
    if (this.broken && this.tabHost) throw this.broken;
    await Promise.all(this.ranks.map((r) => alive(r, r.api.resetStats())));
  }

  /** Stops every worker and frees every device. Safe to call twice. */
  async dispose(): Promise<void> {
    if (this.disposed) return;
    this.disposed = true;
    this.ctrl.dispose();
    await Promise.all(
      this.ranks.map(async (r) => {
        if (!r) return;
        await Promise.race([r.api.dispose().catch(() => {}), r.died.catch(() => {}), new Promise((ok) => setTimeout(ok, 2000))]);
        // Releasing the proxy drops its pending calls unanswered; a rebuild awaiting one (and
        // everything awaiting the rebuild) must still settle, through the rank's death.
        r.kill('the engine was disposed', new DisposedError());
        r.api[Comlink.releaseProxy]();
        r.worker?.terminate();
      }),
    );
    this.tabHost?.close('the engine was disposed');
  }
}

/** `e` with `remedy` in place of its own (same class and code). */
function withRemedy(e: WebGpuTpError, remedy: string): WebGpuTpError {
  const s = serializeError(e);
  const message = e.remedy && e.message.endsWith(`. ${e.remedy}`) ? e.message.slice(0, -e.remedy.length - 2) : e.message;
  return reviveError({ ...s, message: `${message}. ${remedy}`, extra: { ...s.extra, remedy } }) as WebGpuTpError;
}

/** `p`, unless the rank's worker dies first: then its WorkerFailedError. */
function alive<T>(rank: Rank, p: Promise<T>): Promise<T> {
  return Promise.race([p, rank.died]);
}
