/**
 * The synchronisation a SharedArrayBuffer group's collectives are written with (all-reduce.ts,
 * broadcast.ts, barrier.ts, all-gather.ts); `SharedCommunicator` puts the `Communicator`
 * interface on top. Every rank must call the same collectives in the same order with the same
 * lengths (SPMD), as with NCCL.
 *
 * Synchronisation: each rank owns one progress counter (its own 128-byte line) that only grows.
 * All ranks count the same "ticks" per collective, so "rank j has finished phase p of collective
 * k" is simply `progress[j] ≥ tick`. Counters, not booleans: a late or restarted rank can never
 * satisfy a wait of a later collective with a stale flag. A rank waits by spinning a little, then
 * `Atomics.wait` (never on the main thread, where it is not allowed). A rank writing a tick only
 * calls `Atomics.notify` when someone sleeps on its counter (the sleeper count in the same line).
 */
import { AbortedError, CollectiveTimeoutError, DisposedError, InvalidArgumentError } from '../errors.js';
import {
  ABORT, DISPOSE, EPOCH, LINE_WORDS, PROGRESS, SLEEPERS, chunkBounds, collectiveBytes, isMemory, readLayout, summationOrders,
  type CollectiveBuffer, type Layout,
} from './layout.js';
import { SimdSum } from './simd-sum.js';

export interface SharedGroupOptions {
  /**
   * Times a waiting rank re-reads a counter before it sleeps in `Atomics.wait`. Spinning saves
   * the wake-up latency (~5–50 µs) when the other rank is a few µs behind, and wastes a core when
   * ranks outnumber cores. Default `DEFAULT_SPIN`.
   */
  spin?: number;
  /** Longest a collective may wait for another rank before `CollectiveTimeoutError`. Default 10 000. */
  timeoutMs?: number;
  /** Shrink the spin after spins that fail (default true); false spins `spin` times on every wait. */
  adaptiveSpin?: boolean;
}

/**
 * Spin iterations before sleeping (one iteration ≈ one Atomics.load, a few ns). Chosen by the
 * end-to-end decode benchmark: ranks wait on each other's readback, far longer than any spin, so
 * the spin hardly matters there; on 2 cores shared with SwiftShader a long spin only takes CPU
 * from the rank being waited for.
 */
export const DEFAULT_SPIN = 2000;
/**
 * The spin of a CPU rank whose group has a core per rank (~100 µs of loads): the rank that
 * reaches an all-reduce first keeps its core until the other's partial sum lands, instead of
 * paying a futex wake-up on each of a step's two all-reduces a layer. It covers the ranks' usual
 * skew within a step; a longer wait (a preempted rank) fails the spin and the adaptive spin
 * backs off, so a busy machine's cores go to whoever can use them.
 */
export const CPU_RANK_SPIN = 1 << 14;
export const DEFAULT_TIMEOUT_MS = 10_000;
/** The spin a rank uses unless the engine was given one: long for CPU ranks that each have a core. */
export function defaultSpin(cpuRank: boolean, world: number, cores: number): number {
  return cpuRank && world <= cores ? CPU_RANK_SPIN : DEFAULT_SPIN;
}

/** Longest single Atomics.wait: bounds how late a sleeper sees abort/dispose/reset. */
const SLEEP_SLICE_MS = 50;

/** Rank `rank`'s view of the group whose buffer is `buf` (`createCollectiveBuffer`, or `createCollectiveMemory` for the SIMD sums). */
export class SharedGroup {
  readonly rank: number;
  readonly world: number;
  /** Floats each slot holds: the longest vector a collective accepts. */
  readonly slotFloats: number;
  readonly layout: Layout;
  /** Spin iterations before sleeping; may be changed between collectives. */
  spin: number;
  /** Timeout of every wait, in ms; may be changed between collectives (e.g. longer for prefill). */
  timeoutMs: number;
  adaptiveSpin: boolean;
  /** Int32 view of the whole control area. */
  readonly flags: Int32Array;
  /** Float32 view of all slots; slot j starts at `slotOffset(j)`. */
  readonly data: Float32Array;
  private readonly sab: SharedArrayBuffer;
  private readonly progressBase: number;
  /** The tick this rank last published; all ranks agree on it between collectives. */
  private tick = 0;
  /** Collectives run since the last epoch: the sequence number errors name. */
  private opSeq = 0;
  private epoch: number;
  private op = '';
  private waits = 0;
  private spinBudget = Infinity;
  /** Tick at the start of the current collective. */
  private base = 0;
  private deadline = 0;
  /** Ranks that read this rank's slot in the last collective that exposed it, and the tick by which they are done. */
  private slotReaders: number[] = [];
  private slotReadEnd = 0;
  private readonly others: number[];
  /** Every slot as a view (indexing a view is faster in V8 than offsetting into `data`). */
  readonly slots: Float32Array[];
  /** `chunkOrders[c]`: the slot views in `summationOrder(c)`. */
  readonly chunkOrders: Float32Array[][];
  private readonly slotView: Float32Array;

  /** The SIMD sums, when the buffer is a WebAssembly.Memory and the thread has SIMD. */
  readonly simd: SimdSum | undefined;

  constructor(buf: CollectiveBuffer, rank: number, opts: SharedGroupOptions = {}) {
    const sab = collectiveBytes(buf);
    this.layout = readLayout(sab);
    const { world } = this.layout;
    if (!Number.isInteger(rank) || rank < 0 || rank >= world) {
      throw new InvalidArgumentError(`rank must be a whole number in [0, ${world}), got ${rank}`);
    }
    this.sab = sab;
    this.rank = rank;
    this.world = world;
    this.slotFloats = this.layout.slotFloats;
    this.spin = opts.spin ?? DEFAULT_SPIN;
    this.timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.adaptiveSpin = opts.adaptiveSpin ?? true;
    this.flags = new Int32Array(sab, 0, this.layout.dataOffset / 4);
    this.data = new Float32Array(sab, this.layout.dataOffset, world * this.layout.slotStride);
    this.progressBase = this.layout.progressBase;
    this.epoch = Atomics.load(this.flags, EPOCH);
    // A rank attached after a reset starts from the counters the reset zeroed.
    this.tick = Atomics.load(this.flags, this.progressBase + rank * LINE_WORDS + PROGRESS);
    this.others = Array.from({ length: world }, (_, j) => j).filter((j) => j !== rank);
    this.slots = Array.from({ length: world }, (_, j) => this.data.subarray(this.slotOffset(j), this.slotOffset(j) + this.slotFloats));
    this.chunkOrders = summationOrders(this.slots);
    this.slotView = this.slots[rank];
    this.simd = isMemory(buf) ? SimdSum.attach(buf, sab) : undefined;
  }

  /** Float offset of slot `j` in `data`. */
  slotOffset(j: number): number {
    return j * this.layout.slotStride;
  }

  /**
   * The Float32 view of slot `rank` (default: this rank's own), `slotFloats` long. For its own
   * slot this first waits until the ranks that read it in the previous collective are done, so
   * the caller may write into it at once: zero-copy input. Pass (a prefix of) this view as the
   * input of the next collective and it is not copied again.
   */
  slot(rank: number = this.rank): Float32Array {
    if (rank === this.rank) {
      this.checkFlags();
      this.syncEpoch();
      this.op = 'slot';
      this.deadline = 0;
      this.acquireOwnSlot();
      return this.slotView;
    }
    return this.slots[rank];
  }

  /** The number of collectives run since attach or the last group reset. */
  get sequence(): number {
    return this.opSeq;
  }

  /** Starts collective `op`: checks the flags, re-syncs after a reset, returns the base tick. */
  begin(op: string): number {
    this.checkFlags();
    this.syncEpoch();
    this.op = op;
    this.opSeq++;
    this.deadline = 0;
    this.base = this.tick;
    return this.tick;
  }

  /** Ends the collective at `tick`. */
  end(tick: number): void {
    this.tick = tick;
  }

  /** Records that `readers` read this rank's slot until they reached `tick`. */
  exposeSlot(readers: number[], tick: number): void {
    this.slotReaders = readers;
    this.slotReadEnd = tick;
  }

  /** All ranks but this one. */
  get otherRanks(): number[] {
    return this.others;
  }

  /** Whether `view` is (a prefix of) this rank's own slot, i.e. already in place. */
  isOwnSlot(view: Float32Array): boolean {
    return view.buffer === this.sab && view.byteOffset === this.slotView.byteOffset;
  }

  /** Rejects outputs inside the shared buffer: other ranks may be reading it. */
  checkOutput(out: Float32Array, op: string): void {
    if (out.buffer === this.sab) {
      throw new InvalidArgumentError(`${op}: the output must not be a view of the collective buffer (other ranks read it)`);
    }
  }

  /** Throws unless `len` floats fit a slot. */
  checkLength(len: number, op: string): void {
    if (len > this.slotFloats) {
      throw new InvalidArgumentError(
        `${op}: expected at most ${this.slotFloats} floats (the slot size), got ${len}`,
        'Create the collective buffer with a larger slotFloats',
      );
    }
  }

  /** Copies `input` into this rank's slot unless it is already there. */
  writeOwnSlot(input: Float32Array): void {
    this.acquireOwnSlot();
    if (!this.isOwnSlot(input)) this.slotView.set(input);
  }

  /** Publishes this rank's progress. */
  publish(tick: number): void {
    const i = this.progressBase + this.rank * LINE_WORDS;
    Atomics.store(this.flags, i + PROGRESS, tick);
    if (Atomics.load(this.flags, i + SLEEPERS) !== 0) Atomics.notify(this.flags, i + PROGRESS);
  }

  /** Blocks until every other rank has reached `tick`. */
  waitAll(tick: number): void {
    for (const j of this.others) this.waitRank(j, tick, this.others);
  }

  /**
   * Blocks until rank `j` has reached `tick`: spin, then sleep in `Atomics.wait`.
   * `group` is the set of ranks the caller waits for, named in a timeout.
   */
  waitRank(j: number, tick: number, group: readonly number[] = [j]): void {
    const f = this.flags;
    const i = this.progressBase + j * LINE_WORDS;
    // Serial-number comparison, so counters may wrap around 2^31.
    const short = (tick - Atomics.load(f, i + PROGRESS)) | 0;
    if (short <= 0) return;
    // Adaptive spin: after a spin that failed, spin 4× less next time, so ranks that outnumber
    // free cores stop burning the core the awaited rank needs; every 64th wait probes with the
    // full budget, and one success restores it.
    const probe = (++this.waits & 63) === 0;
    const n = probe ? this.spin : Math.min(this.spinBudget, this.spin);
    for (let k = n; k > 0; k--) {
      if (((Atomics.load(f, i + PROGRESS) - tick) | 0) >= 0) {
        this.spinBudget = this.spin;
        return;
      }
    }
    if (n > 0 && this.adaptiveSpin) this.spinBudget = Math.min(this.spinBudget, n) >> 2;
    this.sleepUntil(j, i, tick, group);
  }

  /** Sleeps in `Atomics.wait` until rank `j` (progress word `i`) reaches `tick`; checks flags and the deadline. */
  private sleepUntil(j: number, i: number, tick: number, group: readonly number[]): void {
    const f = this.flags;
    // Announce the sleeper before re-reading the counter: with publish() storing then reading
    // the sleeper count (all seq-cst), one of the two sees the other, so no wake-up is lost.
    Atomics.add(f, i + SLEEPERS, 1);
    try {
      for (;;) {
        const v = Atomics.load(f, i + PROGRESS);
        if (((v - tick) | 0) >= 0) return;
        this.checkFlags();
        if (Atomics.load(f, EPOCH) !== this.epoch) throw new AbortedError(`${this.op} #${this.opSeq} on rank ${this.rank}: the collective group was reset`);
        const now = performance.now();
        if (this.deadline === 0) this.deadline = now + this.timeoutMs;
        const left = this.deadline - now;
        if (left <= 0) throw new CollectiveTimeoutError(this.op, this.opSeq, this.missingRanks(j, tick, group), this.timeoutMs, this.rank);
        Atomics.wait(f, i + PROGRESS, v, Math.min(left, SLEEP_SLICE_MS));
      }
    } finally {
      Atomics.sub(f, i + SLEEPERS, 1);
    }
  }

  /**
   * Who to blame for a timeout: the ranks that never arrived at this collective (every rank's
   * first tick, t+1, means "arrived"), else those of `group` still short of `tick`. In a ring
   * the neighbour a rank waits for may be alive but stuck behind the dead rank; this names the
   * dead one.
   */
  private missingRanks(j: number, tick: number, group: readonly number[]): number[] {
    const behind = (r: number, x: number) => ((Atomics.load(this.flags, this.progressBase + r * LINE_WORDS + PROGRESS) - x) | 0) < 0;
    const absent = this.op === 'slot' ? [] : this.others.filter((r) => behind(r, this.base + 1));
    if (absent.length) return absent;
    const late = group.filter((r) => behind(r, tick));
    return late.length ? late : [j];
  }

  /** Waits until the ranks that read this rank's slot in its last exposure are done with it. */
  acquireOwnSlot(): void {
    if (this.slotReaders.length === 0) return;
    for (const j of this.slotReaders) this.waitRank(j, this.slotReadEnd, this.slotReaders);
    this.slotReaders = [];
  }

  private checkFlags(): void {
    if (Atomics.load(this.flags, DISPOSE) !== 0) throw new DisposedError();
    if (Atomics.load(this.flags, ABORT) !== 0) throw new AbortedError(`${this.op || 'collective'} on rank ${this.rank} aborted`);
  }

  /** After a group reset (see ControlBlock.resetGroup) every counter restarts from zero. */
  private syncEpoch(): void {
    const e = Atomics.load(this.flags, EPOCH);
    if (e === this.epoch) return;
    this.epoch = e;
    this.tick = 0;
    this.opSeq = 0;
    this.slotReaders = [];
    this.slotReadEnd = 0;
  }

  /** The chunk split of a `len`-float all-reduce. */
  chunks(len: number): readonly number[] {
    if (len !== this.boundsLen) {
      this.bounds = chunkBounds(len, this.world);
      this.boundsLen = len;
    }
    return this.bounds;
  }
  private bounds: number[] = [];
  private boundsLen = -1;
}
