/**
 * Vitest setup: `toEqual` on two typed arrays of one class compares their elements in one loop,
 * with `Object.is` as the default does. The default walks them as iterables and then again as
 * `Object.entries`, an [index, value] pair per element: ~6 µs an element.
 */
import { expect } from 'vitest';

type Typed = Exclude<ArrayBufferView, DataView>;
const isTyped = (x: unknown): x is Typed => ArrayBuffer.isView(x) && !(x instanceof DataView);

// With `isolate: false` a worker runs this before each of its files, into one shared expect.
const added = Symbol.for('webgpu-tp.typedArrayEquality');
const registry = globalThis as { [added]?: true };
if (!registry[added]) {
  registry[added] = true;
  expect.addEqualityTesters([typedArrayEquality]);
}

function typedArrayEquality(a: unknown, b: unknown): boolean | undefined {
  // Other classes (Buffer against Uint8Array) are left to the default, which says unequal.
  if (!isTyped(a) || !isTyped(b) || a.constructor !== b.constructor) return undefined;
  const x = a as unknown as ArrayLike<number | bigint>;
  const y = b as unknown as ArrayLike<number | bigint>;
  if (x.length !== y.length) return false;
  for (let i = 0; i < x.length; i++) if (!Object.is(x[i], y[i])) return false;
  return true;
}
