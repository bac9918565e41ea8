import { InvalidArgumentError } from '../errors.js';
import type { SharedGroup } from './shared-group.js';

/**
 * All-gather: `out` on every rank becomes the concatenation, in rank order, of every rank's
 * `local`. `counts[j]` is the length rank j contributes (default: every rank `local.length`),
 * for uneven splits such as a vocabulary of 512 rows over 3 ranks (171/171/170). Each rank writes
 * its slot (no copy when `local` is its `comm.slot()` view), one barrier, then copies every slot.
 */
export function allGather(comm: SharedGroup, local: Float32Array, out: Float32Array, counts?: readonly number[]): void {
  if (comm.world === 1) {
    if (out !== local) out.set(local);
    return;
  }
  const n = counts ?? new Array<number>(comm.world).fill(local.length);
  if (n.length !== comm.world) throw new InvalidArgumentError(`allGather: expected ${comm.world} counts (one per rank), got ${n.length}`);
  if (n[comm.rank] !== local.length) {
    throw new InvalidArgumentError(`allGather: rank ${comm.rank} expected ${n[comm.rank]} local floats (counts[${comm.rank}]), got ${local.length}`);
  }
  let total = 0;
  for (const c of n) {
    if (!Number.isInteger(c) || c < 0) throw new InvalidArgumentError(`allGather: counts must be whole numbers ≥ 0, got ${c}`);
    comm.checkLength(c, 'allGather');
    total += c;
  }
  if (out.length < total) throw new InvalidArgumentError(`allGather: expected an output of at least ${total} floats, got ${out.length}`);
  comm.checkOutput(out, 'allGather');
  const t = comm.begin('allGather');
  comm.writeOwnSlot(local);
  comm.publish(t + 1);
  comm.waitAll(t + 1);
  let at = 0;
  for (let j = 0; j < comm.world; j++) {
    out.set(comm.slots[j].subarray(0, n[j]), at);
    at += n[j];
  }
  comm.publish(t + 2);
  comm.exposeSlot(comm.otherRanks, t + 2);
  comm.end(t + 2);
}
