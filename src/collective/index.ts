/**
 * Collectives for the ranks of one tensor-parallel group: the `Communicator` interface, over
 * shared memory (the main thread creates the buffer and drives steps through the control block;
 * each worker attaches) or over messages (ranks in other tabs).
 */
export {
  createCollectiveBuffer, createCollectiveMemory, collectiveBytes, readLayout, chunkBounds, summationOrder, type CollectiveBuffer, type CollectiveBufferOptions,
  type Layout,
} from './layout.js';
export { simdSumAvailable } from './simd-sum.js';
export type { Communicator } from './communicator.js';
export { attachCommunicator, SharedCommunicator } from './shared-communicator.js';
export { SharedGroup, DEFAULT_SPIN, CPU_RANK_SPIN, defaultSpin, DEFAULT_TIMEOUT_MS, type SharedGroupOptions } from './shared-group.js';
export { MessageCommunicator, broadcastLinks, type MessageCommunicatorOptions } from './message-transport.js';
export { pickAllReduce, ALL_REDUCE_ALGORITHMS, type AllReduceAlgorithm, type AllReduceChoice } from './all-reduce.js';
export { ringSchedule, ringOwnedChunk, type RingStep } from './ring-schedule.js';
export { ControlBlock, type Step, type ResetInfo } from './control.js';
