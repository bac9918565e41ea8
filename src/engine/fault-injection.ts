/**
 * The seam the reliability tests reach a live engine's workers through (test-support/engine/
 * faults.ts injects the faults). Not part of the SDK: src/index.ts does not export it.
 */

/** What a fault reaches: the worker group's test hooks. */
export interface FaultTarget {
  _terminateRankForTest(rank: number, announce: boolean): void;
  _destroyDeviceForTest(rank: number): Promise<void>;
}

// Keyed by the engine object, so this module needs nothing of engine.ts.
const groups = new WeakMap<object, FaultTarget>();

/** Called by `createEngine`: lets the tests reach the engine's workers. */
export function registerFaultTarget(engine: object, group: FaultTarget): void {
  groups.set(engine, group);
}

/** The worker group behind an engine made by `createEngine`. */
export function faultTarget(engine: object): FaultTarget | undefined {
  return groups.get(engine);
}
