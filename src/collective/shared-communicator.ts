/**
 * The `Communicator` of ranks that share a SharedArrayBuffer (or a shared WebAssembly.Memory):
 * `attachCommunicator(buf, rank)` in each worker. Its collectives run synchronously inside the
 * promise (a rank blocks in `Atomics.wait` only once its own data is in its slot).
 */
import type { Communicator } from './communicator.js';
import type { CollectiveBuffer } from './layout.js';
import { SharedGroup, type SharedGroupOptions } from './shared-group.js';
import { allReduce, type AllReduceAlgorithm } from './all-reduce.js';
import { broadcast } from './broadcast.js';
import { barrier } from './barrier.js';

/** Attaches rank `rank` to the group whose buffer is `buf`. */
export function attachCommunicator(buf: CollectiveBuffer, rank: number, opts: SharedGroupOptions = {}): SharedCommunicator {
  return new SharedCommunicator(new SharedGroup(buf, rank, opts));
}

export class SharedCommunicator implements Communicator {
  readonly rank: number;
  readonly world: number;
  /** What `allReduce` ran last (`pickAllReduce` by length). */
  picked: AllReduceAlgorithm = 'one-shot';
  /** Where sums and received broadcasts land: never the shared slot, which other ranks may still be reading. */
  private readonly out: Float32Array;

  constructor(readonly group: SharedGroup) {
    this.rank = group.rank;
    this.world = group.world;
    this.out = new Float32Array(group.slotFloats);
  }

  slot(n: number): Float32Array {
    this.group.checkLength(n, 'slot');
    return this.group.slot().subarray(0, n);
  }

  async allReduce(n: number): Promise<Float32Array> {
    if (this.world === 1) return this.slot(n);
    const out = this.out.subarray(0, n);
    this.picked = allReduce(this.group, this.slot(n), 'auto', out);
    return out;
  }

  async broadcast(n: number, root: number): Promise<Float32Array> {
    if (root === this.rank) {
      const mine = this.slot(n);
      broadcast(this.group, mine, root);
      return mine;
    }
    const out = this.out.subarray(0, n);
    broadcast(this.group, out, root);
    return out;
  }

  async barrier(): Promise<void> {
    barrier(this.group);
  }

  /** Nothing to free: the buffer is the main thread's, which disposes the group through the control block. */
  close(): void {}
}
