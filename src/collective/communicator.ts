/**
 * A rank's handle on its tensor-parallel group, whatever carries the floats: shared memory
 * (`SharedCommunicator`, ranks of one page) or messages (`MessageCommunicator`, a group with
 * ranks in other tabs). The forward pass sees only these named collectives. Every rank calls the
 * same collectives in the same order with the same lengths (SPMD), as with NCCL.
 */
export interface Communicator {
  readonly rank: number;
  readonly world: number;
  /** This rank's staging area for n floats: a partial sum is read back straight into it (zero copy on shared memory). */
  slot(n: number): Float32Array;
  /** The sum of every rank's slot[0, n) in the fixed summation order (bitwise equal on every rank); valid until the next call. */
  allReduce(n: number): Promise<Float32Array>;
  /** Rank root's slot[0, n) on every rank; valid until the next call. */
  broadcast(n: number, root: number): Promise<Float32Array>;
  /** Resolves once every rank has called `barrier` as many times as this one. */
  barrier(): Promise<void>;
  /** Leaves the group: frees what this rank holds and tells the peers, where the transport can. */
  close(): void;
}
