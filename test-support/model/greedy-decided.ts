/**
 * The oracle's greedy continuation of a prompt, and how many of its tokens lead with a top-two
 * logit margin above `tol`: the GPU's f32 sums run in another order, so only those tokens are
 * the oracle's for certain. Shared by the e2e specs that compare an engine with the oracle.
 */
import * as R from '../../src/model/reference.js';

export function greedyDecided(model: R.ReferenceModel, prompt: readonly number[], steps: number, tol = 1e-3): { tokens: number[]; decided: number } {
  const s = R.createRunState(model.config);
  let logits: Float32Array = new Float32Array(0);
  prompt.forEach((t, pos) => (logits = R.forward(model, s, t, pos)));
  const tokens: number[] = [];
  let decided = steps;
  for (let i = 0; i < steps; i++) {
    const [a, b] = [...logits].sort((x, y) => y - x);
    if (decided === steps && a! - b! < tol) decided = i;
    tokens.push(R.argmax(logits, model.config.vocabSize));
    logits = R.forward(model, s, tokens[i]!, prompt.length + i);
  }
  return { tokens, decided };
}
