/**
 * A rank's side of the collective tests: a job is a list of collectives that one rank runs back to
 * back (no round trip between them, so slot reuse and skew between ranks get exercised). The Node
 * worker (rank.worker.ts) and the browser harness worker both run jobs with `runJob`.
 */
import { DEFAULT_SPIN, DEFAULT_TIMEOUT_MS, attachCommunicator, type Communicator, type CommunicatorOptions } from '../communicator.js';
import type { AllReduceAlgorithm, AllReduceChoice } from '../all-reduce.js';
import { ControlBlock } from '../control.js';
import { randomFloats } from './data.js';
import type { CollectiveBuffer } from '../layout.js';

export type RankOp =
  /**
   * zeroCopy: write the input into comm.slot() and reduce from there into a separate out.
   * lateRank: that rank enters 20 ms after the others, so they sleep in the collective's first wait.
   */
  | { kind: 'allReduce'; len: number; algorithm: AllReduceChoice; seed: number; zeroCopy?: boolean; outOfPlace?: boolean; lateRank?: number }
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
  opts?: CommunicatorOptions;
  ops: RankOp[];
}

/** A worker keeps its communicator across jobs, as a real shard worker would across steps. */
let cached: { group: number | undefined; rank: number; comm: Communicator } | undefined;

function communicator(job: RankJob): Communicator {
  if (!cached || job.group === undefined || cached.group !== job.group || cached.rank !== job.rank) {
    cached = { group: job.group, rank: job.rank, comm: attachCommunicator(job.sab, job.rank) };
  }
  const comm = cached.comm;
  comm.spin = job.opts?.spin ?? DEFAULT_SPIN;
  comm.timeoutMs = job.opts?.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  return comm;
}

export async function runJob(job: RankJob): Promise<RankResult[]> {
  const comm = communicator(job);
  const results: RankResult[] = [];
  for (const op of job.ops) {
    switch (op.kind) {
      case 'allReduce': {
        const input = randomFloats(op.len, op.seed, comm.rank);
        if (op.lateRank === comm.rank) sleepMs(20);
        if (op.zeroCopy) {
          const slot = comm.slot().subarray(0, op.len);
          slot.set(input);
          const out = new Float32Array(op.len);
          results.push({ kind: op.kind, algorithm: comm.allReduce(slot, op.algorithm, out), data: out, simd: !!comm.simd });
        } else if (op.outOfPlace) {
          const out = new Float32Array(op.len);
          results.push({ kind: op.kind, algorithm: comm.allReduce(input, op.algorithm, out), data: out, simd: !!comm.simd });
        } else {
          results.push({ kind: op.kind, algorithm: comm.allReduce(input, op.algorithm), data: input, simd: !!comm.simd });
        }
        break;
      }
      case 'allGather': {
        const local = randomFloats(op.counts[comm.rank], op.seed, comm.rank);
        const out = new Float32Array(op.counts.reduce((a, b) => a + b, 0));
        if (op.zeroCopy) {
          const slot = comm.slot().subarray(0, local.length);
          slot.set(local);
          comm.allGather(slot, out, op.counts);
        } else {
          comm.allGather(local, out, op.counts);
        }
        results.push({ kind: op.kind, data: out });
        break;
      }
      case 'broadcast': {
        const buf = comm.rank === op.root ? randomFloats(op.len, op.seed, op.root) : new Float32Array(op.len);
        comm.broadcast(buf, op.root);
        results.push({ kind: op.kind, data: buf });
        break;
      }
      case 'barrier':
        if (op.delayMs) sleepMs(op.delayMs);
        const enter = performance.timeOrigin + performance.now();
        comm.barrier();
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
