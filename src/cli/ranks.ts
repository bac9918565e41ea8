/**
 * Each rank's backend as the CLI reports it (`generate --json`'s `ranks`, `bench generate`'s
 * rows): a CPU rank (WebAssembly SIMD) or a GPU one (WebGPU), with its adapter and its share of each axis.
 */
import type { EngineStats, RankBackend } from '../engine/types.js';

export interface RankReport {
  rank: number;
  backend: RankBackend;
  adapter: string;
  /** The spec its worker asked with (`cpu`, `default`, `high-performance`, ...). */
  spec?: string;
  /** Query heads [start, end). */
  heads?: [number, number];
  /** MLP hidden units [start, end). */
  hidden?: [number, number];
  /** Vocabulary rows [start, end). */
  vocab?: [number, number];
}

export function rankReports(stats: EngineStats): RankReport[] {
  const placed = stats.placement?.ranks ?? [];
  return stats.ranks.map((r) => {
    const p = placed.find((x) => x.rank === r.rank);
    return { rank: r.rank, backend: r.backend, adapter: r.adapter, ...(p && { spec: p.spec, heads: p.heads, hidden: p.hidden, vocab: p.vocab }) };
  });
}

/** `cpu` or `gpu` when every rank is of that kind, else `mixed`. */
export function backendOf(ranks: readonly RankReport[]): RankBackend | 'mixed' {
  const kinds = new Set(ranks.map((r) => r.backend));
  return kinds.size === 1 ? [...kinds][0]! : 'mixed';
}
