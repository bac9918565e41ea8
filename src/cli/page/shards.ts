/**
 * What a tensor-parallel shard of a matmul costs when the ranks' devices share one adapter (the
 * `shards` rows of `bench kernels`): `reps` dispatches of the full (n × k) matrix on one device
 * against the ranks' shards (column: n/tp × k, row: n × k/tp) on tp devices submitted at once.
 * On a CPU adapter both take the same cores, so a ratio above 1 is what sharding itself costs.
 */
import type { GpuContext } from '../../gpu/core/device.js';
import { createGpuContext } from '../../gpu/tune.js';
import type { ShardBenchRow } from '../bench-kernels.js';
import { benchMatmulOp, type BenchMatmulCase } from './kernels.js';
import { context, runOps } from './gpu.js';
import { median } from './median.js';

const ctxs: GpuContext[] = [];

async function contexts(n: number): Promise<GpuContext[]> {
  // The page's tuned context first; the others take its kernel choices (no second tuning).
  if (!ctxs.length) ctxs.push(await context());
  while (ctxs.length < n) ctxs.push(await createGpuContext({ choices: ctxs[0]!.choices }));
  return ctxs.slice(0, n);
}

/** `reps` dispatches of one matmul in one submit, awaited. */
interface Job { run(reps: number): Promise<void>; destroy(): void }

function job(ctx: GpuContext, c: BenchMatmulCase): Job {
  const { op, destroy } = benchMatmulOp(ctx, c);
  return {
    async run(reps) {
      await runOps(ctx, Array(reps).fill(op), c.m);
      await ctx.device.queue.onSubmittedWorkDone();
    },
    destroy,
  };
}

export interface ShardCase { m: number; k: number; n: number; split: 'row' | 'col'; input?: 'plain' | 'rmsnorm' | 'siluMul'; tp?: number; reps?: number; rounds?: number }

/** Median wall ms per dispatch: the full matrix on one device, and tp shards on tp devices at once. */
export async function shardCost(c: ShardCase): Promise<{ full_ms: number; shards_ms: number; ratio: number }> {
  const tp = c.tp ?? 2;
  const reps = c.reps ?? 20;
  const cs = await contexts(tp);
  const full = job(cs[0]!, { m: c.m, k: c.k, n: c.n, input: c.input });
  const shards = cs.map((ctx) => job(ctx, { m: c.m, k: c.split === 'row' ? c.k / tp : c.k, n: c.split === 'col' ? c.n / tp : c.n, input: c.input }));
  await full.run(1);
  await Promise.all(shards.map((s) => s.run(1)));
  const f: number[] = [];
  const s: number[] = [];
  for (let r = 0; r < (c.rounds ?? 5); r++) {
    let t0 = performance.now();
    await full.run(reps);
    f.push((performance.now() - t0) / reps);
    t0 = performance.now();
    await Promise.all(shards.map((j) => j.run(reps)));
    s.push((performance.now() - t0) / reps);
  }
  full.destroy();
  for (const j of shards) j.destroy();
  const fm = median(f);
  const sm = median(s);
  return { full_ms: fm, shards_ms: sm, ratio: sm / fm };
}

/**
 * stories110M's decode matmuls at batch 8 (dim 768, hidden 2048, vocab 32000) as TP = 2 shards,
 * each with the input transform the model fuses into it; `smoke`: tiny shapes, one round.
 */
export async function bench(smoke: boolean): Promise<ShardBenchRow[]> {
  const d = smoke ? 64 : 768;
  const h = smoke ? 128 : 2048;
  const v = smoke ? 512 : 32000;
  const cases: (ShardCase & { matrix: string })[] = [
    { matrix: 'wqkv', m: 8, k: d, n: 3 * d, split: 'col', input: 'rmsnorm' },
    { matrix: 'wo', m: 8, k: d, n: d, split: 'row' },
    { matrix: 'w13', m: 8, k: d, n: 2 * h, split: 'col', input: 'rmsnorm' },
    { matrix: 'w2', m: 8, k: h, n: d, split: 'row', input: 'siluMul' },
    { matrix: 'output', m: 8, k: d, n: v, split: 'col', input: 'rmsnorm' },
  ];
  const rows: ShardBenchRow[] = [];
  for (const c of cases) {
    // About 40 ms of work per timed submit, whatever the matrix.
    const reps = smoke ? 2 : Math.max(2, Math.round(40 / Math.max(0.1, (c.n * c.k) / 1.5e5)));
    const r = await shardCost({ ...c, tp: 2, reps, rounds: smoke ? 1 : 7 });
    rows.push({ matrix: c.matrix, split: c.split, m: c.m, k: c.k, n: c.n, tp: 2, full_ms: r.full_ms, shards_ms: r.shards_ms, ratio: r.ratio });
  }
  return rows;
}
