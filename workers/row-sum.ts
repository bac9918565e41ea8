/**
 * How a rank combines a row-parallel matmul's partial sums into the new residual stream: one
 * strategy per rank, chosen once (`chooseRowSum`) and passed to the forward as a value. Each is
 * backend-neutral: it runs the matmul and the collectives through the `StageRunner`.
 */
import type { Activation, RowBinding, RowOp, StageRunner, StepTimes } from './backend.js';
import type { Communicator } from '../src/collective/communicator.js';

export interface RowSum {
  /** How the backend binds this rank's row-parallel matmuls. */
  readonly binding: RowBinding;
  /** Runs row-parallel `op` (n floats: the step's rows of x) and leaves the sum over every rank in x. */
  allReduce<S, Op>(b: StageRunner<S, Op>, s: S, op: RowOp<Op>, comm: Communicator, n: number, times: StepTimes): Promise<void>;
}

/** Round trips kept for the median in `stats()`. */
const MAX_ROUNDTRIPS = 4096;

/** One rank: nothing to reduce, the matmul accumulates into x and the whole step is one stage. */
const single: RowSum = {
  binding: { into: 'x', continueSum: false, sumIn: 'x' },
  async allReduce(b, s, op) {
    b.run(s, op.matmul);
  },
};

/**
 * Megatron's all-reduce. Rank 0's partial sum carries the residual and the bias (Megatron adds
 * a row-parallel bias on one rank): it accumulates into x, so the sum is the new x and is
 * uploaded straight into it, with no add pass.
 */
function carried(rank: number): RowSum {
  const from: Activation = rank === 0 ? 'x' : 'partial';
  return {
    binding: { into: from, continueSum: false, sumIn: 'x' },
    async allReduce(b, s, op, comm, n, times) {
      b.run(s, op.matmul);
      const t0 = performance.now();
      await b.read(s, from, comm.slot(n), 'sync');
      const t1 = performance.now();
      const sum = await comm.allReduce(n);
      const t2 = performance.now();
      b.write(s, 'x', sum);
      const t3 = performance.now();
      times.readback += t1 - t0;
      times.allreduce += t2 - t1;
      times.upload += t3 - t2;
      if (times.roundtrips.length < MAX_ROUNDTRIPS) times.roundtrips.push(t3 - t0);
    },
  };
}

/**
 * runq.c's sums to the bit (W8A8 `runqExact`): the matmul runs on one rank after another, each
 * continuing the per-row sums of the ranks before it (the plan's ranges ascend with the rank, so
 * their columns come first), and the last rank's sums go to every rank. A later rank submits its
 * stage before it waits, so only the matmuls and round trips are serial: world of them, not one.
 */
function chained(rank: number, world: number): RowSum {
  return {
    binding: { into: 'partial', continueSum: rank > 0, sumIn: 'partial' },
    async allReduce(b, s, op, comm, n, times) {
      const t0 = performance.now();
      let waited = 0;
      let uploaded = 0;
      const upload = (v: Float32Array) => {
        const u = performance.now();
        b.write(s, 'partial', v);
        uploaded += performance.now() - u;
      };
      const receive = async (root: number) => {
        const w = performance.now();
        const v = await comm.broadcast(n, root);
        waited += performance.now() - w;
        return v;
      };
      if (rank > 0) {
        b.submit(s);
        let before!: Float32Array;
        for (let r = 0; r < rank; r++) before = await receive(r);
        upload(before);
      }
      b.run(s, op.matmul);
      const r0 = performance.now();
      await b.read(s, 'partial', comm.slot(n), 'chain');
      times.readback += performance.now() - r0;
      await receive(rank);
      // The last rank's partial already holds the full sums.
      let sum: Float32Array | undefined;
      for (let r = rank + 1; r < world; r++) sum = await receive(r);
      if (sum) upload(sum);
      for (const add of op.addSum) b.run(s, add);
      times.allreduce += waited;
      times.upload += uploaded;
      if (times.roundtrips.length < MAX_ROUNDTRIPS) times.roundtrips.push(performance.now() - t0);
    },
  };
}

/** The strategy of rank `rank` of `world`; `exact`: runq.c's sums (W8A8 runqExact). */
export function chooseRowSum(rank: number, world: number, exact: boolean): RowSum {
  if (world === 1) return single;
  return exact ? chained(rank, world) : carried(rank);
}
