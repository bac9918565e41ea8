/**
 * `bench peers`' arithmetic, apart from the browser: one configuration's rounds → its result
 * row, tokens compared with ours, and our ratio to the best peer round by round.
 */
import { median } from '../collective/bench.js';
import type { PeerRun } from './page/peers-types.js';

export type PeerEngine = 'webgpu-tp' | 'wllama' | 'onnxruntime-web';

/** A configuration of the run, as the result rows name it. */
export interface PeerConfig {
  engine: PeerEngine;
  /** e.g. `gpu tp2`, `cpu tp1`, `wasm 2t`, `webgpu`. */
  config: string;
  quant: string;
  threads: number | null;
  tp: number | null;
  devices: 'gpu' | 'cpu' | 'wasm' | 'webgpu';
}

export interface FirstMismatch {
  position: number;
  ours: number;
  peer: number;
  /** The peer's top-1 minus top-2 logit at that position, where it exposes them. */
  peer_top2_margin?: number;
}

export interface PeerResult extends PeerConfig {
  model: string;
  decode_tokens_per_s: number | null;
  prefill_tokens_per_s: number | null;
  load_ms: number | null;
  /** The first `compared` greedy tokens equal ours (null: nothing to compare with). */
  tokens_match: boolean | null;
  first_mismatch: FirstMismatch | null;
  /** Why the configuration produced no figures (load or run failure), with the error's text. */
  error?: string;
  /**
   * What the comparison could not use: a prompt taken as text, not ids (with both token counts),
   * or logits the peer failed to give.
   */
  note?: string;
}

export interface PeerRatio {
  /** Our best configuration's decode tokens/s (median round). */
  ours: number;
  ours_config: string;
  best_peer: number;
  best_peer_config: string;
  /** Median over rounds of (ours / best peer) in the same round. */
  ratio: number;
  /** That ratio in each round, in order. */
  rounds: number[];
}

/** A ratio an issue sets a target for, and what this run measured of it. */
export interface PeerTarget {
  /** e.g. `#25: Q4_K_M vs wllama wasm 2t`. */
  name: string;
  /** The ratio to reach (at least). */
  target: number;
  /** null: not measured (`detail` says why). */
  ratio: number | null;
  met: boolean | null;
  /** What was compared (configurations, tok/s, rounds), or why nothing was. */
  detail: string;
}

export interface PeersReport {
  results: PeerResult[];
  ratios: Record<string, PeerRatio>;
  /** The issues' targets among this run's ratios (#25's K-quant ones when q4_k_m ran). */
  targets?: PeerTarget[];
}

/** What one configuration gave: its load, its checked run, and its timed rounds. */
export interface ConfigRuns {
  config: PeerConfig;
  loadMs?: number;
  error?: string;
  check?: PeerRun;
  rounds: PeerRun[];
}

/** Decode tokens/s of one run: the median step after `warmup` tokens. */
export function decodeRate(run: PeerRun, warmup: number): number {
  const timed = run.stepMs.slice(warmup);
  const m = timed.length ? median(timed) : NaN;
  return m > 0 ? 1000 / m : 0;
}

/** `peer`'s first difference from `ours` over the first `n` tokens, with the peer's margin there. */
export function firstMismatch(ours: readonly number[], peer: PeerRun, n: number): FirstMismatch | null {
  const len = Math.min(n, ours.length, peer.tokens.length);
  for (let i = 0; i < len; i++) {
    if (ours[i] === peer.tokens[i]) continue;
    const top = peer.top2?.[i];
    return { position: i, ours: ours[i]!, peer: peer.tokens[i]!, ...(top?.length === 2 && { peer_top2_margin: top[0]![1] - top[1]![1] }) };
  }
  return null;
}

export interface SummaryOptions {
  warmup: number;
  /** Tokens compared with the reference's (32, or fewer on a short run). */
  compared: number;
  promptTokens: number;
  /** What a full configuration runs: its timed tokens per run and its rounds, within `budgetS` seconds a run. */
  full?: { tokens: number; rounds: number; budgetS: number };
}

/** What the time budget cut from a configuration, in a sentence (undefined: nothing). */
export function budgetNote(r: ConfigRuns, o: SummaryOptions): string | undefined {
  if (!o.full || !r.check) return undefined;
  const timed = r.rounds.map((x) => Math.max(0, x.stepMs.length - o.warmup));
  const checked = Math.min(o.compared, r.check.stepMs.length + 1);
  if (timed.every((t) => t >= o.full!.tokens) && r.rounds.length >= o.full.rounds && checked >= o.compared) return undefined;
  const rate = median(r.rounds.map((x) => decodeRate(x, o.warmup)));
  const span = timed.length ? `${Math.min(...timed)}${Math.max(...timed) > Math.min(...timed) ? `–${Math.max(...timed)}` : ''}` : '0';
  return `over the ${o.full.budgetS} s budget per run at ${rate.toFixed(2)} tok/s: ${span} of ${o.full.tokens} timed tokens per run, ${r.rounds.length} of ${o.full.rounds} rounds, the first ${checked} tokens compared`;
}

/**
 * The result rows and ratios of one model and quantisation. `reference` is the configuration
 * whose tokens everyone's are compared with (ours at TP 1; null if it failed).
 */
export function summarize(model: string, runs: ConfigRuns[], reference: ConfigRuns | undefined, o: SummaryOptions): PeerResult[] {
  const ref = reference?.check?.tokens;
  return runs.map((r) => {
    const base = { ...r.config, model };
    if (r.error || !r.check || !r.rounds.length) {
      return { ...base, decode_tokens_per_s: null, prefill_tokens_per_s: null, load_ms: r.loadMs ?? null, tokens_match: null, first_mismatch: null, error: r.error ?? 'no run' };
    }
    const notes = [
      ...(r.check.promptTokens !== undefined ? [`prompt passed as text (no ids): ${r.check.promptTokens} tokens by the peer's tokenizer, ${o.promptTokens} by ours${r.check.promptTokens === o.promptTokens ? '' : ' (differ)'}`] : []),
      ...(r.check.note ? [r.check.note] : []),
      ...(r.check.tokens.length ? [] : ['the peer gave no token ids']),
      ...[budgetNote(r, o)].filter((x) => x !== undefined),
    ];
    // a run the budget stopped early is compared over the tokens it gave
    const compared = Math.min(o.compared, r.check.stepMs.length + 1);
    const enough = r.check.tokens.length >= Math.min(compared, ref?.length ?? 0);
    const mismatch = ref && ref.length ? firstMismatch(ref, r.check, compared) : null;
    return {
      ...base,
      decode_tokens_per_s: median(r.rounds.map((x) => decodeRate(x, o.warmup))),
      prefill_tokens_per_s: o.promptTokens / (median(r.rounds.map((x) => x.prefillMs)) / 1000),
      load_ms: r.loadMs ?? null,
      tokens_match: ref?.length && r.check.tokens.length ? !mismatch && enough : null,
      first_mismatch: mismatch,
      ...(notes.length && { note: notes.join('; ') }),
    };
  });
}

/**
 * Our best configuration against the best peer (each by median round), as the median of their
 * ratios round by round: a slow spell of the machine hits both within a round.
 */
export function ratioToBestPeer(runs: ConfigRuns[], warmup: number, peers: (c: PeerConfig) => boolean = (c) => c.engine !== 'webgpu-tp'): PeerRatio | undefined {
  const rated = runs
    .filter((r) => !r.error && r.rounds.length)
    .map((r) => ({ r, rounds: r.rounds.map((x) => decodeRate(x, warmup)) }))
    .map((x) => ({ ...x, rate: median(x.rounds) }));
  const best = (pick: (c: PeerConfig) => boolean) => rated.filter((x) => pick(x.r.config)).sort((a, b) => b.rate - a.rate)[0];
  const ours = best((c) => c.engine === 'webgpu-tp');
  const peer = best((c) => c.engine !== 'webgpu-tp' && peers(c));
  if (!ours || !peer) return undefined;
  const n = Math.min(ours.rounds.length, peer.rounds.length);
  const rounds = Array.from({ length: n }, (_, i) => ours.rounds[i]! / peer.rounds[i]!);
  return {
    ours: ours.rate, ours_config: ours.r.config.config, best_peer: peer.rate, best_peer_config: `${peer.r.config.engine} ${peer.r.config.config}`,
    ratio: median(rounds), rounds,
  };
}

const target = (name: string, min: number, ratio: number | null, detail: string): PeerTarget => ({ name, target: min, ratio, met: ratio === null ? null : ratio >= min, detail });

/**
 * #25's targets for a Q4_K_M run (`runs`, its configurations): our best configuration against
 * wllama with 2 threads on the same file (≥ 3×, round by round), and, where the run's result
 * `rows` have Q4_0 too, Q4_K_M's decode rate over Q4_0's at each of our device kinds and TP
 * degrees (≥ 0.8×; the issue's target is CPU ranks'). The two quantisations run one after the
 * other, not interleaved.
 */
export function issue25Targets(model: string, runs: ConfigRuns[], warmup: number, rows: readonly PeerResult[]): PeerTarget[] {
  const wllama2 = (c: PeerConfig) => c.engine === 'wllama' && c.config === 'wasm 2t';
  const r = ratioToBestPeer(runs, warmup, wllama2);
  const failed = runs.find((x) => wllama2(x.config))?.error;
  const out = [target(`#25: ${model}/q4_k_m, ours vs wllama wasm 2t`, 3, r?.ratio ?? null, r
    ? `ours ${r.ours.toFixed(1)} tok/s (${r.ours_config}) / wllama ${r.best_peer.toFixed(1)} tok/s, rounds ${r.rounds.map((x) => x.toFixed(2)).join(', ')}`
    : `not measured: ${failed ? `wllama wasm 2t failed (${failed.slice(0, 120)})` : 'no row of ours or of wllama wasm 2t ran'}`)];
  const ours = (quant: string) => rows.filter((x) => x.engine === 'webgpu-tp' && x.model === model && x.quant === quant);
  for (const k of ours('q4_k_m')) {
    const base = ours('q4_0').find((x) => x.devices === k.devices && x.tp === k.tp);
    if (!base) continue;
    const name = `#25: ${model}, q4_k_m vs q4_0 on ${k.devices} tp${k.tp}`;
    const rate = k.decode_tokens_per_s;
    const why = k.error ?? base.error;
    out.push(rate !== null && base.decode_tokens_per_s
      ? target(name, 0.8, rate / base.decode_tokens_per_s, `${rate.toFixed(1)} tok/s (${k.config}) / ${base.decode_tokens_per_s.toFixed(1)} tok/s (${base.config}), medians of separate runs`)
      : target(name, 0.8, null, `not measured: ${(why ?? 'no run').slice(0, 160)}`));
  }
  return out;
}

const fmt = (v: number | null, digits = 1) => (v === null ? '—' : v.toFixed(digits));

/** The report as a plain-text table, one row per configuration, then the ratios. */
export function formatPeersTable(r: PeersReport): string {
  const head = ['model', 'quant', 'engine', 'config', 'decode tok/s', 'prefill tok/s', 'load ms', 'tokens'];
  const rows = r.results.map((x) => [
    x.model, x.quant, x.engine, x.config, fmt(x.decode_tokens_per_s), fmt(x.prefill_tokens_per_s), fmt(x.load_ms, 0),
    x.error ? `failed: ${x.error.slice(0, 80)}` : x.tokens_match === null ? 'n/a' : x.tokens_match ? 'match' : `differ at ${x.first_mismatch?.position ?? '?'} (ours ${x.first_mismatch?.ours}, peer ${x.first_mismatch?.peer}${x.first_mismatch?.peer_top2_margin !== undefined ? `, peer margin ${x.first_mismatch.peer_top2_margin.toFixed(4)}` : ''})`,
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((row) => (i === 7 ? 0 : row[i]!.length))));
  const line = (cells: string[]) => cells.map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!))).join('  ');
  const ratios = Object.entries(r.ratios).map(([k, v]) =>
    `${k}: ours ${v.ours.toFixed(1)} tok/s (${v.ours_config}) / best peer ${v.best_peer.toFixed(1)} tok/s (${v.best_peer_config}) = ${v.ratio.toFixed(2)}× (rounds ${v.rounds.map((x) => x.toFixed(2)).join(', ')})`);
  const targets = (r.targets ?? []).map((t) => `${t.name}: ${t.ratio === null ? '—' : `${t.ratio.toFixed(2)}×`} (target ≥ ${t.target}×${t.met === null ? '' : t.met ? ', met' : ', missed'}): ${t.detail}`);
  return [line(head), ...rows.map(line), '', ...ratios, ...(targets.length ? ['', ...targets] : [])].join('\n');
}
