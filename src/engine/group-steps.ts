/**
 * How the main thread runs a step on every rank of a worker group, and how it releases them
 * when a step fails, for either transport:
 *
 * - shared memory (`SharedSteps`): the step's words go into the control block and the doorbell
 *   rings; each rank writes its logits into its region of a shared buffer and answers with a
 *   status. After a failure, `abort()` makes every rank leave its collectives and park.
 * - messages (`MessageSteps`, a group with ranks in other tabs): each rank gets the step as a
 *   Comlink call that returns its logits rows; after a failure every live rank is told to
 *   leave its collective (`abortStep`) and its call settles.
 *
 * worker-group.ts drives both through `GroupSteps` and names the culprit once.
 */
import type * as Comlink from 'comlink';
import { ControlBlock, createCollectiveMemory, type CollectiveBuffer } from '../collective/index.js';
import { reviveError, WebGpuTpError, WorkerFailedError } from '../errors.js';
import { commandWords, STATUS_OK, type RankApi, type ShardInit } from '../protocol.js';

/** One rank as the group drives it. */
export interface GroupRank {
  /** Absent for a rank in another tab (its worker lives there). */
  worker?: Worker;
  api: Comlink.Remote<RankApi>;
  /** Set when the worker raised an uncaught error, failed to load, or was terminated. */
  dead?: string;
  /** Settles when the worker dies: every control call races it, so none can hang. */
  died: Promise<never>;
}

/** How one step ended: every rank's logits rows (packed at its slice width), or a failure. */
export type StepOutcome = { ok: true; rowsOf(rank: number): Float32Array } | { ok: false; seq: number; timedOut: boolean };

/** How the live ranks of a failed step ended up: those that never settled, and the others' errors. */
export interface Released {
  hung: number[];
  errors: Map<number, Error>;
}

export interface GroupSteps {
  /** What each rank's init needs to reach the group. */
  readonly init: Pick<ShardInit, 'shared' | 'messages'>;
  /** Runs one step (its live command words) on every rank. */
  run(words: Int32Array, ranks: GroupRank[]): Promise<StepOutcome>;
  /** After a failed step: releases the `live` ranks from their collectives and waits up to `graceMs` for them. */
  release(ranks: GroupRank[], live: number[], seq: number, graceMs: number): Promise<Released>;
  /** After the failed ranks are rebuilt: the group may run steps again. */
  reset(): void;
  dispose(): void;
}

/** `p`, unless the rank's worker dies first: then its WorkerFailedError. */
export function alive<T>(rank: GroupRank, p: Promise<T>): Promise<T> {
  return Promise.race([p, rank.died]);
}

/** Steps through the control block of a collective buffer shared by every rank. */
export class SharedSteps implements GroupSteps {
  readonly init: Pick<ShardInit, 'shared' | 'messages'>;
  private readonly ctrl: ControlBlock;
  private readonly logits: Float32Array;
  private readonly region: number;

  constructor(world: number, slotFloats: number, maxRows: number, maxLogitRows: number, logitStride: number, private readonly stepTimeoutMs: number) {
    const collective: CollectiveBuffer = createCollectiveMemory({ world, slotFloats, commandWords: commandWords(maxRows) });
    const logits = new SharedArrayBuffer(world * maxLogitRows * logitStride * 4);
    this.ctrl = new ControlBlock(collective);
    this.logits = new Float32Array(logits);
    this.region = maxLogitRows * logitStride;
    this.init = { shared: { collective, logits } };
  }

  async run(words: Int32Array, ranks: GroupRank[]): Promise<StepOutcome> {
    const seq = this.ctrl.postStep(words);
    // A dead worker fails the step at once, and a failed rank as soon as it reports, instead
    // of after the others time out in the collective it never joined.
    const outcome = await Promise.race([
      this.ctrl.waitStep(seq, this.stepTimeoutMs),
      ...ranks.map((r) => r.died.catch(() => 'dead' as const)),
    ]);
    if (outcome !== 'done' || ranks.some((_, r) => this.ctrl.status(r) !== STATUS_OK)) return { ok: false, seq, timedOut: outcome === 'timeout' };
    // A rank writes its rows packed at its own slice width, from the start of its region.
    return { ok: true, rowsOf: (r) => this.logits.subarray(r * this.region, (r + 1) * this.region) };
  }

  async release(ranks: GroupRank[], live: number[], seq: number, graceMs: number): Promise<Released> {
    this.ctrl.abort();
    // A live rank parks within one sleep slice of a collective, or when its current GPU work
    // ends; one that has not after a few seconds is dead or hung, and is replaced.
    const hung = await this.ctrl.waitParked(live, seq, graceMs);
    const errors = new Map<number, Error>();
    for (const r of live.filter((i) => !hung.includes(i))) {
      const rank = ranks[r]!;
      const s = await Promise.race([alive(rank, rank.api.takeError()), new Promise<null>((ok) => setTimeout(() => ok(null), 2000))]).catch(() => null);
      if (!s) continue;
      const e = reviveError(s);
      errors.set(r, e instanceof WebGpuTpError ? e : new WorkerFailedError(r, e.message));
    }
    return { hung, errors };
  }

  reset(): void {
    this.ctrl.resetGroup();
  }

  dispose(): void {
    this.ctrl.dispose();
  }
}

/** Steps as Comlink calls, collectives over the message transport group `group`. */
export class MessageSteps implements GroupSteps {
  readonly init: Pick<ShardInit, 'shared' | 'messages'>;
  private calls: Promise<Float32Array>[] = [];
  private seq = 0;

  constructor(group: string, private readonly stepTimeoutMs: number) {
    this.init = { messages: { group } };
  }

  async run(words: Int32Array, ranks: GroupRank[]): Promise<StepOutcome> {
    const seq = ++this.seq;
    // A copy: the group's words are rewritten for the next step.
    const own = words.slice();
    const calls = (this.calls = ranks.map((r) => alive(r, r.api.step(own))));
    let timer: ReturnType<typeof setTimeout> | undefined;
    const outcome = await Promise.race([
      Promise.all(calls).catch(() => 'failed' as const),
      new Promise<'timeout'>((ok) => (timer = setTimeout(() => ok('timeout'), this.stepTimeoutMs))),
    ]);
    clearTimeout(timer);
    if (typeof outcome === 'string') return { ok: false, seq, timedOut: outcome === 'timeout' };
    return { ok: true, rowsOf: (r) => outcome[r]! };
  }

  async release(ranks: GroupRank[], live: number[], seq: number, graceMs: number): Promise<Released> {
    for (const r of live) ranks[r]!.api.abortStep(`step ${seq} failed on another rank`).catch(() => {});
    const settled = await Promise.all(live.map((r) => Promise.race([
      this.calls[r]!.then(() => null, (e: unknown) => (e instanceof Error ? e : new Error(String(e)))),
      new Promise<'hung'>((ok) => setTimeout(() => ok('hung'), graceMs)),
    ])));
    const hung: number[] = [];
    const errors = new Map<number, Error>();
    settled.forEach((e, k) => {
      const r = live[k]!;
      if (ranks[r]!.dead) return;
      if (e === 'hung') hung.push(r);
      else if (e) errors.set(r, e);
    });
    return { hung, errors };
  }

  /** Never called: a message group is not rebuilt. */
  reset(): void {}

  dispose(): void {}
}
