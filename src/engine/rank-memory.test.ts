import { describe, expect, it } from 'vitest';
import { c110, kTable } from '../../test-support/model/kquant-table.js';
import { CpuMemoryError, PlanError, RankMemoryError, reviveError, serializeError } from '../errors.js';
import { makePlan } from '../parallel/plan.js';
import { evenRankShapes, largestCpuRank } from './cpu-memory.js';
import { rankMemoryAtDegree } from './rank-memory.js';

const s = { contextLength: 256, maxBatch: 1, maxRows: 8, kvBytes: 4 };
/** What the largest CPU rank of an even `d`-rank plan needs, as cpu-memory counts it. */
const need = (tensors: ReturnType<typeof kTable> | undefined, d: number) => {
  const ranks = evenRankShapes(c110, tensors, d);
  return largestCpuRank(c110, ranks, ranks.map(() => true), s)!.total;
};
/** A rank's memory failure as it reaches the main thread: thrown in a worker, serialized, revived. */
const fromRank = (bytes: number) => reviveError(serializeError(new CpuMemoryError(bytes, 'the memory could not grow to it (out of memory)')));

describe('RankMemoryError: one error for a CPU rank too large for its memory', () => {
  it('CpuMemoryError is a RankMemoryError (code CPU_MEMORY kept), across the worker boundary too', () => {
    const e = fromRank(3 * 2 ** 30);
    expect(e).toBeInstanceOf(RankMemoryError);
    expect(e).toBeInstanceOf(CpuMemoryError);
    expect(e).toMatchObject({ name: 'CpuMemoryError', code: 'CPU_MEMORY', bytes: 3 * 2 ** 30, limit: 2 ** 32, tensorParallel: undefined, fitsAt: undefined });
    expect(e.message).toMatch(/^A CPU rank needs 3\.00 GiB of WebAssembly memory: the memory could not grow to it \(out of memory\)\. Split the model over more CPU ranks/);
    expect(new CpuMemoryError(2 ** 33, 'more than one WebAssembly memory holds (4 GiB)').message).toMatch(/^A CPU rank needs 8\.00 GiB \(more than one .*\), over one WebAssembly memory's 4\.00 GiB/);
  });

  it('the engine names the degree, and the smallest degree whose ranks ask for less than was refused', () => {
    const plan = makePlan(c110, { tensorParallel: 1 });
    const asked = (need(undefined, 1) + need(undefined, 2)) / 2;
    const e = rankMemoryAtDegree(fromRank(asked), c110, undefined, plan, s) as RankMemoryError;
    expect(e).toBeInstanceOf(RankMemoryError);
    expect(e).toMatchObject({ code: 'RANK_MEMORY', tensorParallel: 1, fitsAt: 2, bytes: asked, what: 'the memory could not grow to it (out of memory)' });
    expect(e.message).toMatch(/^At TP=1 a CPU rank needs \d+\.\d MiB of WebAssembly memory: the memory could not grow to it \(out of memory\)\. Split it over at least 2 CPU ranks \(tensorParallel: 2\)/);
    // Less room: more ranks.
    expect((rankMemoryAtDegree(fromRank(need(undefined, 3) + 1), c110, undefined, plan, s) as RankMemoryError).fitsAt).toBe(3);
    // None asks for less: the remedy says no degree fits.
    const none = rankMemoryAtDegree(fromRank(1 << 20), c110, undefined, plan, s) as RankMemoryError;
    expect(none.fitsAt).toBeUndefined();
    expect(none.remedy).toContain('No degree fits');
  });

  it('only degrees the plan accepts: a K-quant file skips 2 (1.5 super-blocks of wo a rank)', () => {
    const t = kTable(c110);
    // The same bytes in groups of 32 alone, which 2 ranks may split: room for 2 of those ranks.
    const loose = kTable(c110, 32, 0);
    const asked = need(loose, 2) + 1;
    const at = (tensors: typeof t) => (rankMemoryAtDegree(fromRank(asked), c110, tensors, makePlan(c110, { tensorParallel: 1 }, tensors), s) as RankMemoryError).fitsAt;
    expect(at(loose)).toBe(2);
    expect(at(t)).toBe(3);
  });

  it('any other error, or one that already names its degree, passes unchanged', () => {
    const plan = makePlan(c110, { tensorParallel: 1 });
    const other = new PlanError('x');
    expect(rankMemoryAtDegree(other, c110, undefined, plan, s)).toBe(other);
    const named = new RankMemoryError(1, 2 ** 33, 2 ** 32, 'rank 0', 4);
    expect(rankMemoryAtDegree(named, c110, undefined, plan, s)).toBe(named);
  });
});
