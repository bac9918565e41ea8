/**
 * The demo's live charts (Chart.js, registered piecemeal so only bar and line charts ship):
 * a per-rank timeline of the mean decode step, throughput over time, shard memory per rank,
 * and load progress per rank split into downloaded and cache-hit bytes. Each rank's bars are
 * labelled with its backend, CPU or GPU.
 */
import {
  Chart, BarController, BarElement, LineController, LineElement, PointElement, CategoryScale, LinearScale,
  Legend, Tooltip, Filler, type ChartConfiguration,
} from 'chart.js';
import type { RankShard } from '../index.js';
import type { Backend } from './devices.js';
import { formatBytes, formatMsShort } from './format.js';

const pct = (v: number) => `${Math.round(v)}%`;

Chart.register(BarController, BarElement, LineController, LineElement, PointElement, CategoryScale, LinearScale, Legend, Tooltip, Filler);
Chart.defaults.font.family = getComputedStyle(document.documentElement).fontFamily;
Chart.defaults.font.size = 11;
Chart.defaults.color = '#6b7387';
Chart.defaults.borderColor = '#eceef4';
Chart.defaults.animation = false;
Chart.defaults.maintainAspectRatio = false;
Chart.defaults.plugins.legend.labels.boxWidth = 10;
Chart.defaults.plugins.legend.labels.boxHeight = 10;

/** One decode step of one rank, split by where the time went (ms). */
export interface StepSegments {
  compute: number;
  readback: number;
  allreduce: number;
  upload: number;
  scheduler: number;
  idle: number;
}

const SEGMENTS: { key: keyof StepSegments; label: string; color: string }[] = [
  { key: 'compute', label: 'compute', color: '#4f46e5' },
  { key: 'readback', label: 'readback', color: '#0ea5e9' },
  { key: 'allreduce', label: 'all-reduce', color: '#f59e0b' },
  { key: 'upload', label: 'upload', color: '#10b981' },
  { key: 'scheduler', label: 'scheduler', color: '#a855f7' },
  { key: 'idle', label: 'idle', color: '#cbd2e1' },
];

function show(emptyId: string, hasData: boolean): void {
  document.getElementById(emptyId)!.hidden = hasData;
}

/**
 * Redraws a per-rank bar chart and puts its figures into the canvas's label, so a screen reader
 * (and a test) reads what the bars show: "Title: rank 0 · CPU: weights 1.17 MB, …; rank 1 …".
 */
function updateBars(chart: Chart<'bar'>, unit: (v: number) => string): void {
  chart.update();
  const canvas = chart.canvas;
  const title = (canvas.dataset.title ??= canvas.getAttribute('aria-label') ?? '');
  const rows = (chart.data.labels ?? []).map((label, r) =>
    `${String(label)}: ${chart.data.datasets.map((d) => `${d.label ?? ''} ${unit(Number(d.data[r] ?? 0))}`).join(', ')}`);
  canvas.setAttribute('aria-label', rows.length ? `${title}: ${rows.join('; ')}` : title);
}

function horizontalStacked(unit: (v: number) => string, max?: number): ChartConfiguration<'bar'>['options'] {
  return {
    indexAxis: 'y',
    responsive: true,
    scales: {
      x: { stacked: true, beginAtZero: true, max, ticks: { callback: (v) => unit(Number(v)), maxTicksLimit: 6 } },
      y: { stacked: true, grid: { display: false } },
    },
    plugins: {
      legend: { position: 'bottom' },
      tooltip: { callbacks: { label: (c) => `${c.dataset.label}: ${unit(Number(c.raw))}` } },
    },
  };
}

export class DemoCharts {
  private readonly steps: Chart<'bar'>;
  private readonly tps: Chart<'line'>;
  private readonly memory: Chart<'bar'>;
  private readonly load: Chart<'bar'>;
  /** Bytes of each rank's shard, for the load chart's tooltips. */
  private loadTotals: number[] = [];
  /** Each rank's kind (`CPU`, `GPU`) once the engine says, so CPU and GPU ranks read apart on every chart. */
  private kinds: string[] = [];

  private rankLabels(n: number): string[] {
    return Array.from({ length: n }, (_, r) => (this.kinds[r] ? `rank ${r} · ${this.kinds[r]}` : `rank ${r}`));
  }

  constructor() {
    const ms = formatMsShort;
    this.steps = new Chart(document.getElementById('chart-steps') as HTMLCanvasElement, {
      type: 'bar',
      data: { labels: [], datasets: SEGMENTS.map((s) => ({ label: s.label, data: [], backgroundColor: s.color, barPercentage: 0.75, categoryPercentage: 0.9 })) },
      options: horizontalStacked(ms),
    });
    this.tps = new Chart(document.getElementById('chart-tps') as HTMLCanvasElement, {
      type: 'line',
      data: {
        labels: [],
        datasets: [{
          label: 'tokens/s', data: [], borderColor: '#4f46e5', backgroundColor: 'rgba(79, 70, 229, 0.12)',
          // A decode shorter than a few polls has too few points for a line: show them as dots.
          fill: true, tension: 0.3, pointRadius: (c) => (c.dataset.data.length < 3 ? 3 : 0), borderWidth: 2,
        }],
      },
      options: {
        responsive: true,
        scales: {
          x: { title: { display: true, text: 'seconds' }, ticks: { maxTicksLimit: 8 }, grid: { display: false } },
          y: { beginAtZero: true, ticks: { maxTicksLimit: 5 } },
        },
        plugins: { legend: { display: false } },
      },
    });
    this.memory = new Chart(document.getElementById('chart-memory') as HTMLCanvasElement, {
      type: 'bar',
      data: {
        labels: [],
        datasets: [
          { label: 'weights', data: [], backgroundColor: '#4f46e5', barPercentage: 0.75, categoryPercentage: 0.9 },
          { label: 'KV cache + activations', data: [], backgroundColor: '#94a3b8', barPercentage: 0.75, categoryPercentage: 0.9 },
        ],
      },
      options: horizontalStacked(formatBytes),
    });
    const loadOptions = horizontalStacked(pct, 100)!;
    loadOptions.plugins!.tooltip = {
      callbacks: { label: (c) => `${c.dataset.label}: ${pct(Number(c.raw))} of ${formatBytes(this.loadTotals[c.dataIndex] ?? 0)}` },
    };
    this.load = new Chart(document.getElementById('chart-load') as HTMLCanvasElement, {
      type: 'bar',
      data: {
        labels: [],
        datasets: [
          { label: 'downloaded', data: [], backgroundColor: '#4f46e5', barPercentage: 0.75, categoryPercentage: 0.9 },
          { label: 'from cache', data: [], backgroundColor: '#10b981', barPercentage: 0.75, categoryPercentage: 0.9 },
        ],
      },
      options: loadOptions,
    });
  }

  /** One stacked bar per rank: the mean decode step from compute to idle. */
  setSteps(perRank: StepSegments[]): void {
    this.steps.data.labels = this.rankLabels(perRank.length);
    SEGMENTS.forEach((s, i) => (this.steps.data.datasets[i]!.data = perRank.map((p) => p[s.key])));
    updateBars(this.steps, formatMsShort);
    show('chart-steps-empty', perRank.length > 0);
  }

  resetThroughput(): void {
    this.tps.data.labels = [];
    this.tps.data.datasets[0]!.data = [];
    this.tps.update();
    show('chart-tps-empty', false);
  }

  addThroughput(seconds: number, tokensPerS: number): void {
    (this.tps.data.labels as string[]).push(seconds.toFixed(1));
    (this.tps.data.datasets[0]!.data as number[]).push(tokensPerS);
    this.tps.update();
    show('chart-tps-empty', true);
  }

  setMemory(perRank: { weightBytes: number; workBytes: number }[]): void {
    this.memory.data.labels = this.rankLabels(perRank.length);
    this.memory.data.datasets[0]!.data = perRank.map((r) => r.weightBytes);
    this.memory.data.datasets[1]!.data = perRank.map((r) => r.workBytes);
    updateBars(this.memory, formatBytes);
    show('chart-memory-empty', perRank.length > 0);
  }

  /** Names each rank's bars by its backend, on every chart, once the engine is placed. */
  setBackends(backends: readonly Backend[]): void {
    this.kinds = backends.map((b) => b.toUpperCase());
    this.load.data.labels = this.rankLabels(backends.length);
    updateBars(this.load, pct);
  }

  /** Starts a load of `ranks` shards: empty bars, memory cleared, kinds unknown until placed. */
  resetLoad(ranks: number): void {
    this.kinds = [];
    this.resetBars(ranks);
    show('chart-load-empty', true);
    this.setMemory([]);
    this.setSteps([]);
  }

  private resetBars(ranks: number): void {
    this.loadTotals = Array(ranks).fill(0);
    this.load.data.labels = this.rankLabels(ranks);
    this.load.data.datasets[0]!.data = Array(ranks).fill(0);
    this.load.data.datasets[1]!.data = Array(ranks).fill(0);
    updateBars(this.load, pct);
  }

  /** A load event of rank `rank` of a `world`-rank placement; a new placement's first event redraws the bars for it. */
  setLoad(rank: number, world: number, loadedBytes: number, totalBytes: number, fromCache: boolean): void {
    if (world !== this.loadTotals.length) this.resetBars(world);
    this.loadTotals[rank] = totalBytes;
    const p = totalBytes > 0 ? (100 * loadedBytes) / totalBytes : 0;
    (this.load.data.datasets[0]!.data as number[])[rank] = fromCache ? 0 : p;
    (this.load.data.datasets[1]!.data as number[])[rank] = fromCache ? p : 0;
    updateBars(this.load, pct);
  }

  /** The engine's ranks once loaded, each whole, downloaded or from the cache. */
  setLoaded(shards: readonly RankShard[]): void {
    this.resetBars(shards.length);
    shards.forEach((s, r) => this.setLoad(r, shards.length, s.bytes, s.bytes, s.fromCache));
  }
}
