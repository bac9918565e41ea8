/**
 * `"auto"`'s measurement: each candidate placement is loaded for real and runs a few decode
 * steps, and the fastest is kept loaded, so the winner costs no second load. At most two
 * candidates are loaded at once (the best so far and the one being timed). With the shard cache
 * on, a later load's candidates come from IndexedDB instead of the network.
 */
import { chooseTimed, timedPlacement } from './auto-placement.js';
import type { Placement, TimedChoice } from './placement-types.js';
import type { StepBackend } from './scheduler.js';

/** Decode steps timed per candidate, after one warm-up step. */
export const TIMED_STEPS = 4;

/** Median ms per step of one sequence in slot 0 decoding BOS at positions 1..steps, after a warm-up at 0. */
export async function msPerStep(b: StepBackend, steps = TIMED_STEPS): Promise<number> {
  await b.step([{ token: 1, position: 0, slot: 0 }], [0]);
  const t: number[] = [];
  for (let i = 1; i <= steps; i++) {
    const t0 = performance.now();
    await b.step([{ token: 1, position: i, slot: 0 }], [0]);
    t.push(performance.now() - t0);
  }
  t.sort((a, b) => a - b);
  return t.length % 2 ? t[(t.length - 1) / 2]! : (t[t.length / 2 - 1]! + t[t.length / 2]!) / 2;
}

/**
 * Loads and times every candidate of `t` in order and returns the chosen placement with its
 * loaded group; every other group is disposed. `load` may refuse a candidate after the first by
 * returning undefined (one that does not fit), which then never wins.
 */
export async function loadFastest<G extends StepBackend & { dispose(): Promise<void> }>(
  t: TimedChoice, load: (p: Placement, i: number) => Promise<G | undefined>, steps = TIMED_STEPS,
): Promise<{ placement: Placement; group: G }> {
  const t0 = performance.now();
  const ms: number[] = [];
  let best: G | undefined;
  try {
    for (const [i, p] of t.candidates.entries()) {
      const group = await load(p, i);
      if (!group) {
        ms.push(Infinity);
        continue;
      }
      let m: number;
      try {
        m = await msPerStep(group, steps);
      } catch (e) {
        await group.dispose();
        throw e;
      }
      ms.push(m);
      if (chooseTimed(ms) === i) {
        await best?.dispose();
        best = group;
      } else {
        await group.dispose();
      }
    }
  } catch (e) {
    await best?.dispose();
    throw e;
  }
  if (!best) throw new Error('unreachable: the first candidate is always loaded');
  return { placement: timedPlacement(t, ms, steps, performance.now() - t0), group: best };
}
