/**
 * The benchmark report: one self-contained HTML page (Chart.js inlined, the data embedded) built
 * from `bench all`'s JSON, and a PNG of it rendered by the same headless Chromium the benchmarks
 * use. Self-contained so it can be attached to an issue or opened from disk with no server.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { launchChromium } from './browser.js';
import type { AllReduceBenchReport } from '../collective/bench-types.js';
import type { KernelBenchReport } from './bench-kernels.js';
import type { BenchGenerateReport, BenchGenerateResult } from './bench-generate.js';
import type { PeersReport } from './bench-peers-summary.js';
import { PEERS_CHART_SCRIPT, PEERS_RATIO_HEADERS, peersChart, peersRatioRows } from './bench-report-peers.js';

export interface BenchAllReport {
  date: string;
  allreduce: AllReduceBenchReport;
  kernels: KernelBenchReport;
  generate: Record<string, BenchGenerateReport>;
  /** `bench peers` on each model (absent in reports from before it). */
  peers?: PeersReport;
}

/** llama2.c `run.c` -O3 on one thread, synth stories110M, measured on this machine (issue #4). */
export const RUN_C_STORIES110M_TOKENS_PER_S = 19.8;

export interface TargetCheck {
  target: string;
  goal: string;
  measured: string;
  met: boolean | null;
}

/** A case's backend; reports written before CPU ranks had GPU ranks only. */
const backendOf = (x: BenchGenerateResult) => x.backend ?? 'gpu';

function find(r: BenchAllReport, model: string, tp: number, batch: number, backend: BenchGenerateResult['backend'] = 'gpu'): BenchGenerateResult | undefined {
  return r.generate[model]?.results.find((x) => x.tp === tp && x.batch === batch && backendOf(x) === backend);
}

/** Issue #6's targets (GPU ranks) and issue #22's (CPU ranks), checked against one report (`met: null` where a case was not run). */
export function checkTargets(r: BenchAllReport): TargetCheck[] {
  const ratio = (a?: number, b?: number) => (a !== undefined && b ? a / b : undefined);
  const row = (target: string, goal: string, value: number | undefined, min: number | undefined, max: number | undefined, unit: string): TargetCheck => ({
    target,
    goal,
    measured: value === undefined ? 'not run' : `${value.toFixed(2)}${unit}`,
    met: value === undefined ? null : (min === undefined || value >= min) && (max === undefined || value <= max),
  });
  const s15 = (tp: number, b: number) => find(r, 'stories15M', tp, b)?.aggregate_tokens_per_s;
  const s110 = (tp: number, b: number) => find(r, 'stories110M', tp, b)?.aggregate_tokens_per_s;
  // TP cost: the median of round-by-round ratios where the run had rounds (noise of a shared
  // machine cancels within a round), else the ratio of the two rates.
  const tpCost = (b: number) => find(r, 'stories110M', 2, b)?.vs_tp1 ?? ratio(s110(2, b), s110(1, b));
  const roundtrips = Object.values(r.generate).flatMap((g) => g.results.filter((x) => x.tp > 1 && backendOf(x) === 'gpu').map((x) => x.allreduce_roundtrip_ms)).sort((a, b) => a - b);
  const cpu110 = (tp: number, b: number) => find(r, 'stories110M', tp, b, 'cpu');
  const cpuRatio = (x: BenchGenerateResult | undefined, y: BenchGenerateResult | undefined) => ratio(x?.aggregate_tokens_per_s, y?.aggregate_tokens_per_s);
  const rt = roundtrips.length ? roundtrips[Math.floor(roundtrips.length / 2)] : undefined;
  return [
    row('Batching: stories15M TP=2, batch 8 vs 1 (aggregate)', '≥ 4×', ratio(s15(2, 8), s15(2, 1)), 4, undefined, '×'),
    row('Round trip: allreduce_roundtrip_ms, median over TP>1 cases', '≤ 0.5 ms', rt, undefined, 0.5, ' ms'),
    row('TP cost, batch 1: stories110M TP=2 vs TP=1', '≥ 0.8×', tpCost(1), 0.8, undefined, '×'),
    row('TP cost, batch 8: stories110M TP=2 vs TP=1', '≥ 0.95×', tpCost(8), 0.95, undefined, '×'),
    row(`Single stream: stories110M TP=1 vs run.c (${RUN_C_STORIES110M_TOKENS_PER_S} tok/s)`, '≥ 1.0×', ratio(s110(1, 1), RUN_C_STORIES110M_TOKENS_PER_S), 1, undefined, '×'),
    row('CPU ranks: stories110M batch 1, CPU TP=2 vs CPU TP=1', '≥ 1.5×', cpu110(2, 1)?.vs_tp1 ?? cpuRatio(cpu110(2, 1), cpu110(1, 1)), 1.5, undefined, '×'),
    row('CPU ranks: stories110M decode at CPU TP=2 vs the memory roofline', '≥ 0.9×', cpu110(2, 1)?.vs_roofline, 0.9, undefined, '×'),
    row('CPU ranks: stories110M CPU TP=2, batch 8 vs 1 (aggregate)', '≥ 4×', cpu110(2, 8)?.vs_batch1 ?? cpuRatio(cpu110(2, 8), cpu110(2, 1)), 4, undefined, '×'),
  ];
}

const escape = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

function table(headers: string[], rows: (string | number)[][]): string {
  const cell = (v: string | number) => `<td>${escape(typeof v === 'number' ? (Number.isInteger(v) ? String(v) : v.toPrecision(4)) : v)}</td>`;
  return `<table><thead><tr>${headers.map((h) => `<th>${escape(h)}</th>`).join('')}</tr></thead><tbody>${rows.map((r) => `<tr>${r.map(cell).join('')}</tr>`).join('')}</tbody></table>`;
}

function chartJsSource(): string {
  const require = createRequire(import.meta.url);
  return readFileSync(join(dirname(require.resolve('chart.js')), 'chart.umd.min.js'), 'utf8');
}

/** The report page. Data goes in as JSON inside a script tag (`<` escaped so no text can end it). */
export function reportHtml(r: BenchAllReport): string {
  const cases = Object.entries(r.generate).flatMap(([model, g]) => g.results.map((x) => ({ model, ...x })));
  const targets = checkTargets(r);
  const data = JSON.stringify({ cases, date: r.date, ...(r.peers && { peers: peersChart(r.peers) }) }).replace(/</g, '\\u003c');
  const generateRows = cases.map((c) => [
    c.model, backendOf(c), c.devices ?? 'default', c.tp, c.batch, c.decode_tokens_per_s, c.aggregate_tokens_per_s, c.vs_tp1 ?? '—', c.vs_batch1 ?? '—', c.vs_roofline ?? '—',
    c.rounds_tokens_per_s?.length ?? 1, c.prefill_tokens_per_s ?? '—', c.allreduce_roundtrip_ms,
    c.profile ? c.profile.gpu_ms_per_step : '—', c.profile ? c.profile.matmul_gflops : '—',
  ]);
  const rooflines = Object.entries(r.generate).flatMap(([model, g]) => (g.roofline ? [{ model, ...g.roofline }] : []));
  const rooflineRows = rooflines.map((x) => [
    x.model, x.weight_bytes, x.read.one_thread.gbs, x.read.one_thread.streams, x.read.two_threads.gbs, x.read.two_threads.streams,
    x.read.two_threads.gbs / x.read.one_thread.gbs, x.roofline_tokens_per_s,
  ]);
  const cpuKernelRows = (r.kernels.cpu ?? []).map((x) => [x.matrix, x.split, x.m, x.k, x.n, x.tp, x.median_ms, x.gbs, x.read_gbs, x.read_streams, x.vs_read]);
  const ar = r.allreduce.results.filter((x) => x.algorithm === 'auto');
  const pm = new Map(r.allreduce.baselines.postmessage.map((b) => [`${b.workers}/${b.floats}`, b.median_us]));
  const floors = new Map((r.allreduce.baselines.copy_floor ?? []).map((f) => [`${f.workers}/${f.floats}/${f.in_place}`, f.busbw_gbs]));
  const arRows = ar.map((x) => [
    x.workers, x.floats, x.in_place ? 'yes' : 'no', x.picked, x.median_us, x.busbw_gbs, floors.get(`${x.workers}/${x.floats}/${!!x.in_place}`) ?? '—',
    pm.get(`${x.workers}/${x.floats}`) ?? '—',
  ]);
  const kRows = r.kernels.results.map((x) => [x.kernel, x.m, x.k, x.n, x.median_ms, x.gflops]);
  const bRows = [...r.kernels.baselines.js, ...r.kernels.baselines.tfjs].map((x) => [x.kernel, x.m, x.k, x.n, x.median_ms, x.gflops]);
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>webgpu-tp benchmark ${escape(r.date)}</title>
<style>
body{font:14px system-ui,sans-serif;margin:24px;max-width:1100px;color:#222}
h1{font-size:22px}h2{font-size:17px;margin-top:28px}
table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}th{background:#f3f3f3}
td:first-child,th:first-child{text-align:left}.met{color:#0a7d20}.missed{color:#b00020}
.charts{display:grid;grid-template-columns:1fr 1fr;gap:16px}.charts div{height:340px}
</style></head><body>
<h1>webgpu-tp benchmark</h1>
<p>${escape(r.date)} · adapter: ${escape(cases[0]?.adapter ?? r.kernels.adapter.architecture)} · ${r.allreduce.meta.hardwareConcurrency} hardware threads.
Synthetic checkpoints (seeded random weights, real shapes). Absolute figures on a CPU adapter are noisy: read ratios within one run.</p>
<h2>Targets (issue #6) of GPU ranks, and of CPU ranks (issue #22)</h2>
${table(['target', 'goal', 'measured', 'met'], targets.map((t) => [t.target, t.goal, t.measured, t.met === null ? '—' : t.met ? 'yes' : 'no']))}
<div class="charts">
<div><canvas id="tps"></canvas></div>
<div><canvas id="breakdown"></canvas></div>
<div><canvas id="kernels"></canvas></div>
<div><canvas id="gflops"></canvas></div>
<div><canvas id="roofline"></canvas></div>
${r.peers ? '<div><canvas id="peers"></canvas></div>' : ''}
</div>
${r.peers ? `<h2>Against the peers (wllama, onnxruntime-web)</h2>
<p>Our best configuration against the best peer, per model, as the median of their ratios round by round. WebLLM cannot run here (prebuilt model libraries fetched at run time).</p>
${table(PEERS_RATIO_HEADERS, peersRatioRows(r.peers))}` : ''}
<h2>Generation</h2>
${table(['model', 'ranks', 'devices', 'TP', 'batch', 'decode tok/s per stream', 'aggregate tok/s', 'vs TP=1 (median of rounds)', 'vs batch 1', 'vs roofline', 'rounds', 'prefill tok/s', 'round trip ms', 'GPU ms/step (profiled)', 'matmul GFLOP/s'], generateRows)}
${rooflineRows.length ? `<h3>Memory roofline of CPU ranks</h3>
<p>One thread's WebAssembly SIMD read of the bytes of weights a decode step reads, and two threads' read of a half each at once (medians of the same run's interleaved samples), each the faster of reading a thread's bytes as one stream or as two. No decode on two CPU ranks passes the weight bytes over the two-thread rate.</p>
${table(['model', 'weight bytes', 'one thread GB/s', 'streams', 'two threads GB/s', 'streams', 'two / one', 'roofline tok/s'], rooflineRows)}` : ''}
<h2>All-reduce (auto), SharedArrayBuffer vs postMessage</h2>
${table(['workers', 'floats', 'in place', 'algorithm', 'median µs', 'bus GB/s', 'copy floor bus GB/s', 'postMessage µs'], arRows)}
<p>memcpy baseline: ${r.allreduce.baselines.memcpy_gbs.toFixed(2)} GB/s. Copy floor: every rank's copies into and out of the slots alone, all ranks at once, no sums or waits, which bounds an all-reduce of a caller's arrays.</p>
<h2>Kernels</h2>
${table(['kernel', 'm', 'k', 'n', 'median ms', 'GFLOP/s'], kRows)}
${cpuKernelRows.length ? `<h3>CPU ranks' matmuls (f32) beside the read of the same bytes</h3>
${table(['matrix', 'split', 'm', 'k', 'n', 'TP (threads)', 'median ms', 'weights GB/s', 'read GB/s (as many threads)', 'read streams a thread', 'vs read'], cpuKernelRows)}` : ''}
<h3>Baselines</h3>
${table(['kernel', 'm', 'k', 'n', 'median ms', 'GFLOP/s'], bRows)}
${r.kernels.roofline ? `<p>Read roofline, ${r.kernels.roofline.floats} f32: GPU ${r.kernels.roofline.gpu_read.median_ms.toFixed(2)} ms (${r.kernels.roofline.gpu_read.gbs.toFixed(2)} GB/s, ${r.kernels.roofline.gpu_read.kernel}), one JS thread ${r.kernels.roofline.js_read.median_ms.toFixed(2)} ms (${r.kernels.roofline.js_read.gbs.toFixed(2)} GB/s).</p>` : ''}
<p>Readback, submit → data of 8 KB after a tiny dispatch: ${r.kernels.readback_ms.toFixed(2)} ms.</p>
${r.kernels.shards ? `<h3>TP shards on one adapter</h3>
<p>Each rank's shard dispatched at once on its own device against the whole matrix on one device (batch 8): on a CPU adapter both take the same cores, so a ratio above 1 is what sharding itself costs.</p>
${table(['matrix', 'split', 'm', 'k', 'n', 'TP', 'whole ms', 'shards ms', 'ratio'], r.kernels.shards.map((x) => [x.matrix, x.split, x.m, x.k, x.n, x.tp, x.full_ms, x.shards_ms, x.ratio]))}` : ''}
<script>${chartJsSource()}</script>
<script id="data" type="application/json">${data}</script>
<script>
const d = JSON.parse(document.getElementById('data').textContent);
Chart.defaults.animation = false;
const label = (c) => c.model + ' ' + (c.backend || 'gpu') + ' TP' + c.tp;
const groups = [...new Set(d.cases.map(label))];
const batches = [...new Set(d.cases.map((c) => c.batch))].sort((a, b) => a - b);
const palette = ['#4e79a7', '#f28e2b', '#e15759', '#76b7b2', '#59a14f', '#edc948', '#b07aa1', '#ff9da7', '#9c755f', '#bab0ac'];
new Chart(document.getElementById('tps'), { type: 'bar', data: { labels: groups, datasets: batches.map((b, i) => ({
  label: 'batch ' + b, backgroundColor: palette[i],
  data: groups.map((g) => d.cases.find((c) => label(c) === g && c.batch === b)?.aggregate_tokens_per_s ?? null) })) },
  options: { maintainAspectRatio: false, plugins: { title: { display: true, text: 'Aggregate decode tokens/s by model, ranks (CPU / GPU) and TP, per batch' } } } });
const caseLabel = (c) => label(c) + ' b' + c.batch;
const parts = ['compute_ms', 'readback_ms', 'allreduce_ms', 'upload_ms', 'scheduler_ms'];
new Chart(document.getElementById('breakdown'), { type: 'bar', data: { labels: d.cases.map(caseLabel), datasets: parts.map((p, i) => ({
  label: p.replace('_ms', ''), backgroundColor: palette[i], data: d.cases.map((c) => c.breakdown_ms[p]) })) },
  options: { maintainAspectRatio: false, scales: { x: { stacked: true }, y: { stacked: true, title: { display: true, text: 'ms per decode step (rank 0)' } } },
    plugins: { title: { display: true, text: 'Where a decode step goes' } } } });
const prof = d.cases.filter((c) => c.profile);
const kinds = [...new Set(prof.flatMap((c) => Object.keys(c.profile.kernels_ms_per_step)))];
new Chart(document.getElementById('kernels'), { type: 'bar', data: { labels: prof.map(caseLabel), datasets: kinds.map((k, i) => ({
  label: k, backgroundColor: palette[i % palette.length], data: prof.map((c) => c.profile.kernels_ms_per_step[k] ?? 0) })) },
  options: { maintainAspectRatio: false, scales: { x: { stacked: true }, y: { stacked: true, title: { display: true, text: 'GPU ms per decode step (rank 0)' } } },
    plugins: { title: { display: true, text: 'GPU time by kernel (timestamp queries)' } } } });
new Chart(document.getElementById('gflops'), { type: 'bar', data: { labels: prof.map(caseLabel), datasets: [{
  label: 'matmul GFLOP/s', backgroundColor: palette[0], data: prof.map((c) => c.profile.matmul_gflops) }] },
  options: { maintainAspectRatio: false, plugins: { title: { display: true, text: 'Arithmetic rate the matmuls reached (one device)' } } } });
// A share, so that models of any size share one axis (a model whose weights fit in cache has a roofline far above its speed).
const cpu = d.cases.filter((c) => c.vs_roofline !== undefined);
new Chart(document.getElementById('roofline'), { type: 'bar', data: { labels: cpu.map(caseLabel), datasets: [
  { label: 'decode steps/s over the memory roofline (two threads)', backgroundColor: palette[0], data: cpu.map((c) => c.vs_roofline) }] },
  options: { maintainAspectRatio: false, scales: { y: { min: 0, suggestedMax: 1 } },
    plugins: { title: { display: true, text: 'CPU ranks against the memory roofline (1 = the two-thread read of the weights)' } } } });
${PEERS_CHART_SCRIPT}
document.body.dataset.ready = '1';
</script>
</body></html>
`;
}

/** Writes `html` and a full-page PNG of it. */
export async function writeReport(r: BenchAllReport, htmlPath: string, pngPath: string): Promise<void> {
  writeFileSync(htmlPath, reportHtml(r));
  const browser = await launchChromium({});
  try {
    const page = await browser.context.newPage();
    await page.setViewportSize({ width: 1200, height: 900 });
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(pathToFileURL(htmlPath).href);
    await page.waitForSelector('body[data-ready="1"]', { timeout: 30_000 }).catch(() => {
      throw new Error(`the report page did not render: ${errors.join('; ') || 'no error reported'}`);
    });
    await page.screenshot({ path: pngPath, fullPage: true });
  } finally {
    await browser.close();
  }
}
