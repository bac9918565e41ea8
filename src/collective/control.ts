/**
 * The control block: how the main thread's scheduler drives the workers without messages.
 *
 *   main thread                              worker r
 *   seq = ctrl.postStep(words)        →      { seq, words } = await ctrl.waitForStep(lastSeq)
 *                                            ... run the step (collectives block here) ...
 *   await ctrl.waitAllDone(seq)       ←      ctrl.signalDone(r, seq)
 *
 * Everything that can wait here uses `Atomics.waitAsync`, so neither the main thread nor an idle
 * worker ever blocks: the worker's event loop stays free for mapAsync, device.lost and Comlink.
 * Post a step only after the previous one is done (the command words are overwritten).
 *
 * Abort and dispose are flags that every wait checks, in the control block and in collectives.
 * After a rank dies (a CollectiveTimeoutError names it) or an abort, the group is out of step:
 * terminate the dead rank, wait until the others are idle (done or failed), call `resetGroup()`,
 * and attach the rebuilt rank. Survivors re-sync their collective counters on their next call.
 */
import { AbortedError, CollectiveTimeoutError, DisposedError, InvalidArgumentError } from '../errors.js';
import {
  ABORT, ARRIVED, CMD_BASE, DISPOSE, DONE_SEQ, DONE_STATUS, DOORBELL, EPOCH, LINE_WORDS, PROGRESS, REPLY_BASE, REPLY_WORDS,
  STEP_SEQ, readLayout, type Layout, collectiveBytes, type CollectiveBuffer,
} from './layout.js';
import { DEFAULT_TIMEOUT_MS } from './shared-group.js';
import { STATUS_OK, STATUS_PARKED } from '../protocol.js';

/** Step sequence number at the last reset, kept in the flag line. */
const RESET_SEQ = 2 * LINE_WORDS + 3;

/** How often a wait for several ranks re-checks the ones it is not sleeping on (ms). */
const POLL_MS = 20;

type WaitAsyncResult = { async: false; value: 'not-equal' | 'timed-out' } | { async: true; value: Promise<'ok' | 'timed-out'> };
interface AtomicsWithWaitAsync {
  waitAsync(ta: Int32Array, index: number, value: number, timeoutMs?: number): WaitAsyncResult;
}

/** Resolves when `f[i]` may no longer be `v`, or after `timeoutMs`. Never blocks the thread. */
async function waitAsync(f: Int32Array, i: number, v: number, timeoutMs: number): Promise<void> {
  const r = (Atomics as unknown as AtomicsWithWaitAsync).waitAsync(f, i, v, timeoutMs);
  if (r.async) await r.value;
}

/** A posted step: its sequence number and its command words (valid until the next post). */
export interface Step {
  seq: number;
  words: Int32Array;
}

/** What `waitForReset` resolves to: the new epoch and the last step posted before the reset. */
export interface ResetInfo {
  epoch: number;
  stepSeq: number;
}

export class ControlBlock {
  readonly world: number;
  readonly commandWords: number;
  private readonly f: Int32Array;
  private readonly layout: Layout;
  private readonly commands: Int32Array;

  constructor(buf: CollectiveBuffer) {
    const sab = collectiveBytes(buf);
    this.layout = readLayout(sab);
    this.world = this.layout.world;
    this.commandWords = this.layout.commandWords;
    this.f = new Int32Array(sab, 0, this.layout.dataOffset / 4);
    this.commands = this.f.subarray(CMD_BASE, CMD_BASE + this.commandWords);
  }

  /** The sequence number of the last posted step (0 before the first). */
  get stepSeq(): number {
    return Atomics.load(this.f, STEP_SEQ);
  }

  get epoch(): number {
    return Atomics.load(this.f, EPOCH);
  }

  get aborted(): boolean {
    return Atomics.load(this.f, ABORT) !== 0;
  }

  get disposed(): boolean {
    return Atomics.load(this.f, DISPOSE) !== 0;
  }

  // ---------------------------------------------------------------- main thread

  /**
   * Main thread: publishes a step. Writes `words` (the rest of the command zeroed), bumps the
   * step sequence and wakes the workers. Returns the step's sequence number.
   */
  postStep(words: ArrayLike<number>): number {
    if (this.disposed) throw new DisposedError();
    if (words.length > this.commandWords) {
      throw new InvalidArgumentError(`postStep: expected at most ${this.commandWords} command words, got ${words.length}`);
    }
    this.commands.set(words);
    this.commands.fill(0, words.length);
    Atomics.store(this.f, ARRIVED, 0);
    const seq = Atomics.add(this.f, STEP_SEQ, 1) + 1;
    this.ring();
    return seq;
  }

  /**
   * Main thread: resolves when every rank has signalled step `seq` done. Throws
   * `CollectiveTimeoutError('step', seq, ranks)` naming the ranks that had not finished after
   * `timeoutMs`, and `DisposedError` if the group is disposed meanwhile.
   */
  async waitAllDone(seq: number, timeoutMs: number = DEFAULT_TIMEOUT_MS): Promise<void> {
    const deadline = performance.now() + timeoutMs;
    for (let j = 0; j < this.world; j++) {
      const i = this.doneIndex(j) + DONE_SEQ;
      for (;;) {
        const v = Atomics.load(this.f, i);
        if (((v - seq) | 0) >= 0) break;
        if (this.disposed) throw new DisposedError();
        const left = deadline - performance.now();
        if (left <= 0) throw new CollectiveTimeoutError('step', seq, this.notDone(seq), timeoutMs);
        await waitAsync(this.f, i, v, left);
      }
    }
  }

  /**
   * Main thread: like `waitAllDone`, but returns `'failed'` as soon as any rank signals step
   * `seq` with a non-OK status (the others may be stuck in a collective waiting for it), and
   * `'timeout'` instead of throwing. Never blocks.
   */
  async waitStep(seq: number, timeoutMs: number): Promise<'done' | 'failed' | 'timeout'> {
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      if (this.disposed) throw new DisposedError();
      // Read the arrivals before the check: a rank that finishes after it changes them, so the
      // wait below returns at once instead of sleeping through its signal.
      const arrived = Atomics.load(this.f, ARRIVED);
      let pending = false;
      for (let j = 0; j < this.world; j++) {
        const i = this.doneIndex(j);
        if (((Atomics.load(this.f, i + DONE_SEQ) - seq) | 0) < 0) pending = true;
        else if (Atomics.load(this.f, i + DONE_STATUS) !== STATUS_OK) return 'failed';
      }
      if (!pending) return 'done';
      const left = deadline - performance.now();
      if (left <= 0) return 'timeout';
      // Only the last rank (or a failed one) wakes this wait: one main-thread wake-up a step, not
      // one per rank; the poll is a safety net for a signal from before the post's reset.
      await waitAsync(this.f, ARRIVED, arrived, Math.min(left, POLL_MS));
    }
  }

  /**
   * Main thread, after `abort()`: waits until each of `ranks` has parked (signalled
   * `STATUS_PARKED` for step `seq` or later). Returns the ranks that did not within `timeoutMs`:
   * dead or hung, they must be replaced before `resetGroup()`.
   */
  async waitParked(ranks: readonly number[], seq: number, timeoutMs: number): Promise<number[]> {
    const deadline = performance.now() + timeoutMs;
    const parked = (j: number) => {
      const i = this.doneIndex(j);
      return ((Atomics.load(this.f, i + DONE_SEQ) - seq) | 0) >= 0 && Atomics.load(this.f, i + DONE_STATUS) === STATUS_PARKED;
    };
    for (;;) {
      const left = ranks.filter((j) => !parked(j));
      const ms = deadline - performance.now();
      if (left.length === 0 || ms <= 0 || this.disposed) return left;
      const i = this.doneIndex(left[0]!) + DONE_SEQ;
      await waitAsync(this.f, i, Atomics.load(this.f, i), Math.min(ms, POLL_MS));
    }
  }

  /** Ranks that have not signalled step `seq` done. */
  notDone(seq: number): number[] {
    const out: number[] = [];
    for (let j = 0; j < this.world; j++) {
      if (((Atomics.load(this.f, this.doneIndex(j) + DONE_SEQ) - seq) | 0) < 0) out.push(j);
    }
    return out;
  }

  /** The status rank `rank` gave with its last `signalDone` (0 = ok; the engine defines others). */
  status(rank: number): number {
    return Atomics.load(this.f, this.doneIndex(rank) + DONE_STATUS);
  }

  /**
   * Rank `rank`'s reply words (e.g. a sampled token): the worker writes them before
   * `signalDone`, the main thread reads them after `waitAllDone`.
   */
  reply(rank: number): Int32Array {
    const i = this.doneIndex(rank) + REPLY_BASE;
    return this.f.subarray(i, i + REPLY_WORDS);
  }

  /** Main thread: every wait, here and in collectives, throws `AbortedError` until `resetGroup()`. */
  abort(): void {
    Atomics.store(this.f, ABORT, 1);
    this.wakeAll();
  }

  /** Main thread: every wait throws `DisposedError`, for good. */
  dispose(): void {
    Atomics.store(this.f, DISPOSE, 1);
    this.wakeAll();
  }

  /**
   * Main thread: brings the group back in step after a dead rank or an abort. Call it only when
   * no live rank is inside a collective (all are done, failed, or waiting for a step), after
   * terminating the dead rank. Zeroes every rank's collective counter, clears abort and bumps the
   * epoch; each rank restarts its counters on its next collective, and a rank attached afterwards
   * starts from zero. Returns the new epoch.
   */
  resetGroup(): number {
    for (let j = 0; j < this.world; j++) Atomics.store(this.f, this.progressIndex(j) + PROGRESS, 0);
    Atomics.store(this.f, RESET_SEQ, Atomics.load(this.f, STEP_SEQ));
    Atomics.store(this.f, ABORT, 0);
    const epoch = Atomics.add(this.f, EPOCH, 1) + 1;
    this.wakeAll();
    return epoch;
  }

  // ---------------------------------------------------------------- worker

  /**
   * Worker: resolves with the first step after `lastSeq`, via `Atomics.waitAsync` (the event loop
   * stays free). Throws `AbortedError`/`DisposedError` as soon as either flag is set. Resolves
   * `null` if no step came within `timeoutMs` (default: wait for ever; being idle is no error).
   */
  async waitForStep(lastSeq: number, timeoutMs = Infinity): Promise<Step | null> {
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      // Read the doorbell first: any event after this read changes it, so the wait cannot miss it.
      const bell = Atomics.load(this.f, DOORBELL);
      if (this.disposed) throw new DisposedError();
      if (this.aborted) throw new AbortedError('the step was aborted');
      const seq = Atomics.load(this.f, STEP_SEQ);
      if (((seq - lastSeq) | 0) > 0) return { seq, words: this.commands };
      const left = deadline - performance.now();
      if (left <= 0) return null;
      await waitAsync(this.f, DOORBELL, bell, left);
    }
  }

  /**
   * Worker: after an `AbortedError`, tells the main thread that rank `rank` has left every
   * collective and waits for the reset (see `waitParked`). Call `waitForReset` next.
   */
  park(rank: number): void {
    this.signalDone(rank, Atomics.load(this.f, STEP_SEQ), STATUS_PARKED);
  }

  /** Worker: marks step `seq` done for rank `rank` (after writing any reply words). */
  signalDone(rank: number, seq: number, status = 0): void {
    const i = this.doneIndex(rank);
    Atomics.store(this.f, i + DONE_STATUS, status);
    Atomics.store(this.f, i + DONE_SEQ, seq);
    Atomics.notify(this.f, i + DONE_SEQ);
    if (Atomics.add(this.f, ARRIVED, 1) + 1 >= this.world || status !== STATUS_OK) Atomics.notify(this.f, ARRIVED);
  }

  /**
   * Worker: after an `AbortedError`, resolves once the main thread has reset the group past
   * `epoch`. Continue with `waitForStep(info.stepSeq)`: steps posted before the reset are void.
   */
  async waitForReset(epoch: number, timeoutMs = Infinity): Promise<ResetInfo | null> {
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      const bell = Atomics.load(this.f, DOORBELL);
      if (this.disposed) throw new DisposedError();
      const e = Atomics.load(this.f, EPOCH);
      if (e !== epoch) return { epoch: e, stepSeq: Atomics.load(this.f, RESET_SEQ) };
      const left = deadline - performance.now();
      if (left <= 0) return null;
      await waitAsync(this.f, DOORBELL, bell, left);
    }
  }

  // ---------------------------------------------------------------- internals

  private doneIndex(rank: number): number {
    if (!Number.isInteger(rank) || rank < 0 || rank >= this.world) {
      throw new InvalidArgumentError(`rank must be in [0, ${this.world}), got ${rank}`);
    }
    return this.layout.doneBase + rank * LINE_WORDS;
  }

  private progressIndex(rank: number): number {
    return this.layout.progressBase + rank * LINE_WORDS;
  }

  private ring(): void {
    Atomics.add(this.f, DOORBELL, 1);
    Atomics.notify(this.f, DOORBELL);
  }

  /** Wakes every waiter of every kind so that it re-checks the flags. */
  private wakeAll(): void {
    this.ring();
    for (let j = 0; j < this.world; j++) {
      Atomics.notify(this.f, this.progressIndex(j) + PROGRESS);
      Atomics.notify(this.f, this.doneIndex(j) + DONE_SEQ);
    }
  }
}
