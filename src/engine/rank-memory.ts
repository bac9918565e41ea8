/**
 * A CPU rank whose WebAssembly memory could not grow raises `RankMemoryError` without its
 * degree (code `CPU_MEMORY`): the rank knows only the bytes it asked for. The engine, which
 * knows the plan, names the degree and the smallest one whose ranks ask for less.
 */
import { RankMemoryError } from '../errors.js';
import type { ModelConfig, TensorInfo } from '../model/config.js';
import { evenDegrees, type Plan } from '../parallel/plan.js';
import { evenRankShapes, largestCpuRank, type CpuStateSizes } from './cpu-memory.js';

/** `e` with the degree named when it is a rank's own memory failure; any other error as it is. */
export function rankMemoryAtDegree(e: unknown, c: ModelConfig, tensors: readonly TensorInfo[] | undefined, plan: Plan, s: CpuStateSizes): unknown {
  if (!(e instanceof RankMemoryError) || e.tensorParallel !== undefined) return e;
  const fitsAt = evenDegrees(c, tensors).find((d) => {
    if (d <= plan.world) return false;
    const ranks = evenRankShapes(c, tensors, d);
    return largestCpuRank(c, ranks, ranks.map(() => true), s)!.total < e.bytes;
  });
  return new RankMemoryError(plan.world, e.bytes, e.limit, e.what, fitsAt);
}
