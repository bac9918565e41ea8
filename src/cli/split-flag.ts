/**
 * `--split`: the engine's `split` from the command line. A plain list, `2,1`, is per-rank shares
 * of every axis; `heads=2,1` gives one axis's shares and leaves the others even, and a name
 * starts each axis's list, so `heads=2,1,vocab=3,1` sets two. The axes are heads, hidden, vocab.
 */
import { AXIS_NAMES, type AxisName, type AxisSplit } from '../parallel/axis-split.js';
import { UsageError } from './usage-error.js';

const EXPECTED = `per-rank shares (0.6667,0.3333), or per axis (heads=2,1; axes ${AXIS_NAMES.join(', ')}; several as heads=2,1,vocab=1,1)`;

function share(item: string, value: string): number {
  const v = item.trim() === '' ? NaN : Number(item);
  if (!(Number.isFinite(v) && v > 0)) throw new UsageError(`--split: a share is a number > 0; got ${JSON.stringify(item)} in ${JSON.stringify(value)}`);
  return v;
}

export function parseSplitFlag(value: string): number[] | AxisSplit {
  const items = value.split(',');
  if (!items[0]!.includes('=')) {
    if (items.some((x) => x.includes('='))) throw new UsageError(`--split is ${EXPECTED}, not both; got ${JSON.stringify(value)}`);
    return items.map((x) => share(x, value));
  }
  const axes: Partial<Record<AxisName, number[]>> = {};
  let current: number[] = [];
  for (const item of items) {
    const eq = item.indexOf('=');
    if (eq >= 0) {
      const name = item.slice(0, eq).trim();
      const axis = AXIS_NAMES.find((a) => a === name);
      if (!axis) throw new UsageError(`--split: no axis ${JSON.stringify(name)}; the axes are ${AXIS_NAMES.join(', ')}`);
      if (axes[axis]) throw new UsageError(`--split names ${axis} twice in ${JSON.stringify(value)}`);
      current = axes[axis] = [];
      current.push(share(item.slice(eq + 1), value));
    } else {
      current.push(share(item, value));
    }
  }
  const lengths = new Set(Object.values(axes).map((xs) => xs.length));
  if (lengths.size > 1) throw new UsageError(`--split: every axis has one share per rank; got ${JSON.stringify(value)}`);
  return axes;
}
