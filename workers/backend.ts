/**
 * What the forward pass (`workers/forward.ts`) asks of a rank's compute backend, as types only:
 * making weights from the rank's shard slices, the state of a step with its ops bound once,
 * and running those ops in stages between sync points. WebGPU implements it
 * (`workers/gpu-backend.ts`); a CPU (WebAssembly) backend can implement the same surface.
 * Handles are opaque: `W` the weights, `S` a step's state, `Op` one bound op.
 */
import type { ModelConfig } from '../src/model/config.js';
import type { RankPlan } from '../src/parallel/plan.js';
import type { StepInput } from '../src/protocol.js';

/** Where time goes in a step, accumulated (ms). */
export interface StepTimes {
  compute: number;
  readback: number;
  allreduce: number;
  upload: number;
  /** Each sync point's readback start → upload done (ms), for the round-trip median. */
  roundtrips: number[];
}

/** A step's activations the collectives read from or write to: the residual stream, or a partial sum. */
export type Activation = 'x' | 'partial';

/**
 * How a rank binds its row-parallel matmuls, chosen once by its `RowSum` (workers/row-sum.ts):
 * the matmul writes `into` (x: accumulated into the residual, with the bias; partial: a bare
 * partial sum), optionally continuing the sums already in partial, and the combined sum arrives
 * in `sumIn` (partial: ops then add it, with the bias, into x).
 */
export interface RowBinding {
  into: Activation;
  continueSum: boolean;
  sumIn: Activation;
}

/** A row-parallel matmul (its output is a partial sum) and the ops that add its combined sum into x, if any. */
export interface RowOp<Op> {
  matmul: Op;
  addSum: readonly Op[];
}

/** One layer's ops, bound once, in the order the forward runs them. */
export interface LayerOps<Op> {
  qkv: Op; // qkv = Wqkv·rmsnorm(x) (+ bqkv)
  qkNorm: readonly Op[]; // each q and k head RMS-normalised (Qwen3); none for other models
  rope: Op; // rotates q and k; writes k and v into the KV cache
  attention: Op; // att = softmax(q·kᵀ/√head_size)·v over the cache
  wo: RowOp<Op>; // Wo·att
  w13: Op; // h13 = [W1; W3]·rmsnorm(x)
  w2: RowOp<Op>; // W2·(silu(h1)·h3)
}

/** What the forward reads from a backend's step state. */
export interface RankState<Op> {
  readonly dim: number;
  readonly embed: Op; // x = tok_embeddings[tokens]
  readonly layers: readonly LayerOps<Op>[];
}

export interface StateOptions {
  maxM: number;
  maxLogitRows: number;
  contextLength: number;
  slots: number;
  /** How the row-parallel matmuls are bound (the rank's `RowSum`). */
  rows: RowBinding;
  /** Quantised weights: quantise each matmul's input to int8 per group first (W8A8, runq.c) or keep it f32. */
  activations: 'f32' | 'int8';
  /** runq.c's arithmetic bit for bit: attention in run.c's order (with int8 activations). */
  exact: boolean;
  /** The KV cache's values; f16 halves its bytes, attention still computes in f32. */
  kvCache: 'f32' | 'f16';
  /** Time every op (one timestamped pass each on the GPU). */
  profile: boolean;
}

/**
 * Runs a step's ops in stages. A stage is the ops since the last sync point: `run` records an
 * op into it, `submit` and `read` end it (the GPU submits it once), `write` uploads ahead of the
 * next stage's ops.
 */
export interface StageRunner<S, Op> {
  /** Starts a step: its rows (tokens, positions, KV slots) for every op. */
  begin(s: S, input: StepInput): void;
  run(s: S, op: Op): void;
  /** Ends the stage so the device works on it while this rank waits. */
  submit(s: S): void;
  /** Ends the stage and reads `from`'s first into.length floats into `into` once it is done. */
  read(s: S, from: Activation, into: Float32Array, key: string): Promise<void>;
  /** Writes v into `to`'s first floats, ahead of the ops that follow. */
  write(s: S, to: Activation, v: Float32Array): void;
  /** Final norm and this rank's classifier slice for the wanted rows: exactly (rows, vocab/tp) into `into`. */
  head(s: S, logitRows: Int32Array, into: Float32Array): Promise<void>;
}

/** A compute backend: weights from shard slices, a step state on them, and its stage runner. */
export interface Backend<W, S extends RankState<Op>, Op> extends StageRunner<S, Op> {
  /** Uploads a rank's packed shard (its slices, dense, in plan order). */
  createWeights(c: ModelConfig, r: RankPlan, packed: ArrayBuffer): W;
  destroyWeights(w: W): void;
  createState(c: ModelConfig, r: RankPlan, w: W, o: StateOptions): S;
  destroyState(s: S): void;
}
