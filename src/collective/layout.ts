/**
 * The shared memory of one tensor-parallel group: a single SharedArrayBuffer holding
 *
 *   header line            world, slot size, offsets (read by every attacher)
 *   step line              the step sequence and the doorbell (main thread → workers), ranks done
 *   flag line              abort, dispose, epoch
 *   command words          the step's Int32 command (≥ 64 words)
 *   done lines   × world   per rank: last step done, status, reply words (worker → main thread)
 *   progress lines × world per rank: collective progress counter, sleeper count
 *   data slots   × world   Float32, one per rank, each 128-byte aligned
 *
 * Every line is 128 bytes, so flags written by different ranks never share a cache line (128
 * also covers adjacent-line prefetch on x86).
 */
import { InvalidArgumentError } from '../errors.js';
import { simdSumAvailable } from './simd-sum.js';

/** Int32 words per 128-byte line. */
export const LINE_WORDS = 32;
const LINE_BYTES = LINE_WORDS * 4;
/** Floats per 128-byte line: slots and reduction chunks are aligned to this. */
export const LINE_FLOATS = 32;

const MAGIC = 0x54504331; // 'TPC1'
const VERSION = 1;

/** Header word indexes (Int32). */
const H_MAGIC = 0;
const H_VERSION = 1;
const H_WORLD = 2;
const H_SLOT_FLOATS = 3;
const H_SLOT_STRIDE = 4;
const H_CMD_WORDS = 5;
const H_DATA_OFFSET = 6;

/** Step line: the sequence number of the last posted step, and a doorbell bumped on every event. */
export const STEP_SEQ = LINE_WORDS;
export const DOORBELL = LINE_WORDS + 1;
/** Ranks done with the posted step (zeroed by each post): the main thread sleeps on it, woken once by the last. */
export const ARRIVED = LINE_WORDS + 2;
/** Flag line. */
export const ABORT = 2 * LINE_WORDS;
export const DISPOSE = 2 * LINE_WORDS + 1;
export const EPOCH = 2 * LINE_WORDS + 2;
export const CMD_BASE = 3 * LINE_WORDS;

/** Words of a done line: [done seq, status, reply words...]. */
export const DONE_SEQ = 0;
export const DONE_STATUS = 1;
export const REPLY_BASE = 2;
export const REPLY_WORDS = LINE_WORDS - REPLY_BASE;
/** Words of a progress line: [progress tick, sleepers]. */
export const PROGRESS = 0;
export const SLEEPERS = 1;

export interface CollectiveBufferOptions {
  /** Number of ranks. */
  world: number;
  /** Floats per rank slot: the largest vector any collective will move (e.g. prefill rows × dim, or the gathered vocab). */
  slotFloats: number;
  /** Int32 command words of the control block; default 64. */
  commandWords?: number;
}

/** Where everything lives in a collective buffer; read from its header by `readLayout`. */
export interface Layout {
  world: number;
  slotFloats: number;
  /** Floats between the starts of consecutive slots (slotFloats rounded up to a line). */
  slotStride: number;
  commandWords: number;
  /** Int32 index of rank r's done line is `doneBase + r * LINE_WORDS`. */
  doneBase: number;
  /** Int32 index of rank r's progress line is `progressBase + r * LINE_WORDS`. */
  progressBase: number;
  /** Byte offset of slot 0; slot r starts at float `r * slotStride` of the data view. */
  dataOffset: number;
}

const roundUp = (x: number, m: number) => Math.ceil(x / m) * m;

function computeLayout(world: number, slotFloats: number, commandWords: number): Layout {
  const cmdLines = Math.ceil(commandWords / LINE_WORDS);
  const doneBase = CMD_BASE + cmdLines * LINE_WORDS;
  const progressBase = doneBase + world * LINE_WORDS;
  const dataOffset = (progressBase + world * LINE_WORDS) * 4;
  return { world, slotFloats, slotStride: roundUp(Math.max(slotFloats, 1), LINE_FLOATS), commandWords, doneBase, progressBase, dataOffset };
}

/**
 * Allocates and initialises the shared buffer of a group: the main thread calls this once and
 * sends the buffer to every worker, which calls `attachCommunicator` and/or `new ControlBlock`.
 */
export function createCollectiveBuffer(opts: CollectiveBufferOptions): SharedArrayBuffer {
  const l = checkedLayout(opts);
  return initBuffer(new SharedArrayBuffer(bufferBytes(l)), l);
}

/**
 * The group's buffer as a shared `WebAssembly.Memory`, so the all-reduce can sum in WebAssembly
 * SIMD (simd-sum.ts); its `buffer` has the same layout as `createCollectiveBuffer`'s. Send the
 * Memory itself to the workers (it is cloneable like a SharedArrayBuffer): a worker cannot make
 * a Memory out of a SharedArrayBuffer. Falls back to a plain SharedArrayBuffer where WebAssembly
 * SIMD is unavailable.
 */
export function createCollectiveMemory(opts: CollectiveBufferOptions): CollectiveBuffer {
  const l = checkedLayout(opts);
  if (!simdSumAvailable()) return initBuffer(new SharedArrayBuffer(bufferBytes(l)), l);
  const pages = Math.ceil(bufferBytes(l) / 65536);
  const memory = new WebAssembly.Memory({ initial: pages, maximum: pages, shared: true });
  initBuffer(memory.buffer as unknown as SharedArrayBuffer, l);
  return memory;
}

/** A group's shared memory: a SharedArrayBuffer, or a shared WebAssembly.Memory around one. */
export type CollectiveBuffer = SharedArrayBuffer | WebAssembly.Memory;

/** The SharedArrayBuffer of a collective buffer. */
export function collectiveBytes(buf: CollectiveBuffer): SharedArrayBuffer {
  return isMemory(buf) ? (buf.buffer as unknown as SharedArrayBuffer) : buf;
}

export function isMemory(buf: CollectiveBuffer): buf is WebAssembly.Memory {
  return typeof WebAssembly !== 'undefined' && buf instanceof WebAssembly.Memory;
}

function bufferBytes(l: Layout): number {
  return roundUp(l.dataOffset + l.world * l.slotStride * 4, LINE_BYTES);
}

function checkedLayout(opts: CollectiveBufferOptions): Layout {
  const { world, slotFloats } = opts;
  const commandWords = opts.commandWords ?? 64;
  if (!Number.isInteger(world) || world < 1) throw new InvalidArgumentError(`world must be a whole number ≥ 1, got ${world}`);
  if (!Number.isInteger(slotFloats) || slotFloats < 0) throw new InvalidArgumentError(`slotFloats must be a whole number ≥ 0, got ${slotFloats}`);
  if (!Number.isInteger(commandWords) || commandWords < 64) throw new InvalidArgumentError(`commandWords must be a whole number ≥ 64, got ${commandWords}`);
  return computeLayout(world, slotFloats, commandWords);
}

function initBuffer(sab: SharedArrayBuffer, l: Layout): SharedArrayBuffer {
  const h = new Int32Array(sab, 0, LINE_WORDS);
  h[H_VERSION] = VERSION;
  h[H_WORLD] = l.world;
  h[H_SLOT_FLOATS] = l.slotFloats;
  h[H_SLOT_STRIDE] = l.slotStride;
  h[H_CMD_WORDS] = l.commandWords;
  h[H_DATA_OFFSET] = l.dataOffset;
  // Written last: an attacher that sees the magic sees a complete header.
  Atomics.store(h, H_MAGIC, MAGIC);
  return sab;
}

/** Reads the layout from a buffer made by `createCollectiveBuffer`. */
export function readLayout(buf: CollectiveBuffer): Layout {
  const sab = collectiveBytes(buf);
  if (!(sab instanceof SharedArrayBuffer) || sab.byteLength < LINE_BYTES) {
    throw new InvalidArgumentError('expected a SharedArrayBuffer from createCollectiveBuffer()');
  }
  const h = new Int32Array(sab, 0, LINE_WORDS);
  if (Atomics.load(h, H_MAGIC) !== MAGIC || h[H_VERSION] !== VERSION) {
    throw new InvalidArgumentError(`not a collective buffer of version ${VERSION} (magic ${h[H_MAGIC]}, version ${h[H_VERSION]})`);
  }
  return computeLayout(h[H_WORLD], h[H_SLOT_FLOATS], h[H_CMD_WORDS]);
}

/**
 * The reduction chunks of a vector of `len` floats over `world` ranks: chunk `c` is
 * `[bounds[c], bounds[c + 1])`. Chunks are whole lines (32 floats) as evenly split as possible,
 * the last one cut at `len`; with few lines some chunks are empty. Every all-reduce algorithm
 * uses this same split, because the summation order (see `summationOrder`) depends on it.
 */
export function chunkBounds(len: number, world: number): number[] {
  const lines = Math.ceil(len / LINE_FLOATS);
  const base = Math.floor(lines / world);
  const extra = lines % world;
  const bounds = [0];
  let line = 0;
  for (let c = 0; c < world; c++) {
    line += base + (c < extra ? 1 : 0);
    bounds.push(Math.min(line * LINE_FLOATS, len));
  }
  return bounds;
}

/**
 * The documented summation order, shared by every all-reduce algorithm: an element of chunk `c`
 * (see `chunkBounds`) is summed left to right over the ranks `c, c+1, …, world−1, 0, …, c−1`,
 * rounding to float32 after each addition:
 *
 *     out = ((s[c] + s[c+1]) + s[c+2]) + … + s[c−1]
 *
 * Why rotated, not plain rank order: the ring moves partial sums, and a bandwidth-optimal ring
 * starts chunk c's chain at rank c. A plain rank-order chain would start every chunk at rank 0
 * and serialise the ring. One-shot and direct can sum in any order at no cost, so they follow
 * the ring's. Chunk 0 is plain rank order; with two ranks every chunk is (float addition is
 * commutative).
 */
export function summationOrder(chunk: number, world: number): number[] {
  return Array.from({ length: world }, (_, k) => (chunk + k) % world);
}

/** One item per rank (its data), arranged for every chunk: `[c][k]` is rank `summationOrder(c)[k]`'s. */
export function summationOrders<T>(byRank: readonly T[]): T[][] {
  return byRank.map((_, c) => summationOrder(c, byRank.length).map((j) => byRank[j]!));
}
