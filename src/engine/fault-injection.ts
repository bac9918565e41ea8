/**
 * Fault injection for the reliability tests: kills a rank's worker or destroys its device on a
 * live engine, so the tests can check that the engine fails the requests in flight with a typed
 * error and rebuilds the rank. Not part of the SDK (src/index.ts does not export it); the test
 * harness page imports it.
 */
import { InvalidArgumentError } from '../errors.js';

/** What a fault reaches: the worker group's test hooks. */
export interface FaultTarget {
  _terminateRankForTest(rank: number, announce: boolean): void;
  _destroyDeviceForTest(rank: number): Promise<void>;
}

/**
 * `terminate-worker` also tells the engine (as a worker 'error' event would); `crash-worker`
 * terminates it silently, as an out-of-memory kill does, so only the collective and step
 * timeouts can find it.
 */
export type Fault = { kind: 'terminate-worker' | 'crash-worker' | 'destroy-device'; rank: number };

// Keyed by the engine object, so this module needs nothing of engine.ts.
const groups = new WeakMap<object, FaultTarget>();

/** Called by `createEngine`: lets `injectFault` reach the engine's workers. */
export function registerFaultTarget(engine: object, group: FaultTarget): void {
  groups.set(engine, group);
}

/** Terminates rank `rank`'s worker or destroys its GPU device. */
export async function injectFault(engine: object, fault: Fault): Promise<void> {
  const group = groups.get(engine);
  if (!group) throw new InvalidArgumentError('injectFault needs an engine made by createEngine');
  if (fault.kind === 'destroy-device') await group._destroyDeviceForTest(fault.rank);
  else group._terminateRankForTest(fault.rank, fault.kind === 'terminate-worker');
}
