/** What every `bench peers` runner in the page offers, and the one way their tokens are timed. */
import type { PeerRun, PeerRunRequest } from './peers-types.js';

export interface PeerRunner {
  run(r: PeerRunRequest): Promise<PeerRun>;
  dispose(): Promise<void>;
}

/**
 * Times a stream of greedy tokens by wall clock in the page, the same for every engine: the
 * first token's wait is the prefill, each later gap one decode step.
 */
export async function timedTokens(tokens: AsyncIterable<number>, stop: Pick<PeerRunRequest, 'budgetMs' | 'minTokens'> = {}): Promise<PeerRun> {
  const t0 = performance.now();
  const got: number[] = [];
  const at: number[] = [];
  for await (const t of tokens) {
    got.push(t);
    at.push(performance.now());
    // leaving the loop ends the generator, which stops the engine (ours and onnxruntime-web) or aborts the request (wllama)
    if (stop.budgetMs !== undefined && at.at(-1)! - at[0]! >= stop.budgetMs && got.length >= (stop.minTokens ?? 1)) break;
  }
  return { tokens: got, prefillMs: (at[0] ?? t0) - t0, stepMs: at.slice(1).map((t, i) => t - at[i]!) };
}

/** The two highest entries of a logits vector, as [id, logit] (the lower id first on a tie). */
export function top2(logits: Float32Array): [number, number][] {
  let a = -1;
  let b = -1;
  for (let i = 0; i < logits.length; i++) {
    const v = logits[i]!;
    if (a < 0 || v > logits[a]!) {
      b = a;
      a = i;
    } else if (b < 0 || v > logits[b]!) b = i;
  }
  return [[a, logits[a]!], [b, logits[b]!]];
}
