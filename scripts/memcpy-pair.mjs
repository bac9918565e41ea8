// Does one core's memcpy saturate this machine's memory bus? Times a 16 MB SharedArrayBuffer →
// SharedArrayBuffer `Float32Array.set` in one worker_thread, then in two at once (as the two
// ranks of a 2-worker all-reduce copy their inputs in and their sums out). Medians of 15 copies,
// 3 rounds. Usage: node scripts/memcpy-pair.mjs
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';
const N = 4 * 1024 * 1024;
if (isMainThread) {
  const run = (k) => new Promise((res) => {
    const sab = new SharedArrayBuffer(4 * 2 * k * N + 8);
    const ws = []; const out = [];
    for (let i = 0; i < k; i++) {
      const w = new Worker(new URL(import.meta.url), { workerData: { sab, i, k } });
      w.on('message', (m) => { out.push(m); if (out.length === k) { ws.forEach((x) => x.terminate()); res(out); } });
      ws.push(w);
    }
  });
  for (let rep = 0; rep < 3; rep++) {
    const one = await run(1);
    const two = await run(2);
    console.log(`1 worker: ${one[0].toFixed(2)} ms per 16 MB memcpy; 2 workers at once: ${two.map((x) => x.toFixed(2)).join(', ')} ms`);
  }
} else {
  const { sab, i, k } = workerData;
  const ctl = new Int32Array(sab, 4 * 2 * k * N, 2);
  const src = new Float32Array(sab, 4 * 2 * i * N, N);
  const dst = new Float32Array(sab, 4 * (2 * i + 1) * N, N);
  src.fill(1); dst.fill(2);
  // Start together.
  Atomics.add(ctl, 0, 1); while (Atomics.load(ctl, 0) < k) {}
  const ts = [];
  for (let r = 0; r < 15; r++) { const t0 = performance.now(); dst.set(src); ts.push(performance.now() - t0); }
  ts.sort((a, b) => a - b);
  parentPort.postMessage(ts[7]);
}
