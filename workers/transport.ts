/**
 * How a rank is connected to its group: its `Communicator` and where its steps come from.
 *
 * - Shared memory: the scheduler writes a step's words into the control block and rings the
 *   doorbell; the rank wakes through `Atomics.waitAsync`, writes its logits into its region of
 *   the shared logits buffer and answers with a status. An aborted rank parks until the group
 *   is reset (ARCHITECTURE.md decision 12).
 * - Messages (a group with a rank in another tab): steps are Comlink calls (`post`) that resolve
 *   with the rank's logits rows, and the collectives go over BroadcastChannel links.
 *
 * The shard worker runs one step loop over either (`StepSource`).
 */
import { attachCommunicator, ControlBlock, MessageCommunicator, broadcastLinks, defaultSpin, type Communicator } from '../src/collective/index.js';
import { isCpuSpec } from '../src/gpu/core/adapter.js';
import { AbortedError, DisposedError, InvalidArgumentError } from '../src/errors.js';
import { STATUS_FAILED, STATUS_OK, STATUS_PARKED, type ShardInit } from '../src/protocol.js';

/** One step as a rank runs it, whichever way it came. */
export interface RankStep {
  words: Int32Array;
  /** Where this rank's n floats of logits rows go. */
  logits(n: number): Float32Array;
  /** The step ran; `logits` holds this rank's rows. */
  done(logits: Float32Array): void;
  /** The step failed with `error` (already typed); resolves once the rank may take the next step. */
  failed(error: unknown): Promise<void>;
}

/** Where a rank's steps come from. */
export interface StepSource {
  /** The next step, or null once the rank stops (disposed, or its group is gone). */
  next(): Promise<RankStep | null>;
  /** Messages: a step posted by the host's call; its promise is the rank's logits rows. */
  post?(words: Int32Array): Promise<Float32Array>;
  close(): void;
}

export interface RankTransport {
  comm: Communicator;
  steps: StepSource;
  /** Messages: leaves the collective this rank may wait in (over shared memory the main thread aborts the control block). */
  abort(reason: string): void;
  close(): void;
}

/** The transport `o` asks for; `slotFloats` is the longest vector the rank all-reduces. */
export function openTransport(o: ShardInit, slotFloats: number): RankTransport {
  if (o.messages) {
    const comm = new MessageCommunicator(broadcastLinks(o.messages.group, o.rank, o.world), o.rank, o.world, { timeoutMs: o.timeoutMs, slotFloats });
    const steps = new CallSteps();
    return { comm, steps, abort: (reason) => comm.abort(reason), close: () => (steps.close(), comm.close()) };
  }
  if (!o.shared) throw new InvalidArgumentError('a shard worker needs a collective buffer or a message group');
  const spin = o.spin ?? defaultSpin(isCpuSpec(o.device), o.world, globalThis.navigator?.hardwareConcurrency ?? 1);
  const comm = attachCommunicator(o.shared.collective, o.rank, { spin, timeoutMs: o.timeoutMs });
  const region = o.maxLogitRows * o.logitStride;
  const logits = new Float32Array(o.shared.logits, o.rank * region * 4, region);
  const steps = new DoorbellSteps(new ControlBlock(o.shared.collective), o.rank, logits);
  return { comm, steps, abort: () => {}, close: () => (steps.close(), comm.close()) };
}

/** Steps through the control block's doorbell. */
class DoorbellSteps implements StepSource {
  private last: number;
  private epoch: number;
  private stopped = false;

  constructor(private readonly ctrl: ControlBlock, private readonly rank: number, private readonly region: Float32Array) {
    this.last = ctrl.stepSeq;
    this.epoch = ctrl.epoch;
  }

  async next(): Promise<RankStep | null> {
    while (!this.stopped) {
      let step;
      try {
        step = await this.ctrl.waitForStep(this.last);
      } catch (e) {
        if (e instanceof DisposedError) return null;
        if (e instanceof AbortedError) {
          this.ctrl.park(this.rank);
          if (!(await this.awaitReset())) return null;
          continue;
        }
        throw e;
      }
      if (!step) continue;
      const seq = step.seq;
      this.last = seq;
      return {
        words: step.words,
        logits: (n) => this.region.subarray(0, n),
        done: () => this.ctrl.signalDone(this.rank, seq, STATUS_OK),
        failed: async (err) => {
          // An aborted rank is out of every collective: it parks until the group is reset.
          const aborted = err instanceof AbortedError;
          this.ctrl.signalDone(this.rank, seq, aborted ? STATUS_PARKED : STATUS_FAILED);
          if (aborted && !(await this.awaitReset())) this.stopped = true;
        },
      };
    }
    return null;
  }

  /** Waits for the main thread's group reset; false when the group was disposed instead. */
  private async awaitReset(): Promise<boolean> {
    const r = await this.ctrl.waitForReset(this.epoch).catch(() => null);
    if (!r) return false;
    this.epoch = r.epoch;
    this.last = r.stepSeq;
    return true;
  }

  close(): void {
    this.stopped = true;
  }
}

/** Steps as the host's calls, taken one at a time in the order they came. */
class CallSteps implements StepSource {
  private readonly queue: RankStep[] = [];
  private waiter?: (s: RankStep | null) => void;
  private closed = false;

  post(words: Int32Array): Promise<Float32Array> {
    if (this.closed) return Promise.reject(new DisposedError());
    return new Promise((resolve, reject) => {
      const step: RankStep = {
        words,
        logits: (n) => new Float32Array(n),
        done: resolve,
        failed: async (e) => reject(e),
      };
      const w = this.waiter;
      this.waiter = undefined;
      if (w) w(step);
      else this.queue.push(step);
    });
  }

  next(): Promise<RankStep | null> {
    if (this.closed) return Promise.resolve(null);
    const s = this.queue.shift();
    if (s) return Promise.resolve(s);
    return new Promise((r) => (this.waiter = r));
  }

  close(): void {
    this.closed = true;
    this.waiter?.(null);
    this.waiter = undefined;
    for (const s of this.queue.splice(0)) void s.failed(new DisposedError());
  }
}
