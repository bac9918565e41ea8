/**
 * `webgpu-tp bench allreduce`, the Node side: opens the harness in headless Chromium and runs
 * the page's `tp.collective.benchAllReduce` (src/cli/page/collective.ts) in real Web Workers.
 */
import { CLI_PAGE, openHarness } from './browser.js';
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
  const memcpy = r.baselines.memcpy_gbs;
  const ofMemcpy = (gbs: number) => `${((100 * gbs) / memcpy).toFixed(1)}%`;
  const lines = [
    `memcpy (1 thread, SAB→SAB): ${memcpy.toFixed(2)} GB/s`,
    'workers  floats     algorithm  in_place  picked     median_us   busbw_GB/s  of_memcpy  vs_postMessage',
  ];
  for (const x of r.results) {
    const base = pm.get(`${x.workers}/${x.floats}`);
    lines.push(
      [
        String(x.workers).padEnd(8), String(x.floats).padEnd(10), x.algorithm.padEnd(10), (x.in_place ? 'yes' : 'no').padEnd(9), x.picked.padEnd(10),
        x.median_us.toFixed(2).padStart(9), x.busbw_gbs.toFixed(3).padStart(12), ofMemcpy(x.busbw_gbs).padStart(10),
        (base ? `${(base / x.median_us).toFixed(1)}x` : '-').padStart(15),
      ].join(' '),
    );
  }
  for (const f of r.baselines.copy_floor ?? []) {
    lines.push(
      `copy floor (every rank's copies in and out alone, at once), ${f.workers} workers, ${f.floats} floats, ${f.in_place ? 'in place' : 'out of place'}: ` +
        `${f.median_us.toFixed(2)} µs, busbw ${f.busbw_gbs.toFixed(3)} GB/s (${ofMemcpy(f.busbw_gbs)} of memcpy)`,
    );
  }
  for (const p of r.baselines.postmessage) lines.push(`postMessage all-reduce, ${p.workers} workers, ${p.floats} floats: ${p.median_us.toFixed(2)} µs`);
  return lines.join('\n');
}

export interface TabAllReduceBenchOptions {
  /** World sizes: one page (tab) per rank. */
  workers: number[];
  sizes: number[];
  /** Timed all-reduces per size (median reported); default 20. */
  iters?: number;
}

export interface TabAllReduceBenchReport {
  transport: 'tab';
  results: {
    workers: number;
    floats: number;
    /** Cross-tab message all-reduce (BroadcastChannel links): what `auto` ran, median µs of the slowest rank. */
    tab_algorithm: string;
    tab_median_us: number;
    /** The SharedArrayBuffer all-reduce (`auto`) between workers of one page, same size. */
    sab_picked: string;
    sab_median_us: number;
  }[];
  meta: { iters: number; note: string };
}

interface TabsPage {
  tp: { tabs: {
    join(group: string, rank: number, world: number, opts?: { timeoutMs?: number }): void;
    leave(group: string): void;
    bench(group: string, sizes: number[], iters: number): Promise<{ floats: number; algorithm: string; median_us: number }[]>;
  } };
}

/**
 * `bench allreduce --transport tab`: the message all-reduce between pages of one browser (one
 * rank per tab), beside the SharedArrayBuffer one between workers of one page.
 */
export async function benchAllReduceTab(o: TabAllReduceBenchOptions): Promise<TabAllReduceBenchReport> {
  const iters = o.iters ?? 20;
  const harness = await openHarness({ bench: true });
  try {
    const report: TabAllReduceBenchReport = {
      transport: 'tab',
      results: [],
      meta: { iters, note: 'tab: median over iters of one all-reduce after a barrier, slowest rank; sab: `bench allreduce` auto, same sizes' },
    };
    const sab = await harness.page.evaluate((x) => (window as unknown as CollectivePage).tp.collective.benchAllReduce(x), {
      workers: o.workers, sizes: o.sizes, algorithms: ['auto'] as const, inPlace: false, copyFloor: false, samples: Math.max(3, Math.min(iters, 20)),
    } satisfies AllReduceBenchOptions);
    for (const world of o.workers) {
      const pages = [harness.page];
      for (let r = 1; r < world; r++) {
        const p = await harness.browser.context.newPage();
        await p.goto(`${harness.server.url}${CLI_PAGE}`);
        await p.waitForFunction(() => (window as unknown as { tpReady?: boolean }).tpReady === true);
        pages.push(p);
      }
      const group = `bench-${Date.now()}-${world}`;
      await Promise.all(pages.map((p, rank) => p.evaluate(([g, r, w]) => (window as unknown as TabsPage).tp.tabs.join(g, r, w), [group, rank, world] as const)));
      const perRank = await Promise.all(pages.map((p) => p.evaluate(([g, s, n]) => (window as unknown as TabsPage).tp.tabs.bench(g, s, n), [group, o.sizes, iters] as const)));
      await Promise.all(pages.map((p) => p.evaluate((g) => (window as unknown as TabsPage).tp.tabs.leave(g), group)));
      for (const p of pages.slice(1)) await p.close();
      for (const [i, floats] of o.sizes.entries()) {
        const s = sab.results.find((x) => x.workers === world && x.floats === floats && !x.in_place);
        report.results.push({
          workers: world,
          floats,
          tab_algorithm: perRank[0]![i]!.algorithm,
          tab_median_us: Math.max(...perRank.map((r) => r[i]!.median_us)),
          sab_picked: s?.picked ?? '',
          sab_median_us: s?.median_us ?? NaN,
        });
      }
    }
    return report;
  } finally {
    await harness.close();
  }
}
