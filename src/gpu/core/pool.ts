/**
 * A free list of GPU buffers keyed by (usage, size class). Per-op parameter blocks, staging
 * rings and scratch activations come from here, so rebuilding ops (a new plan, a new maxM) does
 * not churn device allocations.
 */
export interface BufferPool {
  device: GPUDevice;
  free: Map<string, GPUBuffer[]>;
  live: Set<GPUBuffer>;
}

export function createBufferPool(device: GPUDevice): BufferPool {
  return { device, free: new Map(), live: new Set() };
}

/** Sizes round up to 256 bytes below 64 KiB and to a power of two above, to keep reuse likely. */
export function sizeClass(bytes: number): number {
  const b = Math.max(256, Math.ceil(bytes / 256) * 256);
  return b <= 65536 ? b : 2 ** Math.ceil(Math.log2(b));
}

function key(usage: number, size: number): string {
  return `${usage}:${size}`;
}

/** A buffer of at least `bytes` with exactly `usage`; give it back with `releaseBuffer`. */
export function acquireBuffer(pool: BufferPool, bytes: number, usage: GPUBufferUsageFlags, label?: string): GPUBuffer {
  const size = sizeClass(bytes);
  const list = pool.free.get(key(usage, size));
  const buf = list?.pop() ?? pool.device.createBuffer({ size, usage, label });
  pool.live.add(buf);
  return buf;
}

export function releaseBuffer(pool: BufferPool, buf: GPUBuffer): void {
  if (!pool.live.delete(buf)) return;
  const k = key(buf.usage, buf.size);
  const list = pool.free.get(k);
  if (list) list.push(buf);
  else pool.free.set(k, [buf]);
}

/** Destroys every buffer the pool made, free or still acquired. */
export function destroyBufferPool(pool: BufferPool): void {
  for (const list of pool.free.values()) for (const b of list) b.destroy();
  for (const b of pool.live) b.destroy();
  pool.free.clear();
  pool.live.clear();
}
