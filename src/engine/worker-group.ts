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
 * the message transport (group-steps.ts has both transports). A failed step there is not
 * rebuilt: the engine reports the culprit and stays broken (ARCHITECTURE.md, decision 20), a
 * `FailurePolicy` chosen once.
 */
import * as Comlink from 'comlink';
import { commandWords, encodeStep, installErrorTransfer, REPLY_BEST, REPLY_LOGITS, type RankApi, type RankOptions, type ShardInitResult } from '../protocol.js';
import type { ByteSource } from '../loader/source.js';
import type { ModelConfig } from '../model/config.js';
import type { Plan, RankPlan } from '../parallel/plan.js';
import type { StepBackend, StepRow } from './scheduler.js';
import type { RankShard, RankStats } from './types.js';
import {
  reviveError, serializeError, WorkerFailedError, AbortedError, WebGpuTpError, DeviceLostError, CollectiveTimeoutError, DisposedError,
} from '../errors.js';
import { loadShards, type LoadProgress } from './load-shards.js';
import { acceptTabs, TAB_REMEDY, type TabHost, type TabPeer } from './tab-host.js';
import { collectiveGroup } from './tab-link.js';
import { alive, MessageSteps, SharedSteps, type GroupRank, type GroupSteps, type Released } from './group-steps.js';
import { backendOf, type DeviceSpec } from '../gpu/core/adapter.js';
import { pickBest } from './vocab-argmax.js';
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

export interface WorkerGroupOptions {
  config: ModelConfig;
  plan: Plan;
  source: ByteSource;
  /** How every rank runs: the engine's options, resolved once. */
  rank: RankOptions;
  onProgress?: (p: LoadProgress) => void;
  signal?: AbortSignal;
  /** Keep each rank's packed shard in IndexedDB and reuse it (default true). */
  cache?: boolean;
  /** Per rank: the adapter its worker asks for (default adapter when absent). */
  devices?: (DeviceSpec | undefined)[];
  /** Per rank: its adapter's identity, so kernel tuning runs once per adapter. */
  adapterKeys?: string[];
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

interface Rank extends GroupRank {
  /** The joined tab a tab rank runs in. */
  tab?: TabPeer;
  info: ShardInitResult;
  /** Marks the rank dead and settles `died` (with `error`, default a WorkerFailedError). */
  kill(reason: string, error?: Error): void;
}

/** What a failed step leads to: chosen once per group, from where its ranks run. */
interface FailurePolicy {
  /** Replace the dead, hung and device-lost ranks (local workers); tabs cannot be re-opened from here, so their group stays broken. */
  rebuild: boolean;
  /** The remedy every error of a failed step carries (tabs: create a new engine). */
  remedy?: string;
  /**
   * A rank's own collective error naming a peer (gone, or silent) names the step before the
   * ranks that did not answer: a tab's worker is out of the host's sight, its peers are not.
   */
  peersBeforeHung: boolean;
}

const LOCAL: FailurePolicy = { rebuild: true, peersBeforeHung: false };
const TABS: FailurePolicy = { rebuild: false, remedy: TAB_REMEDY, peersBeforeHung: true };

export class WorkerGroup implements StepBackend {
  readonly maxRows: number;
  readonly contextLength: number;
  readonly maxSlots: number;
  private readonly words: Int32Array;
  private readonly maxLogitRows: number;
  private readonly logitStride: number;
  private disposed = false;
  /** The rebuild after a failed step; the next step waits for it. */
  private recovery: Promise<void> = Promise.resolve();
  /** Set when a rebuild failed, or a group of tab ranks failed a step: the group cannot run steps any more. */
  private broken?: Error;
  /** Load-time problems that did not stop the load (e.g. the cache was unavailable). */
  readonly warnings: string[] = [];
  /** The joined tabs, when some rank runs in another tab. */
  private tabHost?: TabHost;
  /** The transport: the control block, or (with tabs) messages; set before any rank spawns. */
  private steps?: GroupSteps;
  private policy: FailurePolicy = LOCAL;
  /** How each rank's shard arrived at load (a rebuild after a fault does not change it). */
  private readonly shards: RankShard[] = [];

  private constructor(
    private readonly o: WorkerGroupOptions,
    private readonly ranks: Rank[],
    maxLogitRows: number,
    logitStride: number,
  ) {
    this.maxRows = o.rank.maxRows;
    this.contextLength = o.rank.contextLength;
    this.maxSlots = o.rank.slots;
    this.words = new Int32Array(commandWords(o.rank.maxRows));
    this.maxLogitRows = maxLogitRows;
    this.logitStride = logitStride;
  }

  static async create(o: WorkerGroupOptions): Promise<WorkerGroup> {
    const { config: c, plan } = o;
    const world = plan.world;
    // Every sequence of a full batch may want its logits in the same step.
    const maxLogitRows = Math.min(o.rank.slots, o.rank.maxRows);
    const logitStride = Math.max(...plan.ranks.map((r) => r.vocab[1] - r.vocab[0]));
    const ranks: Rank[] = [];
    const group = new WorkerGroup(o, ranks, maxLogitRows, logitStride);
    const stepTimeoutMs = o.rank.timeoutMs * 2;
    try {
      const tabRanks = o.tabs ? plan.ranks.slice(world - o.tabs.count).map((rp) => rp.rank) : [];
      if (o.tabs) {
        group.tabHost = await acceptTabs({ id: o.tabs.id, ranks: tabRanks, world, joinTimeoutMs: o.tabs.joinTimeoutMs, silenceMs: o.rank.timeoutMs, signal: o.signal });
        group.steps = new MessageSteps(collectiveGroup(group.tabHost.session), stepTimeoutMs);
        group.policy = TABS;
      } else {
        group.steps = new SharedSteps(world, o.rank.maxRows * c.dim, o.rank.maxRows, maxLogitRows, logitStride, stepTimeoutMs);
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
            group.shards[rp.rank] = { bytes: rp.byteLength, fromCache: r.fromCache };
            o.onProgress?.({ rank: rp.rank, world: plan.world, loadedBytes: rp.byteLength, totalBytes: rp.byteLength, fromCache: r.fromCache });
            return;
          }
          const i = local.indexOf(rp);
          const buf = shards[i]!.bytes.buffer as ArrayBuffer;
          await alive(ranks[rp.rank]!, ranks[rp.rank]!.api.load(Comlink.transfer(buf, [buf])));
          group.shards[rp.rank] = { bytes: rp.byteLength, fromCache: shards[i]!.fromCache };
          o.onProgress?.({ rank: rp.rank, world: plan.world, loadedBytes: rp.byteLength, totalBytes: rp.byteLength, fromCache: shards[i]!.fromCache });
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
      worker, tab, api: Comlink.wrap<RankApi>(tab ? tab.endpoint : worker!), died,
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
    rank.info = await alive(rank, rank.api.init({
      ...o.rank, ...this.steps!.init, rank: rp.rank, world: plan.world, config: c, plan: rp,
      logitStride: this.logitStride, maxLogitRows: this.maxLogitRows,
      // A tab's adapter is its own: it measures its kernels itself.
      choices: tab ? undefined : tunedChoices.get(key), device: o.devices?.[rp.rank],
    }));
    if (!tab && !tunedChoices.has(key)) tunedChoices.set(key, rank.info.choices);
    return rank;
  }

  /** The logits rows `step` returns, reused: each is valid until the next step. */
  private readonly rowsOut: Float32Array[] = [];

  async step(rows: StepRow[], logitsFor: number[]): Promise<Float32Array[]> {
    const rowsOf = await this.run(rows, logitsFor, REPLY_LOGITS);
    // Each rank's logits are its vocabulary slice; the full row is their concatenation, into
    // rows kept across steps (a fresh 32000-float row costs ~10x its copy on the main thread).
    const c = this.o.config;
    return logitsFor.map((_, j) => {
      const out = (this.rowsOut[j] ??= new Float32Array(c.vocabSize));
      for (const rp of this.o.plan.ranks) {
        const n = rp.vocab[1] - rp.vocab[0];
        out.set(rowsOf(rp.rank).subarray(j * n, (j + 1) * n), rp.vocab[0]);
      }
      return out;
    });
  }

  /** A greedy step: each rank answers with its slice's best, and the logits never leave the ranks. */
  async stepArgmax(rows: StepRow[], logitsFor: number[]): Promise<number[]> {
    const rowsOf = await this.run(rows, logitsFor, REPLY_BEST);
    return logitsFor.map((_, j) => pickBest(rowsOf, this.ranks.length, j));
  }

  /** Runs one step on every rank; resolves with each rank's answer, or throws the step's typed error. */
  private async run(rows: StepRow[], logitsFor: number[], reply: number): Promise<(rank: number) => Float32Array> {
    await this.recovery;
    if (this.disposed) throw new DisposedError();
    if (this.broken) throw this.broken;
    if (logitsFor.length > this.maxLogitRows) throw new RangeError(`at most ${this.maxLogitRows} logit rows per step`);
    const live = encodeStep(this.words, this.maxRows, {
      tokens: rows.map((r) => r.token),
      positions: rows.map((r) => r.position),
      slots: rows.map((r) => r.slot),
      logitRows: logitsFor,
      reply,
    });
    const outcome = await this.steps!.run(this.words.subarray(0, live), this.ranks);
    if (!outcome.ok) throw await this.fail(outcome.seq, outcome.timedOut);
    return outcome.rowsOf;
  }

  /**
   * A step failed. Releases the other ranks from their collectives, waits until every live
   * rank is out of them (parked, or its call settled), names the culprit, and then, by the
   * group's policy, starts rebuilding the ranks that are dead, hung or lost their device (the
   * next step waits for that), or leaves the group broken. Returns the error every sequence of
   * the failed step gets.
   */
  private async fail(seq: number, timedOut: boolean): Promise<Error> {
    if (this.disposed) return new DisposedError();
    const live = this.ranks.map((r, i) => (r.dead ? -1 : i)).filter((i) => i >= 0);
    const released = await this.steps!.release(this.ranks, live, seq, Math.min(this.o.rank.timeoutMs, PARK_GRACE_MS));
    if (this.disposed) return new DisposedError();
    const error = await this.culprit(seq, timedOut, live, released);
    const p = this.policy;
    if (!p.rebuild) {
      const culprit = error instanceof WebGpuTpError && p.remedy ? withRemedy(error, p.remedy) : error;
      this.broken = new WorkerFailedError(
        (culprit as { rank?: number }).rank ?? (culprit as { missingRanks?: number[] }).missingRanks?.[0] ?? 0,
        `an earlier step failed, and ranks in other tabs are not rebuilt (${culprit.message})`, p.remedy,
      );
      return culprit;
    }
    const dead = this.ranks.map((r, i) => (r.dead ? i : -1)).filter((i) => i >= 0);
    const lost = [...released.errors].filter(([, e]) => e instanceof DeviceLostError).map(([r]) => r);
    const rebuild = [...new Set([...dead, ...released.hung, ...lost])].sort((a, b) => a - b);
    this.recovery = this.recover(rebuild).catch((e: unknown) => {
      // Every later step fails with this, so "retry" is no remedy any more.
      const broken = e instanceof WebGpuTpError ? e : new WorkerFailedError(rebuild[0] ?? 0, `could not rebuild: ${(e as Error).message}`);
      this.broken = broken instanceof DisposedError ? broken : withRemedy(broken, 'The engine could not rebuild the failed rank: dispose() it and create a new engine');
    });
    return error;
  }

  /**
   * The error that names a failed step, first match: a dead rank's (its worker's
   * `WorkerFailedError`, or its tab's error), a `DeviceLostError`, a rank's own typed error, a
   * peer a rank's collective named as gone (and, by policy, as silent), a timeout naming the
   * ranks that never got out of the step, any error a rank gave; else the step was only slower
   * than the timeout, or failed without a word.
   */
  private async culprit(seq: number, timedOut: boolean, live: number[], { hung, errors }: Released): Promise<Error> {
    const dead = this.ranks.findIndex((r) => r.dead);
    if (dead >= 0) return this.ranks[dead]!.died.catch((e: Error) => e);
    const all = [...errors.values()];
    const lost = all.find((e) => e instanceof DeviceLostError);
    const own = all.find((e) => e instanceof WebGpuTpError && !(e instanceof AbortedError || e instanceof CollectiveTimeoutError || e instanceof DeviceLostError || e instanceof WorkerFailedError));
    const gone = all.find((e) => e instanceof WorkerFailedError);
    const silent = all.find((e) => e instanceof CollectiveTimeoutError);
    const remedy = this.policy.remedy;
    const stepTimeout = this.o.rank.timeoutMs * 2;
    const named = lost ?? own ?? gone ?? (this.policy.peersBeforeHung ? silent : undefined);
    if (named) return named;
    if (hung.length) return new CollectiveTimeoutError('step', seq, hung, stepTimeout, undefined, remedy);
    if (all.length) return all[0]!;
    // Every rank finished in the end, without an error: the step was only slower than the timeout.
    return timedOut
      ? new CollectiveTimeoutError('step', seq, live, stepTimeout, undefined, remedy ?? 'The step was still computing: on a slow adapter pass a larger timeoutMs to createEngine, or a smaller maxRows')
      : new WorkerFailedError(0, `step #${seq} failed on ${this.ranks.length} rank(s) without an error`, remedy);
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
    this.steps!.reset();
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
    if (this.broken && !this.policy.rebuild) throw this.broken;
    return Promise.all(this.ranks.map(async (r, i) => ({ ...(await alive(r, r.api.stats())), backend: backendOf(this.o.devices?.[i]), shard: this.shards[i]! })));
  }

  async resetStats(): Promise<void> {
    await this.recovery;
    if (this.broken && !this.policy.rebuild) throw this.broken;
    await Promise.all(this.ranks.map((r) => alive(r, r.api.resetStats())));
  }

  /** Stops every worker and frees every device. Safe to call twice. */
  async dispose(): Promise<void> {
    if (this.disposed) return;
    this.disposed = true;
    this.steps?.dispose();
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
