/**
 * What the main thread and the rank workers say to each other, in one place:
 *
 * - `RankOptions`: the engine's options as every rank runs them, resolved once by `createEngine`;
 * - `ShardInit` and `RankApi`: a rank worker's Comlink methods (init, load, start, step, stats,
 *   dispose…), the same for a local worker and for one in another tab;
 * - the command words of one step and the statuses a rank answers with in the control block;
 * - `JoinMessage`: the join channel between a host engine and the tabs that lend it a rank.
 *
 * Comlink carries control only; over shared memory a step is words in the control block.
 * Errors cross as `SerializedError` and are rebuilt with their class and `code`, so
 * `instanceof PlanError` works on the main thread.
 */
import * as Comlink from 'comlink';
import { serializeError, reviveError, type SerializedError } from './errors.js';
import type { ModelConfig } from './model/config.js';
import type { RankPlan } from './parallel/plan.js';
import type { CollectiveBuffer } from './collective/layout.js';
import type { ChosenKernels } from './gpu/core/device.js';
import type { DeviceSpec } from './gpu/core/adapter.js';
import type { RankReport } from './engine/types.js';

// ------------------------------------------------------------------------------ options

/** How every rank of an engine runs: `EngineOptions` resolved once (defaults applied, per format). */
export interface RankOptions {
  /** Rows per step (the prefill chunk). */
  maxRows: number;
  /** Sequences batched at once: KV-cache slots per rank. */
  slots: number;
  contextLength: number;
  /** Spin iterations before a collective wait sleeps; absent: the rank's default for its kind (`defaultSpin`). */
  spin?: number;
  /** Longest a rank waits in a collective, and the main thread for a step (ms). */
  timeoutMs: number;
  /** Time every kernel on the GPU (timestamp queries; each op gets its own pass). */
  profile: boolean;
  /** Inputs of quantised matmuls: int8 per group (W8A8 / W4A8) or f32 (weight-only). */
  activations: 'int8' | 'f32';
  /** W8A8: runq.c's arithmetic bit for bit (ARCHITECTURE.md decision 19). */
  runqExact: boolean;
  /** The KV cache's values; `auto` is f16 where the rank's device has `shader-f16`. */
  kvCache: 'auto' | 'f16' | 'f32';
}

// ------------------------------------------------------------------------------ the rank worker's methods

/** A rank's init: its place in the group, how it reaches the others, and the engine's `RankOptions`. */
export interface ShardInit extends RankOptions {
  rank: number;
  world: number;
  config: ModelConfig;
  plan: RankPlan;
  /** Shared memory: the collective buffer (control block + one slot per rank) and the logits regions. */
  shared?: {
    collective: CollectiveBuffer;
    /** world regions of maxLogitRows·logitStride floats: each rank's logits rows. */
    logits: SharedArrayBuffer;
  };
  /** Messages (a rank in another tab): steps are `step()` calls, collectives go over this message group. */
  messages?: { group: string };
  logitStride: number;
  maxLogitRows: number;
  /** The adapter this rank asks for (the default one when absent). */
  device?: DeviceSpec;
  /** Kernel variants measured earlier (by another rank or engine): skips tuning. */
  choices?: ChosenKernels;
}

export interface ShardInitResult {
  adapter: string;
  kernels: string;
  /** ms to get the device (and tune kernels). */
  initMs: number;
  choices: ChosenKernels;
}

/** The Comlink methods of a rank worker (`workers/shard.worker.ts`), local or in another tab. */
export interface RankApi {
  init(o: ShardInit): Promise<ShardInitResult>;
  /** Uploads this rank's packed shard and builds the step's buffers and bound ops. */
  load(packed: ArrayBuffer): Promise<{ weightBytes: number; workBytes: number; uploadMs: number; buildMs: number }>;
  /** A rank in another tab loads its own shard (a URL it fetches, or a Blob it was sent). */
  loadFrom(model: string | Blob, cache: boolean): Promise<{ fromCache: boolean; weightBytes: number }>;
  /** Starts taking steps; they run until dispose. */
  start(): void;
  /** Messages: runs one step (its command words) and returns this rank's logits rows. */
  step(words: Int32Array): Promise<Float32Array>;
  /** Messages: leaves the collective this rank may wait in; every later step fails. */
  abortStep(reason: string): void;
  /** A rank in another tab answers the host's calls over this pair of channels. */
  serve(toWorker: string, toHost: string): void;
  stats(): RankReport;
  resetStats(): void;
  /** The error of the last failed step (status `STATUS_FAILED`), for the main thread to rethrow typed. */
  takeError(): SerializedError | null;
  /** Test hook (fault injection): destroys this rank's device. */
  _destroyDeviceForTest(): void;
  dispose(): Promise<void>;
}

/** Replaces Comlink's error transfer so typed errors keep their class and code. Idempotent. */
export function installErrorTransfer(): void {
  if (installed) return;
  installed = true;
  const base = Comlink.transferHandlers.get('throw');
  if (!base) return;
  Comlink.transferHandlers.set('throw', {
    canHandle: base.canHandle,
    serialize(thrown: unknown) {
      return [serializeError((thrown as { value: unknown }).value), []];
    },
    deserialize(s: unknown): never {
      throw reviveError(s as SerializedError);
    },
  } as Comlink.TransferHandler<unknown, unknown>);
}
let installed = false;

// ------------------------------------------------------------------------------ one step

/** A rank's `signalDone` statuses: the step ran; it failed (`takeError` says why); the rank saw the abort and is parked. */
export const STATUS_OK = 0;
export const STATUS_FAILED = 1;
/** The rank is outside every collective and waits for the group reset. */
export const STATUS_PARKED = 2;

/**
 * The command words of one step: what the scheduler tells every rank.
 *   [0] m            rows in this step
 *   [1] nLogitRows   rows whose logits are wanted
 *   [2] kind         STEP_FORWARD (other kinds reserved)
 *   [3] reply        REPLY_LOGITS: each wanted row's logits; REPLY_BEST: each row's best (value, id) over the rank's slice
 *   [4 ..)           tokens[maxRows], positions[maxRows], slots[maxRows], logitRows[maxRows]
 */
export const STEP_FORWARD = 1;
export const REPLY_LOGITS = 0;
/** A greedy step: a rank answers each wanted row with its slice's best (src/engine/vocab-argmax.ts), not its logits. */
export const REPLY_BEST = 1;
const HEADER = 4;

export function commandWords(maxRows: number): number {
  return Math.max(64, HEADER + 4 * maxRows);
}

/** One step's rows, as a rank runs them (views into the command words). */
export interface StepInput {
  m: number;
  tokens: Int32Array; // (m,)
  positions: Int32Array; // (m,)
  slots: Int32Array; // (m,)
  /** Rows (indices < m) whose logits are wanted, in order. */
  logitRows: Int32Array;
}

export interface StepRowsIn {
  tokens: ArrayLike<number>;
  positions: ArrayLike<number>;
  slots: ArrayLike<number>;
  logitRows: ArrayLike<number>;
  /** Default REPLY_LOGITS. */
  reply?: number;
}

/** Encodes a step into `words` (length `commandWords(maxRows)`); returns how many words are live. */
export function encodeStep(words: Int32Array, maxRows: number, s: StepRowsIn): number {
  const m = s.tokens.length;
  words[0] = m;
  words[1] = s.logitRows.length;
  words[2] = STEP_FORWARD;
  words[3] = s.reply ?? REPLY_LOGITS;
  for (let r = 0; r < m; r++) {
    words[HEADER + r] = s.tokens[r]!;
    words[HEADER + maxRows + r] = s.positions[r]!;
    words[HEADER + 2 * maxRows + r] = s.slots[r]!;
  }
  for (let j = 0; j < s.logitRows.length; j++) words[HEADER + 3 * maxRows + j] = s.logitRows[j]!;
  return HEADER + 3 * maxRows + s.logitRows.length;
}

/** Decodes the words of a posted step (views into `words`; copy before the next step). */
export function decodeStep(words: Int32Array, maxRows: number): StepInput {
  const m = words[0]!;
  const nl = words[1]!;
  return {
    m,
    tokens: words.subarray(HEADER, HEADER + m),
    positions: words.subarray(HEADER + maxRows, HEADER + maxRows + m),
    slots: words.subarray(HEADER + 2 * maxRows, HEADER + 2 * maxRows + m),
    logitRows: words.subarray(HEADER + 3 * maxRows, HEADER + 3 * maxRows + nl),
  };
}

/** What a posted step asks a rank to answer with: REPLY_LOGITS or REPLY_BEST. */
export function stepReply(words: Int32Array): number {
  return words[3]!;
}

// ------------------------------------------------------------------------------ tabs joining an engine

/** What the joining page shows: waiting for a host, joined, loading its shard, running steps; then the host gone, the rank failed, or the tab left. */
export type TabRankState = 'waiting' | 'joined' | 'loading' | 'running' | 'host-gone' | 'failed' | 'left';

/** The join channel's messages (src/engine/tab-link.ts has the channels and the sequence). */
export type JoinMessage =
  | { kind: 'offer'; tab: string }
  /** `timeoutMs`: the silence after which each side counts the other as gone. */
  | { kind: 'accept'; tab: string; session: string; rank: number; world: number; timeoutMs: number }
  | { kind: 'ready'; session: string; rank: number }
  | { kind: 'state'; session: string; rank: number; state: 'loading' | 'running' }
  | { kind: 'host-beat'; session: string }
  | { kind: 'tab-beat'; session: string; rank: number }
  /** From the host (rank absent): the engine is gone. From a tab: that rank's page is going away or its worker failed. */
  | { kind: 'bye'; session: string; rank?: number; reason: string };
