import { describe, expect, it } from 'vitest';
import { fileURLToPath } from 'node:url';
// @ts-expect-error: a plain .mjs build script, without types
import { compileWat } from '../../../scripts/build-wasm.mjs';
import { WASM_READ_BASE64 } from './wasm-read-wasm.js';

const f = Math.fround;

/** The read's sum in its own order: 16 lanes (four f32x4 accumulators) over `order`, then pairs of pairs. */
function laneSum(x: Float32Array, from: number, order: Iterable<number>): number {
  const acc = new Array<number>(16).fill(0);
  for (const i of order) acc[(i - from) % 16] = f(acc[(i - from) % 16]! + x[i]!);
  const v = [0, 1, 2, 3].map((l) => f(f(acc[l]! + acc[4 + l]!) + f(acc[8 + l]! + acc[12 + l]!)));
  return f(f(v[0]! + v[1]!) + f(v[2]! + v[3]!));
}

function* range(from: number, n: number): Generator<number> {
  for (let i = from; i < from + n; i++) yield i;
}

/** read2's order: `chunk` floats of the first half, the same of the second half, and so on. */
function* twoStreams(from: number, n: number, chunk: number): Generator<number> {
  const half = n / 2;
  for (let c = 0; c < half; c += chunk) {
    const len = Math.min(chunk, half - c);
    yield* range(from + c, len);
    yield* range(from + half + c, len);
  }
}

describe('the roofline read (wasm-read.wat)', () => {
  it('the committed bytes are the compiled wasm-read.wat (npm run build:wasm after editing it)', async () => {
    const bytes: Buffer = await compileWat(fileURLToPath(new URL('./wasm-read.wat', import.meta.url)));
    expect(bytes.toString('base64')).toBe(WASM_READ_BASE64);
  });

  it('reads every float of the range, and only those, from a shared memory', () => {
    const memory = new WebAssembly.Memory({ initial: 1, maximum: 1, shared: true });
    const inst = new WebAssembly.Instance(new WebAssembly.Module(Buffer.from(WASM_READ_BASE64, 'base64')), { env: { memory } });
    const read = inst.exports.read as (at: number, bytes: number) => number;
    const x = new Float32Array(memory.buffer, 0, 4096);
    for (let i = 0; i < x.length; i++) x[i] = ((i * 2654435761) >>> 0) / 2 ** 32 - 0.5;
    for (const [from, n] of [[0, 16], [16, 64], [48, 1024], [2048, 2048]] as const) {
      expect(read(from * 4, n * 4), `${from}+${n}`).toBe(laneSum(x, from, range(from, n)));
    }
    expect(read(64, 0)).toBe(0);
  });

  it('read2 reads the same floats, and only those, as two streams of the halves in chunks', () => {
    const memory = new WebAssembly.Memory({ initial: 1, maximum: 1, shared: true });
    const inst = new WebAssembly.Instance(new WebAssembly.Module(Buffer.from(WASM_READ_BASE64, 'base64')), { env: { memory } });
    const read2 = inst.exports.read2 as (at: number, bytes: number, chunk: number) => number;
    const x = new Float32Array(memory.buffer, 0, 8192);
    for (let i = 0; i < x.length; i++) x[i] = ((i * 2654435761) >>> 0) / 2 ** 32 - 0.5;
    // Chunks that divide the half, that do not (a short last chunk), and one longer than the half.
    for (const [from, n, chunk] of [[0, 32, 16], [16, 1024, 64], [48, 2080, 256], [4096, 4096, 1024], [64, 96, 1024]] as const) {
      expect(read2(from * 4, n * 4, chunk * 4), `${from}+${n}/${chunk}`).toBe(laneSum(x, from, twoStreams(from, n, chunk)));
    }
    expect(read2(64, 0, 1024)).toBe(0);
  });
});
