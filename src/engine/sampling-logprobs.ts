/**
 * Log-probabilities for `logprobs` / `top_logprobs`: the log-softmax of the model's raw logits
 * over the whole vocabulary, before penalties, bias, truncation and temperature, as OpenAI's
 * and vLLM's (its default `raw_logprobs`) are. They say what the model predicts, whatever the
 * sampler then did with it. Computed in f64.
 */

/** ln Σ exp(logits[i]) over the first `n`. */
export function logSumExp(logits: Float32Array, n: number): number {
  let max = -Infinity;
  for (let i = 0; i < n; i++) if (logits[i]! > max) max = logits[i]!;
  let sum = 0;
  for (let i = 0; i < n; i++) sum += Math.exp(logits[i]! - max);
  return max + Math.log(sum);
}

/** The `k` largest of the first `n` logits' ids, largest first (equal ones: lower id first). */
export function topIds(logits: Float32Array, n: number, k: number): number[] {
  const best: number[] = [];
  if (k <= 0) return best;
  for (let i = 0; i < n; i++) {
    const v = logits[i]!;
    if (best.length === k && !(v > logits[best[k - 1]!]!)) continue;
    let j = Math.min(best.length, k - 1);
    while (j > 0 && v > logits[best[j - 1]!]!) j--;
    best.splice(j, 0, i);
    if (best.length > k) best.pop();
  }
  return best;
}

/** `token`'s log-probability and the `top` most likely tokens' (id and log-probability). */
export function logprobsAt(logits: Float32Array, n: number, token: number, top: number): { logprob: number; top: { token: number; logprob: number }[] } {
  const z = logSumExp(logits, n);
  return {
    logprob: logits[token]! - z,
    top: topIds(logits, n, top).map((t) => ({ token: t, logprob: logits[t]! - z })),
  };
}
