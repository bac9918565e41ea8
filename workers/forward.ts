/**
 * One rank's forward pass, the way run.c reads, for any backend. Shapes carry the shard: with
 * tp ranks a rank holds heads/tp query heads, hidden/tp MLP units and vocab/tp classifier rows.
 * The plan's row-parallel matmuls (wo, w2) leave a partial sum on each rank, so each is followed
 * by an all-reduce; how a rank runs that (`RowSum`) was chosen once, up front.
 */
import type { RankState, StageRunner, StepTimes } from './backend.js';
import type { Communicator } from '../src/collective/communicator.js';
import type { StepInput } from '../src/protocol.js';
import type { RowSum } from './row-sum.js';

/** Runs one step; this rank's logits rows, exactly (logitRows.length, vocab/tp), go into `into`. */
export async function forward<S extends RankState<Op>, Op>(
  b: StageRunner<S, Op>, s: S, sum: RowSum, comm: Communicator, input: StepInput, into: Float32Array, times: StepTimes,
): Promise<void> {
  const n = input.m * s.dim; // floats of one all-reduce: the step's rows of x
  b.begin(s, input);
  b.run(s, s.embed); // x = tok_embeddings[tokens]
  for (const L of s.layers) {
    // Attention over this rank's heads.
    b.run(s, L.qkv); // qkv = Wqkv·rmsnorm(x) (+ bqkv)
    for (const op of L.qkNorm) b.run(s, op); // q, k = rmsnorm of each head (Qwen3's q/k norm)
    b.run(s, L.rope); // rotate q and k by position; k and v into the KV cache
    b.run(s, L.attention); // att = softmax(q·kᵀ/√head_size)·v
    await sum.allReduce(b, s, L.wo, comm, n, times); // x += Σ_ranks Wo·att (+ bo)
    // MLP over this rank's hidden units.
    b.run(s, L.w13); // h13 = [W1; W3]·rmsnorm(x)
    await sum.allReduce(b, s, L.w2, comm, n, times); // x += Σ_ranks W2·(silu(h1)·h3)
  }
  await b.head(s, input.logitRows, into); // logits = Wcls·rmsnorm(x), this rank's vocab rows
}
