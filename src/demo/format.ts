/** Number formatting for the demo page. */

/** SI units (1 kB = 1000 B), so chart ticks on round byte counts read as round numbers. */
export function formatBytes(n: number): string {
  if (!Number.isFinite(n) || n <= 0) return '0 B';
  const units = ['B', 'kB', 'MB', 'GB', 'TB'];
  // Below 1 B (a chart's ticks before it has data) the unit stays bytes.
  const i = Math.max(0, Math.min(units.length - 1, Math.floor(Math.log10(n) / 3)));
  const v = n / 1000 ** i;
  return `${v >= 100 || i === 0 ? Math.round(v) : v.toFixed(v >= 10 ? 1 : 2)} ${units[i]}`;
}

export function formatRate(n: number): string {
  if (!Number.isFinite(n) || n <= 0) return '–';
  return n >= 100 ? String(Math.round(n)) : n.toFixed(1);
}

/** A tick or tooltip in ms, with about three significant digits. */
export function formatMsShort(ms: number): string {
  if (ms === 0) return '0 ms';
  return `${Number(ms.toPrecision(3))} ms`;
}

export function formatMs(ms: number): string {
  return ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : `${Math.round(ms)} ms`;
}

/** Parameters of a llama2.c-style model from its config (weights only). */
export function parameterCount(c: { dim: number; hiddenDim: number; nLayers: number; nHeads: number; nKvHeads: number; headSize: number; vocabSize: number; sharedClassifier: boolean }): number {
  const kv = c.nKvHeads * c.headSize;
  const q = c.nHeads * c.headSize;
  const perLayer = 2 * c.dim + c.dim * q + 2 * c.dim * kv + q * c.dim + 3 * c.dim * c.hiddenDim;
  return c.vocabSize * c.dim + c.nLayers * perLayer + c.dim + (c.sharedClassifier ? 0 : c.vocabSize * c.dim);
}

export function formatCount(n: number): string {
  if (n >= 1e9) return `${(n / 1e9).toFixed(1)}B`;
  if (n >= 1e6) return `${(n / 1e6).toFixed(1)}M`;
  if (n >= 1e3) return `${Math.round(n / 1e3)}K`;
  return String(n);
}
