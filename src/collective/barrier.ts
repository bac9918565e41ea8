import type { SharedGroup } from './shared-group.js';

/**
 * Barrier: returns once every rank has entered it. Each rank publishes one tick and waits for
 * every other rank's counter to reach it (no shared counter, so no contended line).
 */
export function barrier(comm: SharedGroup): void {
  if (comm.world === 1) return;
  const t = comm.begin('barrier');
  comm.publish(t + 1);
  comm.waitAll(t + 1);
  comm.end(t + 1);
}
