/**
 * Which activations the quantised matmuls take, decided once per placement: int8 per group of
 * 32 (W8A8 for Q8_0, W4A8 for Q4_0) or f32 (weight-only). llama.cpp's CPU path always quantises
 * them, and CPU ranks decode Q4_0 far faster that way, so a GGUF placed on CPU ranks alone runs
 * int8 unless told otherwise. A placement with a GPU rank, and a file with q8_m matrices (Q4_1,
 * Q5_x, K-quants), keep f32 unless asked, as before.
 */
import { InvalidArgumentError } from '../errors.js';
import type { TensorInfo } from '../model/config.js';
import type { ModelFormat } from '../model/formats/detect.js';

export type Activations = 'int8' | 'f32';

/** The engine options that choose (EngineOptions' fields of the same names). */
export interface ActivationOptions {
  int8Activations?: boolean;
  weightOnly?: boolean;
}

/** What the ranks run, and why: the option that forced it, or the default's rule. */
export interface ActivationChoice {
  activations: Activations;
  reason: string;
}

/** Throws unless the options agree: `weightOnly` with `int8Activations: true` asks for both. */
function checkActivationOptions(o: ActivationOptions): void {
  if (o.weightOnly && o.int8Activations) {
    throw new InvalidArgumentError('weightOnly (f32 activations) and int8Activations: true contradict each other', 'Pass one of them: weightOnly or int8Activations: false for f32 activations, int8Activations: true for int8');
  }
}

/**
 * The activations for a placement whose ranks are CPU ranks where `cpu[rank]` is true. An
 * explicit option wins; else a llama2.c v2 file runs runq.c's W8A8, and any other file int8 only
 * where every rank is a CPU rank and its quantised matrices are all Q8_0/Q4_0.
 */
export function resolveActivations(o: ActivationOptions, format: ModelFormat | 'hf', tensors: readonly TensorInfo[], cpu: readonly boolean[]): ActivationChoice {
  checkActivationOptions(o);
  if (o.int8Activations !== undefined) return { activations: o.int8Activations ? 'int8' : 'f32', reason: `int8Activations: ${o.int8Activations}` };
  if (o.weightOnly) return { activations: 'f32', reason: 'weightOnly' };
  if (format === 'llama2c-v2') return { activations: 'int8', reason: "a llama2.c v2 (runq.c) file: W8A8, as runq.c runs it" };
  const dtypes = new Set(tensors.map((t) => t.dtype));
  if (dtypes.has('q8_m')) return { activations: 'f32', reason: 'q8_m matrices (Q4_1, Q5_x, K-quants): f32 activations unless int8Activations' };
  if (!dtypes.has('q8_0') && !dtypes.has('q4_0')) return { activations: 'f32', reason: 'no quantised matrix' };
  if (!cpu.every(Boolean)) return { activations: 'f32', reason: 'a GPU rank: f32 activations (weight-only) unless int8Activations' };
  return { activations: 'int8', reason: "every rank is a CPU rank: Q8_0/Q4_0 matrices take int8 activations, as llama.cpp's CPU path does" };
}
