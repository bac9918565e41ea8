/**
 * The TP split `bench peers` gives our rows: even, unless an even split would cut a quantisation
 * block of wo's rows (stories110M's 768-wide Q4_K_M wo is 3 super-blocks, 1.5 a rank at TP 2, a
 * PlanError); then the heads alone go out in runs that start on whole blocks, as evenly as they
 * can (8:4 there), and the MLP and vocab stay even: the engine's per-axis `split: {heads}`.
 */
import type { ModelConfig } from '../model/config.js';
import { GGML_BLOCK } from '../model/formats/gguf-blocks.js';
import { ggufTensorPlan, type GgufQuant } from '../model/formats/gguf-write.js';
import { gcd, wholeUnitHeads, type AxisSplit } from '../parallel/axis-split.js';

/** Heads per rank at `tp` ranks, MLP and vocab even (undefined: the even split keeps wo's blocks whole, or no split does). */
export function wholeBlockSplit(c: ModelConfig, quant: GgufQuant, tp: number): AxisSplit | undefined {
  const wo = ggufTensorPlan(c, quant).find((t) => t.name === 'layers.0.attention.wo');
  if (!wo || tp < 2) return undefined;
  const block = GGML_BLOCK[wo.type].values;
  // heads per run of whole blocks (wo's row is whole blocks, so this divides nHeads)
  const unit = block / gcd(block, c.headSize);
  if (c.nHeads % tp === 0 && (c.nHeads / tp) % unit === 0) return undefined;
  if (c.nHeads % unit !== 0) return undefined;
  const heads = wholeUnitHeads(c.nHeads, unit, tp);
  return heads && { heads };
}
