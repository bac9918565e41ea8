/**
 * The read roofline of `bench kernels`: how fast this adapter can merely load a d×d f32 matrix,
 * and how fast one JS thread can sum the same floats. A gemv loads every weight once, so on an
 * adapter bound by its loads (SwiftShader) the GPU read time is a floor under any gemv, and the
 * two reads bound the best gemv-vs-JS ratio a kernel could reach.
 */
import readSrc from '../../../shaders/roofline_read.wgsl?raw';
import { createStorageBuffer } from '../../gpu/core/buffers.js';
import type { GpuContext } from '../../gpu/core/device.js';
import type { RooflineFigures } from '../bench-kernels.js';
import { median } from './median.js';


const WG = 64;
const PER = 256;

type GpuTimes = (ctx: GpuContext, encode: (pass: GPUComputePassEncoder) => void, reps: number) => Promise<number[]>;

const gbs = (floats: number, ms: number) => +((floats * 4) / (ms * 1e6)).toFixed(3);

/**
 * The best of three read patterns over a d×d matrix, and JS's read of it. `d` must make d²/4 a
 * multiple of WG·PER and d a multiple of 16 (d = 2048 in the benchmark, 256 in its smoke run).
 */
export async function benchRoofline(ctx: GpuContext, gpuTimes: GpuTimes, d: number, reps: number): Promise<RooflineFigures> {
  const floats = d * d;
  const invocations = floats / 4 / PER;
  if (!Number.isInteger(invocations / WG)) throw new Error(`roofline: ${d}² floats is not a multiple of ${4 * WG * PER}`);
  const data = new Float32Array(floats);
  for (let i = 0; i < floats; i++) data[i] = ((i * 2654435761) >>> 0) / 2 ** 32 - 0.5;
  const w = createStorageBuffer(ctx, data, 'roofline w');
  const y = createStorageBuffer(ctx, Math.max(invocations, d) * 4, 'roofline y');
  let best = { kernel: '', median_ms: Infinity, gbs: 0 };
  try {
    for (const entry of ['read_chunked', 'read_strided', 'read_rows4']) {
      const rows4 = entry === 'read_rows4';
      const pipeline = ctx.pipelines.get(readSrc, entry, rows4 ? { K4: d / 4 } : { WG, PER }, entry);
      const bg = ctx.device.createBindGroup({
        layout: pipeline.getBindGroupLayout(0),
        entries: [{ binding: 0, resource: { buffer: w } }, { binding: 1, resource: { buffer: y } }],
      });
      const encode = (pass: GPUComputePassEncoder) => {
        pass.setPipeline(pipeline);
        pass.setBindGroup(0, bg);
        pass.dispatchWorkgroups(rows4 ? d / 4 : invocations / WG);
      };
      await gpuTimes(ctx, encode, 2);
      const ms = median(await gpuTimes(ctx, encode, reps));
      if (ms < best.median_ms) best = { kernel: entry, median_ms: +ms.toFixed(4), gbs: gbs(floats, ms) };
    }
  } finally {
    w.destroy();
    y.destroy();
  }
  const js = jsRead(data, reps);
  return { floats, gpu_read: best, js_read: { median_ms: +js.toFixed(4), gbs: gbs(floats, js) } };
}

/**
 * Median ms of one JS thread summing `a` (four accumulators, as a tuned loop would). Each sample
 * repeats the pass for at least 2 ms, since isolated pages clamp `performance.now()` to 5 µs.
 */
function jsRead(a: Float32Array, reps: number): number {
  const t: number[] = [];
  let sink = 0;
  for (let r = 0; r < reps + 1; r++) {
    const t0 = performance.now();
    let passes = 0;
    let now = t0;
    do {
      let s0 = 0, s1 = 0, s2 = 0, s3 = 0;
      for (let i = 0; i < a.length; i += 4) {
        s0 += a[i]!;
        s1 += a[i + 1]!;
        s2 += a[i + 2]!;
        s3 += a[i + 3]!;
      }
      sink += s0 + s1 + s2 + s3;
      passes++;
      now = performance.now();
    } while (now - t0 < 2);
    if (r > 0) t.push((now - t0) / passes);
  }
  // Keep the sums observable so the loop is not dropped.
  (globalThis as { __rooflineSink?: number }).__rooflineSink = sink;
  return median(t);
}
