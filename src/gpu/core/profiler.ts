/**
 * Per-kernel GPU time from timestamp queries. Profiling gives every op its own compute pass
 * with `timestampWrites` (a pass is the finest unit WebGPU timestamps without the
 * `chromium-experimental-timestamp-query-inside-passes` feature), so a profiled step encodes
 * more passes than a normal one and runs a little slower: it is a measuring mode, off by default.
 *
 * Timestamps are quantised to 100 µs unless Chromium runs with
 * `--enable-webgpu-developer-features` (the benchmarks pass it); a kernel's mean over many
 * steps is still meaningful at the coarse setting only when it runs for much longer than that.
 */
import type { GpuContext } from './device.js';

export interface KernelTime {
  /** Dispatches timed. */
  calls: number;
  /** Total GPU ms over those dispatches. */
  ms: number;
}

export interface KernelProfiler {
  /** Starts a step: timestamps are numbered from zero again. */
  begin(): void;
  /** A fresh compute pass for one op, timestamped under `name`. */
  pass(encoder: GPUCommandEncoder, name: string): GPUComputePassEncoder;
  /** Records the resolve of this step's timestamps; call in the step's last command buffer. */
  resolve(encoder: GPUCommandEncoder): void;
  /** After that command buffer is submitted: reads the timestamps and adds them to `totals`. */
  collect(): Promise<void>;
  /** Per kernel kind (layer numbers stripped from the names), since the last `reset`. */
  readonly totals: Map<string, KernelTime>;
  reset(): void;
  destroy(): void;
}

/** Groups `matmul layers.7.wqkv` with every other layer's `wqkv`. */
export function kernelKind(name: string): string {
  return name.replace(/layers\.\d+\./g, '');
}

/** A profiler for steps of at most `maxPasses` passes; undefined without `timestamp-query`. */
export function createKernelProfiler(ctx: GpuContext, maxPasses: number): KernelProfiler | undefined {
  if (!ctx.features.timestampQuery) return undefined;
  const { device } = ctx;
  const count = 2 * maxPasses;
  const querySet = device.createQuerySet({ type: 'timestamp', count, label: 'profiler' });
  const resolveBuffer = device.createBuffer({ size: count * 8, usage: GPUBufferUsage.QUERY_RESOLVE | GPUBufferUsage.COPY_SRC, label: 'profiler resolve' });
  const readBuffer = device.createBuffer({ size: count * 8, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST, label: 'profiler read' });
  const names: string[] = [];
  let used = 0;
  let pending = 0;
  const totals = new Map<string, KernelTime>();
  return {
    totals,
    begin() {
      used = 0;
      pending = 0;
    },
    pass(encoder, name) {
      if (used >= maxPasses) return encoder.beginComputePass();
      names[used] = kernelKind(name);
      const i = used++;
      return encoder.beginComputePass({ timestampWrites: { querySet, beginningOfPassWriteIndex: 2 * i, endOfPassWriteIndex: 2 * i + 1 } });
    },
    resolve(encoder) {
      if (used === 0) return;
      encoder.resolveQuerySet(querySet, 0, 2 * used, resolveBuffer, 0);
      encoder.copyBufferToBuffer(resolveBuffer, 0, readBuffer, 0, 2 * used * 8);
      pending = used;
    },
    async collect() {
      if (pending === 0) return;
      const n = pending;
      pending = 0;
      await readBuffer.mapAsync(GPUMapMode.READ, 0, 2 * n * 8);
      const t = new BigInt64Array(readBuffer.getMappedRange(0, 2 * n * 8));
      for (let i = 0; i < n; i++) {
        // A pass whose end precedes its begin (a clock reset between them) is dropped, not negated.
        const ns = Number(t[2 * i + 1]! - t[2 * i]!);
        if (!(ns >= 0)) continue;
        const k = totals.get(names[i]!) ?? { calls: 0, ms: 0 };
        k.calls++;
        k.ms += ns / 1e6;
        totals.set(names[i]!, k);
      }
      readBuffer.unmap();
    },
    reset() {
      totals.clear();
    },
    destroy() {
      querySet.destroy();
      resolveBuffer.destroy();
      readBuffer.destroy();
    },
  };
}
