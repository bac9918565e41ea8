import { describe, expect, it } from 'vitest';
import { budgetNote, decodeRate, firstMismatch, formatPeersTable, issue25Targets, ratioToBestPeer, summarize, type ConfigRuns, type PeerConfig } from './bench-peers-summary.js';
import type { PeerRun } from './page/peers-types.js';

const cfg = (engine: PeerConfig['engine'], config: string): PeerConfig => ({ engine, config, quant: 'f32', threads: null, tp: 1, devices: 'gpu' });
/** A run whose steps after the warm-up all take `ms`, with two slow warm-up steps. */
const run = (tokens: number[], ms: number, extra: Partial<PeerRun> = {}): PeerRun => ({ tokens, prefillMs: 100, stepMs: [50, 50, ms, ms, ms], ...extra });

describe('bench peers summary', () => {
  it('rates decode by the median step after the warm-up', () => {
    expect(decodeRate({ tokens: [], prefillMs: 0, stepMs: [100, 100, 10, 20, 30] }, 2)).toBe(50);
    expect(decodeRate({ tokens: [], prefillMs: 0, stepMs: [100] }, 2)).toBe(0);
  });

  it('reports the first mismatch with both tokens and the peer\'s top-2 margin', () => {
    const peer = run([1, 2, 9, 4], 1, { top2: [[], [], [[9, 3.5], [3, 3.25]], []] });
    expect(firstMismatch([1, 2, 3, 4], peer, 4)).toEqual({ position: 2, ours: 3, peer: 9, peer_top2_margin: 0.25 });
    expect(firstMismatch([1, 2, 3, 4], run([1, 2, 3, 4], 1), 4)).toBeNull();
    // only the first n tokens count
    expect(firstMismatch([1, 2, 3, 4], run([1, 2, 3, 5], 1), 3)).toBeNull();
  });

  it('gives each configuration its row, failures with their error, and our ratio to the best peer round by round', () => {
    const ours: ConfigRuns = { config: cfg('webgpu-tp', 'gpu tp1'), loadMs: 5, check: run([1, 2, 3], 1), rounds: [run([], 10), run([], 20), run([], 10)] };
    const slow: ConfigRuns = { config: cfg('wllama', 'wasm 1t'), loadMs: 6, check: run([1, 2, 4], 1), rounds: [run([], 40), run([], 40), run([], 40)] };
    const fast: ConfigRuns = { config: cfg('onnxruntime-web', 'wasm 2t'), loadMs: 7, check: run([1, 2, 3], 1, { promptTokens: 9 }), rounds: [run([], 5), run([], 40), run([], 5)] };
    const failed: ConfigRuns = { config: cfg('wllama', 'webgpu'), error: 'no adapter', rounds: [] };
    const rows = summarize('m', [ours, slow, fast, failed], ours, { warmup: 2, compared: 3, promptTokens: 10 });
    expect(rows.map((r) => [r.config, r.decode_tokens_per_s, r.tokens_match])).toEqual([
      ['gpu tp1', 100, true], ['wasm 1t', 25, false], ['wasm 2t', 200, true], ['webgpu', null, null],
    ]);
    expect(rows[0]!.prefill_tokens_per_s).toBe(100);
    expect(rows[1]!.first_mismatch).toEqual({ position: 2, ours: 3, peer: 4 });
    expect(rows[2]!.note).toContain('9 tokens by the peer\'s tokenizer, 10 by ours (differ)');
    expect(rows[3]!.error).toBe('no adapter');
    const ratio = ratioToBestPeer([ours, slow, fast, failed], 2)!;
    // best peer by median round: onnxruntime-web (200); per round 100/200, 50/25, 100/200
    expect(ratio).toMatchObject({ ours: 100, ours_config: 'gpu tp1', best_peer: 200, best_peer_config: 'onnxruntime-web wasm 2t', rounds: [0.5, 2, 0.5], ratio: 0.5 });
    const table = formatPeersTable({ results: rows, ratios: { 'm/f32': ratio } });
    expect(table).toContain('differ at 2 (ours 3, peer 4)');
    expect(table).toContain('failed: no adapter');
    expect(table).toContain('m/f32: ours 100.0 tok/s (gpu tp1) / best peer 200.0 tok/s (onnxruntime-web wasm 2t) = 0.50×');
  });

  it('notes what the time budget cut from a slow configuration, compares the tokens it gave, and leaves a full one alone', () => {
    const full = { tokens: 3, rounds: 2, budgetS: 15 };
    const o = { warmup: 2, compared: 6, promptTokens: 10, full };
    // 6 tokens: prefill, 2 warm-up steps, 3 timed steps
    const six = (ms: number): PeerRun => ({ tokens: [1, 2, 3, 4, 5, 6], prefillMs: 100, stepMs: [50, 50, ms, ms, ms] });
    const ref: ConfigRuns = { config: cfg('webgpu-tp', 'gpu tp1'), check: six(10), rounds: [six(10), six(10)] };
    // the budget stopped its check after 4 tokens and its rounds after 1 and 2 timed steps, and it got one round of two
    const slow: ConfigRuns = { config: cfg('onnxruntime-web', 'webgpu'), check: { tokens: [1, 2, 3, 4], prefillMs: 100, stepMs: [900, 900, 500] }, rounds: [{ tokens: [], prefillMs: 100, stepMs: [900, 900, 500, 500] }] };
    expect(budgetNote(ref, o)).toBeUndefined();
    expect(budgetNote(slow, o)).toBe('over the 15 s budget per run at 2.00 tok/s: 2 of 3 timed tokens per run, 1 of 2 rounds, the first 4 tokens compared');
    const rows = summarize('m', [ref, slow], ref, o);
    expect(rows[0]!.note).toBeUndefined();
    expect(rows[1]).toMatchObject({ decode_tokens_per_s: 2, tokens_match: true, first_mismatch: null });
    expect(rows[1]!.note).toContain('1 of 2 rounds');
    // a cut run still differs where it differs
    const wrong = { ...slow, check: { ...slow.check!, tokens: [1, 2, 9, 4] } };
    expect(summarize('m', [ref, wrong], ref, o)[1]).toMatchObject({ tokens_match: false, first_mismatch: { position: 2, ours: 3, peer: 9 } });
  });

  it('gives #25\'s targets for Q4_K_M: ours vs wllama with 2 threads round by round, and vs Q4_0 per device kind and TP; a refused row is reported, not rated', () => {
    const at = (c: PeerConfig, quant: string, devices: PeerConfig['devices'], tp: number | null): PeerConfig => ({ ...c, quant, devices, tp });
    const o = { warmup: 2, compared: 3, promptTokens: 10 };
    const km: ConfigRuns[] = [
      { config: at(cfg('webgpu-tp', 'gpu tp1'), 'q4_k_m', 'gpu', 1), check: run([1, 2, 3], 1), rounds: [run([], 10), run([], 20)] },
      { config: at(cfg('webgpu-tp', 'cpu tp1'), 'q4_k_m', 'cpu', 1), error: '[MODEL_FORMAT] CPU ranks do not run GGUF K-quant weights', rounds: [] },
      { config: at(cfg('wllama', 'wasm 2t'), 'q4_k_m', 'wasm', null), check: run([1, 2, 3], 1), rounds: [run([], 40), run([], 40)] },
      // faster, but not the target's peer
      { config: at(cfg('wllama', 'webgpu'), 'q4_k_m', 'webgpu', null), check: run([1, 2, 3], 1), rounds: [run([], 1), run([], 1)] },
    ];
    const q4: ConfigRuns[] = [
      { config: at(cfg('webgpu-tp', 'gpu tp1 int8'), 'q4_0', 'gpu', 1), check: run([1, 2, 3], 1), rounds: [run([], 8), run([], 8)] },
      { config: at(cfg('webgpu-tp', 'cpu tp1 int8'), 'q4_0', 'cpu', 1), check: run([1, 2, 3], 1), rounds: [run([], 5), run([], 5)] },
      { config: at(cfg('webgpu-tp', 'gpu tp2 int8'), 'q4_0', 'gpu', 2), check: run([1, 2, 3], 1), rounds: [run([], 5), run([], 5)] },
    ];
    const rows = [...summarize('m', q4, q4[0], o), ...summarize('m', km, km[0], o)];
    const t = issue25Targets('m', km, 2, rows);
    // ours: gpu tp1 at 100 and 50 tok/s (median 75); wllama 2t at 25: rounds 4 and 2
    expect(t[0]).toMatchObject({ name: '#25: m/q4_k_m, ours vs wllama wasm 2t', target: 3, ratio: 3, met: true });
    expect(t[0]!.detail).toBe('ours 75.0 tok/s (gpu tp1) / wllama 25.0 tok/s, rounds 4.00, 2.00');
    // gpu tp1: 75 / 125; cpu tp1 refused the file; gpu tp2 has no Q4_K_M row
    expect(t.slice(1).map((x) => [x.name, x.ratio === null ? null : Number(x.ratio.toFixed(3)), x.met])).toEqual([
      ['#25: m, q4_k_m vs q4_0 on gpu tp1', 0.6, false], ['#25: m, q4_k_m vs q4_0 on cpu tp1', null, null],
    ]);
    expect(t[2]!.detail).toBe('not measured: [MODEL_FORMAT] CPU ranks do not run GGUF K-quant weights');
    const table = formatPeersTable({ results: rows, ratios: {}, targets: t });
    expect(table).toContain('#25: m/q4_k_m, ours vs wllama wasm 2t: 3.00× (target ≥ 3×, met): ours 75.0 tok/s');
    expect(table).toContain('#25: m, q4_k_m vs q4_0 on cpu tp1: — (target ≥ 0.8×): not measured');
    expect(table).toContain('failed: [MODEL_FORMAT] CPU ranks do not run');
    // without wllama 2t, the first target says so
    expect(issue25Targets('m', [km[0]!, { ...km[2]!, error: 'no SharedArrayBuffer', rounds: [] }], 2, rows)[0]).toMatchObject({ ratio: null, met: null, detail: 'not measured: wllama wasm 2t failed (no SharedArrayBuffer)' });
  });
});
