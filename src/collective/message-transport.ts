/**
 * Collectives between ranks that share no memory (ranks in other tabs): the same named
 * operations and the same sums as the SharedArrayBuffer communicator, over point-to-point
 * messages. Every directed link i→j is a BroadcastChannel named for it, opened for receiving
 * only by rank j, so a message reaches its one receiver (same-origin tabs, workers, or Node).
 *
 * - `one-shot` (small vectors, decode): every rank sends its vector to every other, then sums
 *   each chunk in `summationOrder` itself.
 * - `ring` (large vectors, prefill): N−1 reduce-scatter + N−1 all-gather steps of
 *   `ringSchedule`, each rank talking only to its neighbours; a received partial is added to
 *   the rank's own values (partial + own), so chunk c accumulates c, c+1, …, c−1 in order.
 * Both give bitwise the same float32 sums as every SAB algorithm (`referenceSum`).
 *
 * Liveness: every rank sends a heartbeat to every peer every `heartbeatMs`; any message counts
 * as one. A wait fails with `CollectiveTimeoutError` naming the peer once that peer has been
 * silent for `timeoutMs` (a frozen or closed tab), and at once with `WorkerFailedError` when the
 * peer said goodbye (`close()`, e.g. on pagehide). A throttled hidden tab keeps sending
 * heartbeats, so its peers wait for it instead of failing, up to `stallMs` (a live peer stuck
 * elsewhere must not hang the group either).
 */
import { AbortedError, CollectiveTimeoutError, InvalidArgumentError, WorkerFailedError } from '../errors.js';
import { chunkBounds, summationOrders } from './layout.js';
import { ringSchedule } from './ring-schedule.js';
import type { Communicator } from './communicator.js';

export type MessageAllReduceAlgorithm = 'one-shot' | 'ring';

interface DataMessage {
  kind: 'data';
  /** Collective sequence number and step within it: the key a receiver waits on. */
  op: number;
  step: number;
  data: Float32Array;
}
type WireMessage = DataMessage | { kind: 'heartbeat' } | { kind: 'bye' };

/** A directed link's receive side and every send side, by peer rank. */
export interface Links {
  send(to: number, msg: WireMessage): void;
  /** Calls `handler` for every message from any peer. */
  listen(handler: (from: number, msg: WireMessage) => void): void;
  close(): void;
}

/** Links between the ranks of `group` over BroadcastChannels, one per directed pair. */
export function broadcastLinks(group: string, rank: number, world: number): Links {
  const name = (from: number, to: number) => `webgpu-tp/${group}/${from}>${to}`;
  const peers = Array.from({ length: world }, (_, j) => j).filter((j) => j !== rank);
  const out = new Map(peers.map((j) => [j, new BroadcastChannel(name(rank, j))]));
  const inbound = peers.map((j) => ({ j, ch: new BroadcastChannel(name(j, rank)) }));
  return {
    send: (to, msg) => out.get(to)!.postMessage(msg),
    listen(handler) {
      for (const { j, ch } of inbound) ch.onmessage = (e: MessageEvent<WireMessage>) => handler(j, e.data);
    },
    close() {
      for (const ch of out.values()) ch.close();
      for (const { ch } of inbound) ch.close();
    },
  };
}

export interface MessageCommunicatorOptions {
  /** Longest a peer may stay silent while a rank waits for it (ms, default 10 000). */
  timeoutMs?: number;
  /** Heartbeat period (ms, default 250). */
  heartbeatMs?: number;
  /** Longest wait for a peer that heartbeats but does not arrive (ms, default 4 × timeoutMs). */
  stallMs?: number;
  /** Largest vector `auto` sends one-shot (floats, default 4096); above it, the ring. */
  oneShotMaxFloats?: number;
  /** Floats of the staging slot allocated up front (default 0: it grows on first use). */
  slotFloats?: number;
}

interface Waiter {
  from: number;
  /** The collective's name and number, for a timeout's message. */
  what: string;
  op: number;
  since: number;
  resolve(d: Float32Array): void;
  reject(e: Error): void;
}

/**
 * A rank's handle on a message-passing group. All ranks call the same collectives in the same
 * order. Its slot is this rank's own memory, so a sum may land in it.
 */
export class MessageCommunicator implements Communicator {
  readonly rank: number;
  readonly world: number;
  readonly timeoutMs: number;
  readonly stallMs: number;
  private readonly oneShotMax: number;
  private readonly links: Links;
  private readonly lastHeard: number[];
  private readonly gone: (string | null)[];
  /** Messages that arrived before anyone waited for them, by `from:op:step`. */
  private readonly early = new Map<string, Float32Array>();
  private readonly waiting = new Map<string, Waiter>();
  private readonly timer: ReturnType<typeof setInterval>;
  private seq = 0;
  private buf: Float32Array;
  private closed = false;
  private aborted: string | null = null;

  constructor(links: Links, rank: number, world: number, opts: MessageCommunicatorOptions = {}) {
    if (!Number.isInteger(world) || world < 1 || !Number.isInteger(rank) || rank < 0 || rank >= world) {
      throw new InvalidArgumentError(`expected 0 ≤ rank < world, got rank ${rank} of ${world}`);
    }
    this.links = links;
    this.rank = rank;
    this.world = world;
    this.timeoutMs = opts.timeoutMs ?? 10_000;
    this.stallMs = opts.stallMs ?? 4 * this.timeoutMs;
    this.oneShotMax = opts.oneShotMaxFloats ?? 4096;
    this.buf = new Float32Array(opts.slotFloats ?? 0);
    const now = performance.now();
    this.lastHeard = Array.from({ length: world }, () => now);
    this.gone = Array.from({ length: world }, () => null);
    links.listen((from, msg) => this.receive(from, msg));
    const beat = opts.heartbeatMs ?? 250;
    // Each tick sends a heartbeat and checks the silence of the peers someone waits for.
    this.timer = setInterval(() => {
      for (const j of this.peers()) this.links.send(j, { kind: 'heartbeat' });
      this.checkSilence();
    }, beat);
    (this.timer as { unref?: () => void }).unref?.();
  }

  /** The collectives run so far. */
  get sequence(): number {
    return this.seq;
  }

  slot(n: number): Float32Array {
    if (this.buf.length < n) this.buf = new Float32Array(n);
    return this.buf.subarray(0, n);
  }

  /** The sum of every rank's slot[0, n), into this rank's slot. */
  async allReduce(n: number): Promise<Float32Array> {
    const v = this.slot(n);
    await this.allReduceArray(v, 'auto', v);
    return v;
  }

  /**
   * Rank root's slot[0, n), as a sum in which every other rank adds −0: x + (−0) is x to the
   * bit (+0 and −0 included), so the root's floats arrive exactly, with no second kind of message.
   */
  async broadcast(n: number, root: number): Promise<Float32Array> {
    if (!Number.isInteger(root) || root < 0 || root >= this.world) {
      throw new InvalidArgumentError(`broadcast: root must be a rank in [0, ${this.world}), got ${root}`);
    }
    const v = this.slot(n);
    if (this.rank !== root) v.fill(-0);
    await this.allReduceArray(v, 'auto', v);
    return v;
  }

  /**
   * Sums `input` over all ranks into `out` (default in place), bitwise-identical on every rank
   * and to the SharedArrayBuffer algorithms. `auto` sends small vectors one-shot, large ones
   * round the ring.
   */
  async allReduceArray(input: Float32Array, algorithm: MessageAllReduceAlgorithm | 'auto' = 'auto', out: Float32Array = input): Promise<MessageAllReduceAlgorithm> {
    const algo = algorithm === 'auto' ? (input.length <= this.oneShotMax ? 'one-shot' : 'ring') : algorithm;
    if (algo !== 'one-shot' && algo !== 'ring') throw new InvalidArgumentError(`allReduce: expected auto, one-shot or ring; got ${String(algorithm)}`);
    if (out.length < input.length) throw new InvalidArgumentError(`allReduce: expected an output of at least ${input.length} floats, got ${out.length}`);
    this.checkOpen();
    const op = ++this.seq;
    if (this.world === 1) {
      if (out !== input) out.set(input);
      return algo;
    }
    if (algo === 'one-shot') await this.oneShot(op, input, out);
    else await this.ring(op, input, out);
    return algo;
  }

  /** Waits until every rank has called `barrier` as many times as this one. */
  async barrier(): Promise<void> {
    this.checkOpen();
    const op = ++this.seq;
    if (this.world === 1) return;
    for (const j of this.peers()) this.links.send(j, { kind: 'data', op, step: 0, data: new Float32Array(0) });
    await Promise.all(this.peers().map((j) => this.recv(j, op, 0, 'barrier')));
  }

  /**
   * Leaves every collective: pending and later waits fail with `AbortedError`, while heartbeats
   * go on (the rank is alive, only out of step). The group is then out of step for good; its
   * owner closes it and makes a new one to go on.
   */
  abort(reason = 'the collective group was aborted'): void {
    if (this.aborted !== null) return;
    this.aborted = reason;
    for (const w of this.waiting.values()) w.reject(new AbortedError(`${w.what} #${w.op} on rank ${this.rank}: ${reason}`));
    this.waiting.clear();
  }

  /** Stops the heartbeats and tells the peers this rank has left (their waits fail at once). */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.timer);
    for (const j of this.peers()) this.links.send(j, { kind: 'bye' });
    for (const w of this.waiting.values()) w.reject(new WorkerFailedError(this.rank, 'this rank closed its communicator'));
    this.waiting.clear();
    this.links.close();
  }

  private async oneShot(op: number, input: Float32Array, out: Float32Array): Promise<void> {
    const mine = Float32Array.from(input);
    for (const j of this.peers()) this.links.send(j, { kind: 'data', op, step: 0, data: mine });
    const all: Float32Array[] = [];
    all[this.rank] = mine;
    await Promise.all(this.peers().map(async (j) => (all[j] = await this.recv(j, op, 0, 'allReduce'))));
    const bounds = chunkBounds(input.length, this.world);
    const orders = summationOrders(all);
    for (let c = 0; c < this.world; c++) {
      const order = orders[c]!;
      for (let i = bounds[c]!; i < bounds[c + 1]!; i++) {
        let s = order[0]![i]!;
        for (let k = 1; k < order.length; k++) s = Math.fround(s + order[k]![i]!);
        out[i] = s;
      }
    }
  }

  private async ring(op: number, input: Float32Array, out: Float32Array): Promise<void> {
    const n = this.world;
    const r = this.rank;
    const left = (r + n - 1) % n;
    const right = (r + 1) % n;
    const bounds = chunkBounds(input.length, n);
    // The rank's working copy: own values, then reduced partials, then gathered sums.
    const acc = Float32Array.from(input);
    const chunk = (c: number) => acc.subarray(bounds[c]!, bounds[c + 1]!);
    let s = 0;
    for (const step of ringSchedule(r, n)) {
      // slice(): the message owns a copy, so later writes to acc cannot reach it.
      this.links.send(right, { kind: 'data', op, step: s, data: chunk(step.send).slice() });
      const got = await this.recv(left, op, s, 'allReduce');
      const dst = chunk(step.recv);
      if (step.phase === 'reduce-scatter') for (let i = 0; i < dst.length; i++) dst[i] = Math.fround(got[i]! + dst[i]!);
      else dst.set(got);
      s++;
    }
    // After the all-gather every chunk of acc is the full sum (chunk ringOwnedChunk(r) since the reduce-scatter).
    out.set(acc.subarray(0, input.length));
  }

  private peers(): number[] {
    return Array.from({ length: this.world }, (_, j) => j).filter((j) => j !== this.rank);
  }

  private receive(from: number, msg: WireMessage): void {
    this.lastHeard[from] = performance.now();
    if (msg.kind === 'heartbeat') return;
    if (msg.kind === 'bye') {
      this.gone[from] = 'its tab closed or left the group';
      for (const [k, w] of this.waiting) {
        if (w.from === from) {
          this.waiting.delete(k);
          w.reject(new WorkerFailedError(from, this.gone[from]!));
        }
      }
      return;
    }
    const key = `${from}:${msg.op}:${msg.step}`;
    const w = this.waiting.get(key);
    if (w) {
      this.waiting.delete(key);
      w.resolve(msg.data);
    } else this.early.set(key, msg.data);
  }

  private recv(from: number, op: number, step: number, what: string): Promise<Float32Array> {
    const key = `${from}:${op}:${step}`;
    const got = this.early.get(key);
    if (got) {
      this.early.delete(key);
      return Promise.resolve(got);
    }
    if (this.gone[from]) return Promise.reject(new WorkerFailedError(from, this.gone[from]!));
    if (this.aborted !== null) return Promise.reject(new AbortedError(`${what} #${op} on rank ${this.rank}: ${this.aborted}`));
    return new Promise((resolve, reject) => this.waiting.set(key, { from, what, op, since: performance.now(), resolve, reject }));
  }

  private checkSilence(): void {
    const now = performance.now();
    for (const [k, w] of this.waiting) {
      const silent = now - this.lastHeard[w.from]! > this.timeoutMs;
      if (!silent && now - w.since <= this.stallMs) continue;
      this.waiting.delete(k);
      w.reject(new CollectiveTimeoutError(w.what, w.op, [w.from], silent ? this.timeoutMs : this.stallMs, this.rank));
    }
  }

  private checkOpen(): void {
    if (this.closed) throw new InvalidArgumentError('the message communicator is closed');
  }
}
