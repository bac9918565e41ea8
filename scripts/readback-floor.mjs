// The readback floor of this browser: submit (a tiny dispatch + copy of 8 KB) → mapAsync data,
// under every way of making Chromium notice the finished work that we know of: none (plain),
// awaiting onSubmittedWorkDone, pokes (`queue.submit([])` or `onSubmittedWorkDone()`) from a
// MessageChannel loop or after Atomics.waitAsync sleeps, and a spin until a fixed delay then
// pokes. `hop-*(p)`: a poke at most every p ms from MessageChannel hops; `sleep-*(p)`: sleep p ms,
// poke, repeat; `spin-*(p)`: spin to p ms after the submit, then poke every ~0.1 ms. Medians and
// p90 over 40 reads each, in one page. Needs `npm run build`. Usage:
//   node scripts/readback-floor.mjs
import { openHarness } from '../dist/cli/browser.js';

const STRATEGIES = [
  ['plain', 0], ['await-done', 0],
  ['hop-submit', 0.15], ['hop-submit', 0.3], ['hop-done', 0.15],
  ['sleep-submit', 0.05], ['sleep-submit', 0.1], ['sleep-done', 0.05], ['sleep-done', 0.1], ['sleep-done', 0.2],
  ['spin-done', 0.2], ['spin-done', 0.4], ['spin-submit', 0.3],
  ['plain', 0],
];

const h = await openHarness({ bench: true });
try {
  const rows = await h.page.evaluate(async (strategies) => {
    const adapter = await navigator.gpu.requestAdapter();
    const device = await adapter.requestDevice();
    const n = 2048;
    const src = device.createBuffer({ size: n * 4, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC });
    const module = device.createShaderModule({ code: `@group(0) @binding(0) var<storage, read_write> Y: array<f32>;
      @compute @workgroup_size(64) fn main(@builtin(global_invocation_id) g: vec3<u32>) { Y[g.x] = Y[g.x] + 1.0; }` });
    const pipeline = device.createComputePipeline({ layout: 'auto', compute: { module, entryPoint: 'main' } });
    const bg = device.createBindGroup({ layout: pipeline.getBindGroupLayout(0), entries: [{ binding: 0, resource: { buffer: src } }] });
    const staging = [0, 1].map(() => device.createBuffer({ size: n * 4, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST }));
    const ch = new MessageChannel();
    let waiter = null;
    ch.port1.onmessage = () => { const w = waiter; waiter = null; w?.(); };
    const hop = () => new Promise((r) => { waiter = r; ch.port2.postMessage(0); });
    const cell = new Int32Array(new SharedArrayBuffer(4));
    const sleep = async (ms) => { const w = Atomics.waitAsync(cell, 0, 0, ms); if (w.async) await w.value; };
    const poke = (kind) => (kind.endsWith('submit') ? device.queue.submit([]) : void device.queue.onSubmittedWorkDone());
    let k = 0;
    async function read(kind, param) {
      const rb = staging[k++ & 1];
      const enc = device.createCommandEncoder();
      const pass = enc.beginComputePass();
      pass.setPipeline(pipeline);
      pass.setBindGroup(0, bg);
      pass.dispatchWorkgroups(n / 64);
      pass.end();
      enc.copyBufferToBuffer(src, 0, rb, 0, n * 4);
      const t0 = performance.now();
      device.queue.submit([enc.finish()]);
      let done = false;
      const mapped = rb.mapAsync(GPUMapMode.READ).then(() => { done = true; });
      let pokes = 0;
      if (kind === 'await-done') await device.queue.onSubmittedWorkDone();
      else if (kind.startsWith('hop')) {
        let last = t0;
        while (!done) {
          await hop();
          const now = performance.now();
          if (now - last >= param) { last = now; pokes++; poke(kind); }
        }
      } else if (kind.startsWith('sleep')) {
        while (!done) { await sleep(param); if (!done) { pokes++; poke(kind); } }
      } else if (kind.startsWith('spin')) {
        while (performance.now() - t0 < param) { /* spin to a fixed delay */ }
        while (!done) { pokes++; poke(kind); await sleep(0.1); }
      }
      await mapped;
      const ms = performance.now() - t0;
      rb.getMappedRange();
      rb.unmap();
      return [ms, pokes];
    }
    const out = [];
    for (const [kind, param] of strategies) {
      const ts = [];
      let pokes = 0;
      for (let i = 0; i < 43; i++) {
        const [ms, p] = await read(kind, param);
        if (i >= 3) { ts.push(ms); pokes += p; }
        await new Promise((r) => setTimeout(r, 1));
      }
      ts.sort((a, b) => a - b);
      out.push({ strategy: param ? `${kind}(${param} ms)` : kind, median_ms: +ts[20].toFixed(3), p90_ms: +ts[36].toFixed(3), pokes_per_read: +(pokes / 40).toFixed(1) });
    }
    return out;
  }, STRATEGIES);
  console.log(JSON.stringify({ browser: h.browser.browser?.version(), rows }, null, 1));
} finally {
  await h.close();
}
