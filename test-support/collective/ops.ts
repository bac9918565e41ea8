/**
 * A rank's side of the collective tests: a job is a list of collectives that one rank runs back to
 * back (no round trip between them, so slot reuse and skew between ranks get exercised). The Node
 * worker (rank.worker.ts) and the browser harness worker both run jobs with `runJob`.
 */
import { DEFAULT_SPIN, DEFAULT_TIMEOUT_MS, type SharedGroupOptions } from '../../src/collective/shared-group.js';
import { attachCommunicator, type SharedCommunicator } from '../../src/collective/shared-communicator.js';
import { allReduce, pickAllReduce, type AllReduceAlgorithm, type AllReduceChoice } from '../../src/collective/all-reduce.js';
import { allGather } from '../../src/collective/all-gather.js';
import { barrier } from '../../src/collective/barrier.js';
import { ControlBlock } from '../../src/collective/control.js';
import { randomFloats } from './data.js';
import type { CollectiveBuffer } from '../../src/collective/layout.js';

export type RankOp =
  /**
   * zeroCopy: write the input into the slot and reduce from there into a separate out (with
   * `auto`, through the Communicator interface: `slot(n)`, then `allReduce(n)`).
   */
  | { kind: 'allReduce'; len: number; algorithm: AllReduceChoice; seed: number; zeroCopy?: boolean; outOfPlace?: boolean }
  | { kind: 'allGather'; counts: number[]; seed: number; zeroCopy?: boolean }
  | { kind: 'broadcast'; len: number; root: number; seed: number }
  | { kind: 'barrier'; delayMs?: number }
  /** A stuck rank: blocks its thread for ever (the test terminates it). */
  | { kind: 'hang' }
  /** Serve `steps` steps of the control block: reply[0] = words[0] * 10 + rank. */
  | { kind: 'steps'; steps: number; lastSeq: number }
  /** Wait for a step that should never come; reports how the wait ended. */
  | { kind: 'waitStep'; lastSeq: number; timeoutMs?: number };

export interface RankResult {
  kind: RankOp['kind'];
  algorithm?: AllReduceAlgorithm;
  data?: Float32Array;
  note?: string;
  /** The rank summed in WebAssembly SIMD (its buffer is a WebAssembly.Memory). */
  simd?: boolean;
}

export interface RankJob {
  sab: CollectiveBuffer;
  /** Identifies the group across jobs (each message delivers a new SharedArrayBuffer object). */
  group?: number;
  rank: number;
  opts?: SharedGroupOptions;
  ops: RankOp[];
}

/** A worker keeps its communicator across jobs, as a real shard worker would across steps. */
let cached: { group: number | undefined; rank: number; comm: SharedCommunicator } | undefined;

function communicator(job: RankJob): SharedCommunicator {
  if (!cached || job.group === undefined || cached.group !== job.group || cached.rank !== job.rank) {
    cached = { group: job.group, rank: job.rank, comm: attachCommunicator(job.sab, job.rank) };
  }
  const comm = cached.comm;
  comm.group.spin = job.opts?.spin ?? DEFAULT_SPIN;
  comm.group.timeoutMs = job.opts?.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  return comm;
}

export async function runJob(job: RankJob): Promise<RankResult[]> {
  const comm = communicator(job);
  const g = comm.group;
  const simd = !!g.simd;
  const results: RankResult[] = [];
  for (const op of job.ops) {
    switch (op.kind) {
      case 'allReduce': {
        const input = randomFloats(op.len, op.seed, comm.rank);
        if (op.zeroCopy && op.algorithm === 'auto') {
          comm.slot(op.len).set(input);
          // The sum is valid until the next collective: keep a copy.
          const data = Float32Array.from(await comm.allReduce(op.len));
          results.push({ kind: op.kind, algorithm: comm.world === 1 ? pickAllReduce(op.len, 1) : comm.picked, data, simd });
        } else if (op.zeroCopy) {
          const slot = comm.slot(op.len);
          slot.set(input);
          const out = new Float32Array(op.len);
          results.push({ kind: op.kind, algorithm: allReduce(g, slot, op.algorithm, out), data: out, simd });
        } else if (op.outOfPlace) {
          const out = new Float32Array(op.len);
          results.push({ kind: op.kind, algorithm: allReduce(g, input, op.algorithm, out), data: out, simd });
        } else {
          results.push({ kind: op.kind, algorithm: allReduce(g, input, op.algorithm), data: input, simd });
        }
        break;
      }
      case 'allGather': {
        const local = randomFloats(op.counts[comm.rank], op.seed, comm.rank);
        const out = new Float32Array(op.counts.reduce((a, b) => a + b, 0));
        if (op.zeroCopy) {
          const slot = comm.slot(local.length);
          slot.set(local);
          allGather(g, slot, out, op.counts);
        } else {
          allGather(g, local, out, op.counts);
        }
        results.push({ kind: op.kind, data: out });
        break;
      }
      case 'broadcast': {
        // Through the Communicator interface: the root's slot, on every rank.
        if (comm.rank === op.root) comm.slot(op.len).set(randomFloats(op.len, op.seed, op.root));
        results.push({ kind: op.kind, data: Float32Array.from(await comm.broadcast(op.len, op.root)) });
        break;
      }
      case 'barrier':
        if (op.delayMs) sleepMs(op.delayMs);
        const enter = performance.timeOrigin + performance.now();
        barrier(g);
        results.push({ kind: op.kind, note: JSON.stringify({ enter, exit: performance.timeOrigin + performance.now() }) });
        break;
      case 'hang':
        Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0);
        break;
      case 'steps': {
        const ctrl = new ControlBlock(job.sab);
        let last = op.lastSeq;
        for (let k = 0; k < op.steps; k++) {
          const step = await ctrl.waitForStep(last);
          if (!step) throw new Error('unreachable: no timeout given');
          ctrl.reply(comm.rank)[0] = step.words[0] * 10 + comm.rank;
          ctrl.signalDone(comm.rank, step.seq);
          last = step.seq;
        }
        results.push({ kind: op.kind, note: String(last) });
        break;
      }
      case 'waitStep': {
        const ctrl = new ControlBlock(job.sab);
        const step = await ctrl.waitForStep(op.lastSeq, op.timeoutMs);
        results.push({ kind: op.kind, note: step ? `step ${step.seq}` : 'timeout' });
        break;
      }
    }
  }
  return results;
}

/** Blocks this worker thread for `ms` (a wait on a word nobody notifies). */
function sleepMs(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}
