/**
 * Fault injection for the reliability tests: kills a rank's worker or destroys its device on a
 * live engine, so the tests can check that the engine fails the requests in flight with a typed
 * error and rebuilds the rank.
 */
import { InvalidArgumentError } from '../../src/errors.js';
import { faultTarget } from '../../src/engine/fault-injection.js';

/**
 * `terminate-worker` also tells the engine (as a worker 'error' event would); `crash-worker`
 * terminates it silently, as an out-of-memory kill does, so only the collective and step
 * timeouts can find it.
 */
export type Fault = { kind: 'terminate-worker' | 'crash-worker' | 'destroy-device'; rank: number };

/**
 * Terminates rank `rank`'s worker or destroys its GPU device. A CPU rank has no device: its
 * worker refuses `destroy-device` with InvalidArgumentError, and is faulted by terminating it.
 */
export async function injectFault(engine: object, fault: Fault): Promise<void> {
  const group = faultTarget(engine);
  if (!group) throw new InvalidArgumentError('injectFault needs an engine made by createEngine');
  if (fault.kind === 'destroy-device') await group._destroyDeviceForTest(fault.rank);
  else group._terminateRankForTest(fault.rank, fault.kind === 'terminate-worker');
}
