/**
 * SharedArrayBuffer collectives for the ranks of one tensor-parallel group. The main thread
 * creates the buffer and drives steps through the control block; each worker attaches a
 * communicator and calls the named collectives.
 */
export {
  createCollectiveBuffer, createCollectiveMemory, collectiveBytes, readLayout, chunkBounds, summationOrder, type CollectiveBuffer, type CollectiveBufferOptions,
  type Layout,
} from './layout.js';
export { simdSumAvailable } from './simd-sum.js';
export { attachCommunicator, Communicator, DEFAULT_SPIN, DEFAULT_TIMEOUT_MS, type CommunicatorOptions } from './communicator.js';
export { pickAllReduce, ALL_REDUCE_ALGORITHMS, type AllReduceAlgorithm, type AllReduceChoice } from './all-reduce.js';
export { ringSchedule, ringOwnedChunk, type RingStep } from './ring-schedule.js';
export { ControlBlock, STATUS_OK, STATUS_FAILED, STATUS_PARKED, type Step, type ResetInfo } from './control.js';
