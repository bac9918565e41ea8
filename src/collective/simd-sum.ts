/**
 * The all-reduce's float32 sums in WebAssembly SIMD. JavaScript cannot add four floats at once,
 * and its scalar loop (`Math.fround(x[i] + y[i])`) ran at about a sixth of memcpy bandwidth
 * here; f32x4.add runs near memcpy speed. WebAssembly can only address its own memory, so the
 * group's shared buffer is then a shared `WebAssembly.Memory` (see `createCollectiveMemory`),
 * and a sum whose arrays all live in it runs in WebAssembly. f32x4.add is IEEE float32 addition
 * per lane, so the result is bitwise the scalar loop's, and ranks with and without WebAssembly
 * still agree.
 */
import { SIMD_SUM_WASM_BASE64 } from './simd-sum-wasm.js';

interface SumExports {
  add2(d: number, x: number, y: number, n: number): void;
  add3(d: number, x: number, y: number, z: number, n: number): void;
  add4(d: number, x: number, y: number, z: number, w: number, n: number): void;
}

let compiled: WebAssembly.Module | null | undefined;

/** The compiled module, or null where WebAssembly, SIMD or shared memory is missing. */
function simdModule(): WebAssembly.Module | null {
  if (compiled !== undefined) return compiled;
  compiled = null;
  if (typeof WebAssembly === 'undefined' || typeof SharedArrayBuffer === 'undefined') return compiled;
  const bytes = Uint8Array.from(atob(SIMD_SUM_WASM_BASE64), (c) => c.charCodeAt(0));
  // Synchronous compilation is allowed for small modules even on the main thread (726 bytes).
  if (WebAssembly.validate(bytes)) compiled = new WebAssembly.Module(bytes);
  return compiled;
}

/** Whether this thread can run the SIMD sums (WebAssembly with SIMD and threads). */
export function simdSumAvailable(): boolean {
  return simdModule() !== null;
}

/** The SIMD sums bound to one shared memory; `sum` declines arrays that are not views of it. */
export class SimdSum {
  private constructor(
    private readonly fns: SumExports,
    /** The memory's buffer, read once: every view the caller makes must be of this object. */
    readonly buffer: SharedArrayBuffer,
  ) {}

  /** Binds the sums to `memory`, or returns undefined where WebAssembly SIMD is unavailable. */
  static attach(memory: WebAssembly.Memory, buffer: SharedArrayBuffer): SimdSum | undefined {
    const mod = simdModule();
    if (!mod) return undefined;
    const inst = new WebAssembly.Instance(mod, { env: { memory } });
    return new SimdSum(inst.exports as unknown as SumExports, buffer);
  }

  /**
   * dst[i] = ((src[0][i] + src[1][i]) + src[2][i]) + … for i in [a, b), each addition rounded
   * to float32; `dst` may be `src[0]`. Returns false, having done nothing, when an array is not
   * a view of this memory (the caller then runs the scalar loop).
   */
  sum(dst: Float32Array, src: readonly Float32Array[], a: number, b: number): boolean {
    const buf = this.buffer;
    if (dst.buffer !== buf) return false;
    for (const s of src) if (s.buffer !== buf) return false;
    const n = b - a;
    const at = (v: Float32Array) => v.byteOffset + a * 4;
    const k = src.length;
    if (k < 2) return false;
    const f = this.fns;
    if (k === 2) f.add2(at(dst), at(src[0]!), at(src[1]!), n);
    else if (k === 3) f.add3(at(dst), at(src[0]!), at(src[1]!), at(src[2]!), n);
    else {
      f.add4(at(dst), at(src[0]!), at(src[1]!), at(src[2]!), at(src[3]!), n);
      for (let j = 4; j < k; j++) f.add2(at(dst), at(dst), at(src[j]!), n);
    }
    return true;
  }
}
