import { InvalidArgumentError } from '../errors.js';
import type { SharedGroup } from './shared-group.js';

/**
 * Broadcast: after it returns, `buf` on every rank holds rank `root`'s `buf`. The root writes its
 * slot (no copy when `buf` is its `comm.slot()` view) and every other rank copies from it.
 */
export function broadcast(comm: SharedGroup, buf: Float32Array, root: number): void {
  if (comm.world === 1) return;
  if (!Number.isInteger(root) || root < 0 || root >= comm.world) {
    throw new InvalidArgumentError(`broadcast: root must be a rank in [0, ${comm.world}), got ${root}`);
  }
  comm.checkLength(buf.length, 'broadcast');
  if (comm.rank !== root) comm.checkOutput(buf, 'broadcast');
  const t = comm.begin('broadcast');
  if (comm.rank === root) {
    comm.writeOwnSlot(buf);
    // One store says both "data ready" (t+1) and "done" (t+2): the root reads nothing.
    comm.publish(t + 2);
    comm.exposeSlot(comm.otherRanks, t + 2);
  } else {
    // Arrival (t+1) costs one store and lets a timeout tell absent ranks from a dead root.
    comm.publish(t + 1);
    comm.waitRank(root, t + 1);
    buf.set(comm.slots[root].subarray(0, buf.length));
    comm.publish(t + 2);
  }
  comm.end(t + 2);
}
