/**
 * GPU → CPU reads with low latency. Chromium resolves a `mapAsync` only when the GPU process
 * next polls for finished work, which can be milliseconds after short work has ended.
 * Any call that reaches the GPU process (an empty `queue.submit`) makes it poll at once, so the
 * helper "pokes" the device — but only around the time the work should be done: poking while
 * a long dispatch still runs takes CPU from it, and poking on every event-loop hop
 * floods the GPU process. Sleeps use `Atomics.waitAsync` timeouts, precise to ~0.1 ms and
 * free of spinning (setTimeout is clamped to 4 ms; MessageChannel hops spin a core); where
 * SharedArrayBuffer is missing it falls back to MessageChannel hops.
 *
 * Usage, per read: `t = encodeCopy(enc, src, off, bytes)` in the same command buffer as the
 * compute, `queue.submit`, then `await read(t, {expectedMs})`.
 */
import { InvalidArgumentError } from '../../errors.js';
import type { GpuContext } from './device.js';
import { acquireBuffer, releaseBuffer } from './pool.js';

export interface ReadTicket {
  /** Ring slot holding the copy. */
  readonly slot: number;
  readonly bytes: number;
  /** Identifies the ticket's use of the slot (a slot is reused after its read). */
  readonly seq: number;
}

export interface ReadOptions {
  /**
   * Expected GPU time (ms) from submit to the copy's completion. Unset: learnt per `key`
   * from earlier reads (the first read with a key starts poking at once).
   */
  expectedMs?: number;
  /** Groups reads of the same shape of work for learning their duration. */
  key?: string;
  /** Copy into this array (e.g. a SharedArrayBuffer slot) instead of allocating one. */
  into?: Float32Array;
  /** No poking at all: the plain `mapAsync` path (for comparison). */
  plain?: boolean;
  /**
   * Reads expected (learnt per `key`) to take at least this long (ms) are left to Chromium's own
   * polling: no pokes. Default: always poke. Where ranks share a CPU adapter, a long stage's
   * many pokes (each a trip through the GPU process) take more of the cores than the
   * latency they save (at most one of Chromium's poll intervals).
   */
  quietOverMs?: number;
}

export interface ReadbackStats {
  reads: number;
  pokes: number;
  /** Latency of the last read, submit→data (ms). */
  lastMs: number;
}

export interface Readback {
  encodeCopy(encoder: GPUCommandEncoder, src: GPUBuffer, srcOffset: number, bytes: number): ReadTicket;
  /** Resolves with the copied floats (a fresh array, or `into`), and frees the ring slot. */
  read(ticket: ReadTicket, opts?: ReadOptions): Promise<Float32Array>;
  readonly stats: ReadbackStats;
}

export interface ReadbackOptions {
  /** Largest read, bytes. */
  slotBytes: number;
  /** Reads that may be in flight at once. */
  slots?: number;
  /** Requested sleep between pokes once the work should be done (ms); default 0.1 (~0.2 real). */
  pokeIntervalMs?: number;
  /** After this many fruitless pokes the interval doubles (up to 1 ms). */
  backoffAfter?: number;
}

interface Slot {
  buffer: GPUBuffer;
  busy: boolean;
  seq: number;
}

export interface Sleeper {
  /** Sleeps about `ms` (no-op for ms ≤ 0), or until `wake()`. */
  sleep(ms: number): Promise<void>;
  wake(): void;
}

/** A precise sleep that does not spin: Atomics.waitAsync's timeout; MessageChannel hops otherwise. */
type WaitAsync = (a: Int32Array, i: number, v: number, ms: number) => { async: boolean; value: Promise<string> | string };

export function createSleeper(): Sleeper {
  const waitAsync = (Atomics as unknown as { waitAsync?: WaitAsync }).waitAsync;
  if (typeof SharedArrayBuffer !== 'undefined' && waitAsync) {
    const cell = new Int32Array(new SharedArrayBuffer(4));
    return {
      async sleep(ms) {
        if (ms <= 0) return;
        const w = waitAsync(cell, 0, 0, ms);
        if (w.async) await w.value;
      },
      wake: () => void Atomics.notify(cell, 0),
    };
  }
  const ch = new MessageChannel();
  const waiting: (() => void)[] = [];
  ch.port1.onmessage = () => waiting.shift()?.();
  const hop = () => new Promise<void>((r) => { waiting.push(r); ch.port2.postMessage(0); });
  let woken = false;
  return {
    async sleep(ms) {
      woken = false;
      const end = performance.now() + ms;
      while (!woken && performance.now() < end) await hop();
    },
    wake: () => void (woken = true),
  };
}

export function createReadback(ctx: GpuContext, opts: ReadbackOptions): Readback {
  const nSlots = opts.slots ?? 4;
  const slotBytes = Math.ceil(opts.slotBytes / 4) * 4;
  // A waitAsync sleep overshoots by ~0.1 ms, so 0.1 requested gives pokes ~0.2 ms apart.
  const pokeMs = opts.pokeIntervalMs ?? 0.1;
  const backoffAfter = opts.backoffAfter ?? 8;
  const slots: Slot[] = Array.from({ length: nSlots }, () => ({
    buffer: acquireBuffer(ctx.pool, slotBytes, GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST, 'readback'),
    busy: false,
    seq: 0,
  }));
  const sleeper = createSleeper();
  /** Learnt submit→done estimates per key (ms). */
  const learnt = new Map<string, number>();
  const seenKeys = new Set<string>();
  const stats: ReadbackStats = { reads: 0, pokes: 0, lastMs: 0 };
  let next = 0;

  const rb: Readback & { slots: Slot[] } = {
    slots,
    stats,
    encodeCopy(encoder, src, srcOffset, bytes) {
      if (bytes > slotBytes || bytes % 4 !== 0) throw new InvalidArgumentError(`readback of ${bytes} bytes: expected a multiple of 4 up to ${slotBytes}`);
      for (let i = 0; i < nSlots; i++) {
        const s = slots[(next + i) % nSlots]!;
        if (s.busy) continue;
        const slot = (next + i) % nSlots;
        next = (slot + 1) % nSlots;
        s.busy = true;
        s.seq++;
        encoder.copyBufferToBuffer(src, srcOffset, s.buffer, 0, bytes);
        return { slot, bytes, seq: s.seq };
      }
      throw new InvalidArgumentError(`all ${nSlots} readback slots are in flight`, 'read() earlier tickets first, or create the readback with more slots');
    },

    async read(ticket, o = {}) {
      const s = slots[ticket.slot]!;
      if (!s.busy || s.seq !== ticket.seq) throw new InvalidArgumentError('readback ticket was already read');
      const t0 = performance.now();
      let done = false;
      const mapped = s.buffer.mapAsync(GPUMapMode.READ, 0, ticket.bytes).finally(() => {
        done = true;
        sleeper.wake();
      });
      const key = o.key ?? '';
      const expected = o.expectedMs ?? learnt.get(key) ?? 0;
      const quiet = o.plain || expected >= (o.quietOverMs ?? Infinity);
      if (!quiet) {
        // Wake a little before the work should end, then poke at a steady pace.
        await sleeper.sleep(expected - pokeMs - (performance.now() - t0));
        let interval = pokeMs;
        let pokes = 0;
        let lastPoke = 0;
        while (!done) {
          ctx.device.queue.submit([]);
          lastPoke = performance.now() - t0;
          stats.pokes++;
          await sleeper.sleep(interval);
          if (++pokes % backoffAfter === 0) interval = Math.min(1, interval * 2);
        }
        if (o.expectedMs === undefined) {
          // Only pokes bound the finish time. Found by the first poke: it may have finished
          // well before, so aim earlier. Otherwise it finished shortly before the poke that
          // found it. The first read of a key (cold pipelines) teaches nothing.
          const seen = seenKeys.has(key);
          seenKeys.add(key);
          if (seen) {
            const est = learnt.get(key) ?? 0;
            learnt.set(key, pokes <= 1 ? est * 0.7 : est + 0.5 * (lastPoke - interval / 2 - est));
          }
        }
      }
      try {
        await mapped;
        if (quiet && !o.plain && o.expectedMs === undefined) {
          // Unpoked, the read ends at Chromium's next poll: an upper bound of the work's time,
          // at most one poll interval late, which keeps a stage that got short again from staying quiet.
          const est = learnt.get(key) ?? 0;
          learnt.set(key, est + 0.5 * (performance.now() - t0 - est));
        }
        const src = new Float32Array(s.buffer.getMappedRange(0, ticket.bytes));
        const out = o.into ?? new Float32Array(ticket.bytes / 4);
        out.set(src.subarray(0, Math.min(src.length, out.length)));
        return out;
      } finally {
        s.buffer.unmap();
        s.busy = false;
        stats.reads++;
        stats.lastMs = performance.now() - t0;
      }
    },
  };
  return rb;
}

export function destroyReadback(ctx: GpuContext, rb: Readback): void {
  for (const s of (rb as Readback & { slots: Slot[] }).slots) releaseBuffer(ctx.pool, s.buffer);
}
