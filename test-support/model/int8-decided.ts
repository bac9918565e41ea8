/**
 * The int8 oracle's greedy continuation, and how many of its tokens are its for certain. Int8
 * activations round each input to a step of max|x|/127: a value one ulp from a rounding boundary
 * (the engine's SIMD sums round otherwise than the oracle's sequential ones) moves a product by a
 * whole step, and greedy decoding carries that on. Runs whose norm weights are moved by one ulp
 * stand in for those differences: the tokens before the first step where any of them differs
 * count as decided (greedy-decided.ts's margin, for int8).
 */
import { mulberry32 } from '../../src/model/mulberry32.js';
import { argmax } from '../../src/model/reference.js';
import { generateInt8, type Int8ReferenceModel } from '../../src/model/reference-int8.js';

/** x with each value moved by -1, 0 or +1 ulp at random. */
function nudged(x: Float32Array, seed: number): Float32Array {
  const rand = mulberry32(seed);
  return x.map((v) => Math.fround(v * (1 + (Math.floor(3 * rand()) - 1) * 2 ** -23)));
}

export function int8Decided(model: Int8ReferenceModel, prompt: readonly number[], steps: number, runs = 8): { tokens: number[]; decided: number } {
  const greedy = (m: Int8ReferenceModel) => generateInt8(m, prompt, steps, (l) => argmax(l, m.config.vocabSize)).slice(prompt.length);
  const tokens = greedy(model);
  let decided = tokens.length;
  for (let r = 1; r <= runs; r++) {
    const other = greedy({ ...model, rmsAttWeight: nudged(model.rmsAttWeight, 2 * r), rmsFfnWeight: nudged(model.rmsFfnWeight, 2 * r + 1) });
    const at = tokens.findIndex((t, i) => t !== other[i]);
    if (at >= 0 && at < decided) decided = at;
  }
  return { tokens, decided };
}
