/**
 * `webgpu-tp bench allreduce`, the Node side: opens the harness in headless Chromium and runs
 * the page's `tp.collective.benchAllReduce` (src/harness/collective.ts) in real Web Workers.
 */
import { openHarness } from './browser.js';
import type { AllReduceBenchOptions, AllReduceBenchReport } from '../collective/bench-types.js';

export type { AllReduceBenchOptions, AllReduceBenchReport };

interface CollectivePage {
  tp: { collective: { benchAllReduce(o: AllReduceBenchOptions): Promise<AllReduceBenchReport> } };
}

/** Measures SharedArrayBuffer all-reduce against memcpy and postMessage baselines (JSON-ready). */
export async function benchAllReduce(opts: AllReduceBenchOptions): Promise<AllReduceBenchReport> {
  const harness = await openHarness({ bench: true });
  try {
    return await harness.page.evaluate((o) => (window as unknown as CollectivePage).tp.collective.benchAllReduce(o), opts);
  } catch (e) {
    if (harness.console.length) process.stderr.write(`${harness.console.join('\n')}\n`);
    throw e;
  } finally {
    await harness.close();
  }
}

/** A plain-text table of a report, for the CLI without --json. */
export function formatAllReduceReport(r: AllReduceBenchReport): string {
  const pm = new Map(r.baselines.postmessage.map((p) => [`${p.workers}/${p.floats}`, p.median_us]));
  const lines = [
    `memcpy (1 thread, SAB→SAB): ${r.baselines.memcpy_gbs.toFixed(2)} GB/s`,
    'workers  floats     algorithm  picked     median_us   busbw_GB/s  vs_postMessage',
  ];
  for (const x of r.results) {
    const base = pm.get(`${x.workers}/${x.floats}`);
    lines.push(
      [
        String(x.workers).padEnd(8), String(x.floats).padEnd(10), x.algorithm.padEnd(10), x.picked.padEnd(10),
        x.median_us.toFixed(2).padStart(9), x.busbw_gbs.toFixed(3).padStart(12), (base ? `${(base / x.median_us).toFixed(1)}x` : '-').padStart(15),
      ].join(' '),
    );
  }
  for (const p of r.baselines.postmessage) lines.push(`postMessage all-reduce, ${p.workers} workers, ${p.floats} floats: ${p.median_us.toFixed(2)} µs`);
  return lines.join('\n');
}
