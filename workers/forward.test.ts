import { describe, expect, it } from 'vitest';
import type { Activation, RankState, RowBinding, RowOp, StageRunner } from './backend.js';
import type { Communicator } from '../src/collective/communicator.js';
import { forward } from './forward.js';
import { chooseRowSum } from './row-sum.js';

/** A backend of plain arrays (dim 1): each op is a function of the state, each rank's wo/w2 adds its own share. */
type Op = (s: State) => void;
interface State extends RankState<Op> {
  x: Float32Array;
  partial: Float32Array;
  m: number;
  trace: string[];
}

const runner: StageRunner<State, Op> = {
  begin: (s, input) => void (s.m = input.m),
  run: (s, op) => op(s),
  submit: (s) => void s.trace.push('submit'),
  read: async (s, from, into) => {
    s.trace.push(`read ${from}`);
    into.set(s[from].subarray(0, into.length));
  },
  write: (s, to, v) => {
    s.trace.push(`write ${to}`);
    s[to].set(v);
  },
  head: async (s, rows, into) => into.set(Array.from(rows, (r) => s.x[r]!)),
};

const BIAS = 0.5;
const share = (which: 'wo' | 'w2', rank: number) => (which === 'wo' ? 1 : 10) * (rank + 1);

function createState(rank: number, b: RowBinding, nLayers: number): State {
  const each = (s: State, f: (i: number) => void) => {
    for (let i = 0; i < s.m; i++) f(i);
  };
  // Bound as the GPU backend binds them: the bias with the matmul into x, or with the sum's add.
  const rowOp = (which: 'wo' | 'w2', bias: number): RowOp<Op> => ({
    matmul: (s) => each(s, (i) => {
      if (b.into === 'x') s.x[i]! += share(which, rank) + bias;
      else s.partial[i] = (b.continueSum ? s.partial[i]! : 0) + share(which, rank);
    }),
    addSum: b.sumIn === 'x' ? [] : [
      ...(bias ? [(s: State) => each(s, (i) => void (s.partial[i]! += bias))] : []),
      (s: State) => each(s, (i) => void (s.x[i]! += s.partial[i]!)),
    ],
  });
  const none: Op = () => {};
  return {
    dim: 1, x: new Float32Array(4), partial: new Float32Array(4), m: 0, trace: [],
    embed: (s) => each(s, (i) => void (s.x[i] = i + 1)),
    layers: Array.from({ length: nLayers }, () => ({ qkv: none, qkNorm: [], rope: none, attention: none, wo: rowOp('wo', BIAS), w13: none, w2: rowOp('w2', 0) })),
  };
}

/** world communicators over plain arrays: every collective waits for all ranks, sums in rank order. */
function group(world: number): Communicator[] {
  const slots = Array.from({ length: world }, () => new Float32Array(4));
  let arrived = 0;
  let waiting: (() => void)[] = [];
  const barrier = () => new Promise<void>((resolve) => {
    waiting.push(resolve);
    if (++arrived < world) return;
    for (const w of waiting) w();
    [arrived, waiting] = [0, []];
  });
  return slots.map((slot, rank) => ({
    rank, world,
    slot: (n) => slot.subarray(0, n),
    async allReduce(n) {
      await barrier();
      const sum = new Float32Array(n);
      for (const s of slots) for (let i = 0; i < n; i++) sum[i]! += s[i]!;
      await barrier();
      return sum;
    },
    async broadcast(n, root) {
      await barrier();
      const v = slots[root]!.slice(0, n);
      await barrier();
      return v;
    },
    barrier,
    close() {},
  }));
}

async function run(world: number, exact: boolean, nLayers = 2) {
  const comms = group(world);
  const input = { m: 2, tokens: new Int32Array(2), positions: new Int32Array(2), slots: new Int32Array(2), logitRows: Int32Array.of(0, 1) };
  const ranks = comms.map((comm, rank) => {
    const sum = chooseRowSum(rank, world, exact);
    return { comm, sum, s: createState(rank, sum.binding, nLayers), into: new Float32Array(2) };
  });
  const times = { compute: 0, readback: 0, allreduce: 0, upload: 0, roundtrips: [] };
  await Promise.all(ranks.map((r) => forward(runner, r.s, r.sum, r.comm, input, r.into, times)));
  const perLayer = Array.from({ length: world }, (_, r) => share('wo', r) + share('w2', r)).reduce((a, b) => a + b) + BIAS;
  return { ranks, expected: [1, 2].map((x0) => x0 + nLayers * perLayer), syncs: 2 * nLayers };
}

describe('forward: one loop, the rank strategy chosen once', () => {
  it('at world 1 runs every layer in one stage: nothing read back or uploaded', async () => {
    for (const exact of [false, true]) {
      const { ranks, expected } = await run(1, exact);
      expect(Array.from(ranks[0]!.into)).toEqual(expected);
      expect(ranks[0]!.s.trace).toEqual([]);
    }
  });

  it('all-reduces into x: rank 0 carries the residual and the bias, the others a bare partial sum', async () => {
    for (const world of [2, 3]) {
      const { ranks, expected, syncs } = await run(world, false);
      for (const [rank, r] of ranks.entries()) {
        expect(Array.from(r.into)).toEqual(expected);
        const from: Activation = rank === 0 ? 'x' : 'partial';
        expect(r.s.trace).toEqual(Array.from({ length: syncs }, () => [`read ${from}`, 'write x']).flat());
      }
    }
  });

  it('chains the exact sums rank after rank, the later ranks submitting their stage before they wait', async () => {
    for (const world of [2, 3]) {
      const { ranks, expected, syncs } = await run(world, true);
      for (const [rank, r] of ranks.entries()) {
        expect(Array.from(r.into)).toEqual(expected);
        const sync = [...(rank > 0 ? ['submit', 'write partial'] : []), 'read partial', ...(rank < world - 1 ? ['write partial'] : [])];
        expect(r.s.trace).toEqual(Array.from({ length: syncs }, () => sync).flat());
      }
    }
  });
});
