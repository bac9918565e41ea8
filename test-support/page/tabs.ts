/**
 * The tab checks of the test page: a page that joined a group (src/cli/page/tabs.ts) runs the same
 * all-reduces as its peers. Results are checked in the page against the documented sum and
 * returned as a hash of their bits, so the test can see that every page holds the same bits.
 */
import type { MessageAllReduceAlgorithm } from '../../src/collective/message-transport.js';
import { firstBitDifference, randomFloats, referenceSum } from '../collective/data.js';
import { fnv1a64 } from '../../src/parallel/plan.js';
import { serializeError, type SerializedError } from '../../src/errors.js';
import { joined } from '../../src/cli/page/tabs.js';

function hashBits(a: Float32Array): string {
  const u = new Uint32Array(a.buffer, a.byteOffset, a.length);
  let s = '';
  for (let i = 0; i < u.length; i++) s += String.fromCharCode(u[i]! & 0xffff, u[i]! >>> 16);
  return fnv1a64(s);
}

export interface TabAllReduceResult {
  len: number;
  algorithm: MessageAllReduceAlgorithm;
  /** First element whose bits differ from the documented sum, or -1. */
  firstDifference: number;
  hash: string;
}

/** Runs one all-reduce per length on seeded inputs (every rank makes its own and everyone's, to check). */
export async function allReduce(
  group: string, lens: number[], seed: number, algorithm: MessageAllReduceAlgorithm | 'auto' = 'auto',
): Promise<TabAllReduceResult[] | { error: SerializedError }> {
  const comm = joined(group);
  if (!comm) return { error: serializeError(new Error(`not joined to ${group}`)) };
  try {
    const out: TabAllReduceResult[] = [];
    for (const [k, len] of lens.entries()) {
      const inputs = Array.from({ length: comm.world }, (_, r) => randomFloats(len, seed + k, r));
      const sum = new Float32Array(len);
      const algo = await comm.allReduceArray(inputs[comm.rank]!, algorithm, sum);
      out.push({ len, algorithm: algo, firstDifference: firstBitDifference(sum, referenceSum(inputs)), hash: hashBits(sum) });
    }
    return out;
  } catch (e) {
    return { error: serializeError(e) };
  }
}
