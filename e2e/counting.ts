/**
 * Counting from outside the engine, for the fault, cancellation and soak specs: an init script
 * wraps `Worker` (and its `terminate`) in the page, and injects into every module worker a
 * prelude that wraps `GPUAdapter.requestDevice`, `GPUDevice.createBuffer` / `destroy`,
 * `GPUBuffer.destroy` and `GPUQueue.submit`, reporting each event over a BroadcastChannel.
 * Nothing here asks the engine: a leak in its own bookkeeping cannot hide a leak here.
 */
import type { Page } from '@playwright/test';

// In each worker: WID is replaced by the worker's id. Buffers are tracked per device, so a
// destroyed device frees the buffers it still held (as WebGPU does).
const PRELUDE = `
const ch = new BroadcastChannel('tp-gpu-count');
const post = (kind, n = 1) => ch.postMessage({ wid: WID, kind, n });
const owner = new WeakMap();
const held = new Map();
const requestDevice = GPUAdapter.prototype.requestDevice;
GPUAdapter.prototype.requestDevice = async function (...a) {
  const d = await requestDevice.apply(this, a);
  held.set(d, new Set());
  post('device');
  return d;
};
const createBuffer = GPUDevice.prototype.createBuffer;
GPUDevice.prototype.createBuffer = function (...a) {
  const b = createBuffer.apply(this, a);
  const set = held.get(this);
  if (set) {
    set.add(b);
    owner.set(b, set);
    post('buffer');
  }
  return b;
};
const destroyBuffer = GPUBuffer.prototype.destroy;
GPUBuffer.prototype.destroy = function () {
  if (owner.get(this)?.delete(this)) post('buffer-destroy');
  return destroyBuffer.call(this);
};
const destroyDevice = GPUDevice.prototype.destroy;
GPUDevice.prototype.destroy = function () {
  const set = held.get(this);
  if (set) {
    held.delete(this);
    post('device-destroy');
    if (set.size) post('buffer-destroy', set.size);
    set.clear();
  }
  return destroyDevice.call(this);
};
const submit = GPUQueue.prototype.submit;
GPUQueue.prototype.submit = function (...a) {
  post('submit');
  return submit.apply(this, a);
};
`;

/**
 * The init script: every module Worker first imports its own copy of the prelude, after
 * `extra` (code that sabotages the worker's environment, for tests of what then happens).
 */
export function countingInit(extra = ''): string {
  return `
(() => {
  const PRELUDE = ${JSON.stringify(extra + PRELUDE)};
  const Native = Worker;
  const workers = new Map();
  let next = 0;
  let submits = 0;
  window.__tpWorkers = workers;
  window.tpCounts = { submits: () => submits };
  new BroadcastChannel('tp-gpu-count').onmessage = (e) => {
    const w = workers.get(e.data.wid);
    if (!w) return;
    if (e.data.kind === 'submit') submits += e.data.n;
    else w[e.data.kind] = (w[e.data.kind] || 0) + e.data.n;
  };
  window.Worker = class extends Native {
    constructor(url, opts) {
      const wid = 'w' + next++;
      if (opts && opts.type === 'module') {
        const prelude = URL.createObjectURL(new Blob(['const WID = ' + JSON.stringify(wid) + ';' + PRELUDE], { type: 'text/javascript' }));
        const abs = new URL(url, location.href).href;
        const boot = 'import ' + JSON.stringify(prelude) + '; import ' + JSON.stringify(abs) + ';';
        url = URL.createObjectURL(new Blob([boot], { type: 'text/javascript' }));
      }
      super(url, opts);
      this.__wid = wid;
      workers.set(wid, { name: (opts && opts.name) || '', terminated: false });
    }
    terminate() {
      const w = workers.get(this.__wid);
      if (w) w.terminated = true;
      return super.terminate();
    }
  };
})();
`;
}

export const COUNTING_INIT = countingInit();

/** What the counters saw, over the engine's rank workers (`webgpu-tp rank N`). */
export interface Counts {
  /** Rank workers created, and those not terminated. */
  workersMade: number;
  workersAlive: number;
  /** Devices requested and not destroyed, in workers that are alive. */
  devicesAlive: number;
  /** Buffers created and not freed (destroyed, or on a destroyed device), in workers that are alive. */
  buffersAlive: number;
  /** The same over every rank worker ever made: what was never freed explicitly. */
  devicesNeverDestroyed: number;
  buffersNeverFreed: number;
}

interface WorkerCount {
  name: string;
  terminated: boolean;
  device?: number;
  'device-destroy'?: number;
  buffer?: number;
  'buffer-destroy'?: number;
}

/**
 * Reads the counters once the BroadcastChannel traffic has settled (two equal reads), over the
 * rank workers made from the `since`-th on (default all).
 */
export async function counts(page: Page, since = 0): Promise<Counts> {
  const read = () => page.evaluate(() => JSON.stringify([...(window as unknown as { __tpWorkers: Map<string, unknown> }).__tpWorkers.values()]));
  let last = await read();
  for (;;) {
    await page.waitForTimeout(250);
    const now = await read();
    if (now === last) break;
    last = now;
  }
  const ws = (JSON.parse(last) as WorkerCount[]).filter((w) => w.name.startsWith('webgpu-tp rank')).slice(since);
  const dev = (w: WorkerCount) => (w.device ?? 0) - (w['device-destroy'] ?? 0);
  const buf = (w: WorkerCount) => (w.buffer ?? 0) - (w['buffer-destroy'] ?? 0);
  const alive = ws.filter((w) => !w.terminated);
  const sum = (xs: WorkerCount[], f: (w: WorkerCount) => number) => xs.reduce((a, w) => a + f(w), 0);
  return {
    workersMade: ws.length,
    workersAlive: alive.length,
    devicesAlive: sum(alive, dev),
    buffersAlive: sum(alive, buf),
    devicesNeverDestroyed: sum(ws, dev),
    buffersNeverFreed: sum(ws, buf),
  };
}

/**
 * Entries in the engine's IndexedDB shard cache, counted with the raw IndexedDB API. Call it
 * only after an engine has loaded: opening a database that does not exist yet would create it
 * without the store.
 */
export function cacheEntries(page: Page): Promise<number> {
  return page.evaluate(
    () =>
      new Promise<number>((ok, fail) => {
        const req = indexedDB.open('webgpu-tp');
        req.onerror = () => fail(req.error);
        req.onsuccess = () => {
          const db = req.result;
          if (!db.objectStoreNames.contains('shards')) {
            db.close();
            return ok(0);
          }
          const c = db.transaction('shards').objectStore('shards').count();
          c.onsuccess = () => {
            db.close();
            ok(c.result);
          };
          c.onerror = () => fail(c.error);
        };
      }),
  );
}
