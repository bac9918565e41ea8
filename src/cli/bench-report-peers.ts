/**
 * The peers' part of the benchmark report (`bench peers` inside `bench all`): decode tokens/s by
 * engine and configuration per model, and our ratio to the best peer per model. Computed here in
 * Node so the page only draws it.
 */
import type { PeersReport } from './bench-peers-summary.js';

export interface PeersChart {
  /** One group per model and quantisation, e.g. `stories110M-synth/f32`. */
  labels: string[];
  /** One series per engine and configuration; null where it did not run (or failed) for that group. */
  datasets: { label: string; data: (number | null)[] }[];
}

const group = (x: { model: string; quant: string }) => `${x.model}/${x.quant}`;

export function peersChart(p: PeersReport): PeersChart {
  const labels = [...new Set(p.results.map(group))];
  const series = [...new Set(p.results.map((x) => `${x.engine} ${x.config}`))];
  return {
    labels,
    datasets: series.map((s) => ({
      label: s,
      data: labels.map((l) => p.results.find((x) => group(x) === l && `${x.engine} ${x.config}` === s)?.decode_tokens_per_s ?? null),
    })),
  };
}

export const PEERS_RATIO_HEADERS = ['model', 'ours tok/s', 'our config', 'best peer tok/s', 'best peer', 'ours / best peer (median of rounds)', 'rounds'];

/** The ratio table's rows, one per model and quantisation, in the report's order. */
export function peersRatioRows(p: PeersReport): (string | number)[][] {
  return Object.entries(p.ratios).map(([k, v]) => [k, v.ours, v.ours_config, v.best_peer, v.best_peer_config, v.ratio, v.rounds.map((x) => x.toFixed(2)).join(', ')]);
}

/** Merges several `bench peers` runs (one per shape) into one report. */
export function mergePeers(reports: PeersReport[]): PeersReport {
  return { results: reports.flatMap((r) => r.results), ratios: Object.assign({}, ...reports.map((r) => r.ratios)) as PeersReport['ratios'] };
}

/** The page's script for the chart, given `d.peers` as a PeersChart and a `palette`; log scale, since the rates span 1000×. */
export const PEERS_CHART_SCRIPT = `if (d.peers) new Chart(document.getElementById('peers'), { type: 'bar', data: { labels: d.peers.labels, datasets: d.peers.datasets.map((s, i) => ({
  label: s.label, backgroundColor: palette[i % palette.length], data: s.data })) },
  options: { maintainAspectRatio: false, scales: { y: { type: 'logarithmic', title: { display: true, text: 'decode tokens/s (log)' } } },
    plugins: { title: { display: true, text: 'Against the peers: decode tokens/s by engine and config' } } } });`;
