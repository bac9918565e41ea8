import { describe, expect, it } from 'vitest';
import { checkTargets, reportHtml, type BenchAllReport } from './bench-report.js';
import type { BenchGenerateResult } from './bench-generate.js';
import type { PeerResult, PeersReport } from './bench-peers-summary.js';
import { mergePeers, peersChart, peersRatioRows } from './bench-report-peers.js';

const result = (tp: number, batch: number, aggregate: number, roundtrip = 1): BenchGenerateResult => ({
  backend: 'gpu', ranks: [], tp, batch, aggregate_tokens_per_s: aggregate, prompt_tokens: 10, tokens: 16 * batch, prefill_tokens_per_s: 50,
  decode_tokens_per_s: aggregate / batch, allreduce_roundtrip_ms: tp > 1 ? roundtrip : 0, load_ms: 100, adapter: 'swiftshader',
  breakdown_ms: { compute_ms: 1, readback_ms: 0.5, allreduce_ms: 0.01, upload_ms: 0.1, scheduler_ms: 0.05 },
});

function report(generate: BenchAllReport['generate']): BenchAllReport {
  return {
    date: '2026-11-29T00:00:00.000Z',
    allreduce: { results: [], baselines: { memcpy_gbs: 4, postmessage: [] }, meta: { spin: 2000, hardwareConcurrency: 2, note: '' } },
    kernels: {
      adapter: { vendor: 'google', architecture: 'swiftshader' }, choices: { gemm: 'regblock', gemv: 'tree', measured: {} },
      results: [], variants: [], baselines: { js: [], tfjs: [] }, readback_ms: 1, readback: {} as BenchAllReport['kernels']['readback'],
    },
    generate,
  };
}

describe('bench report', () => {
  it('checks issue #6 targets as ratios within one run', () => {
    const r = report({
      stories15M: { model: 's15', max_tokens: 16, results: [result(1, 1, 10), result(2, 1, 6, 0.4), result(2, 8, 30, 0.6)] },
      stories110M: { model: 's110', max_tokens: 16, results: [result(1, 1, 2), result(2, 1, 1.8, 0.2), result(1, 8, 10), result(2, 8, 9, 0.3)] },
    });
    const t = checkTargets(r);
    expect(t.map((x) => [x.measured, x.met])).toEqual([
      ['5.00×', true], // 30 / 6
      ['0.40 ms', true], // median of 0.4, 0.6, 0.2, 0.3 (upper middle)
      ['0.90×', true], // 1.8 / 2
      ['0.90×', false], // 9 / 10 < 0.95
      ['0.10×', false], // 2 / 19.8
      ['not run', null], // no CPU ranks in this run
      ['not run', null],
      ['not run', null],
    ]);
  });

  it('checks the CPU-rank targets on CPU cases only, from their round-by-round ratios', () => {
    const cpu = (tp: number, batch: number, aggregate: number, extra: Partial<BenchGenerateResult> = {}): BenchGenerateResult => ({ ...result(tp, batch, aggregate), backend: 'cpu', ...extra });
    const r = report({
      stories110M: {
        model: 's110', max_tokens: 16,
        results: [result(1, 1, 2), result(2, 1, 1), cpu(1, 1, 10), cpu(2, 1, 17, { vs_tp1: 1.6, vs_roofline: 0.8 }), cpu(2, 8, 80)],
        roofline: { weight_bytes: 4e8, read: { bytes: 4e8, one_thread: { median_ms: 40, gbs: 10, streams: 1, one_stream_gbs: 10, two_streams_gbs: 9 }, two_threads: { median_ms: 25, gbs: 16, streams: 2, one_stream_gbs: 14, two_streams_gbs: 16 } }, roofline_tokens_per_s: 40 },
      },
    });
    const t = checkTargets(r);
    expect(t[2]).toMatchObject({ measured: '0.50×', met: false }); // the GPU TP cost is the GPU rows' (1 / 2)
    expect(t.slice(5).map((x) => [x.measured, x.met])).toEqual([
      ['1.60×', true], // vs_tp1, not 17 / 10
      ['0.80×', false],
      ['4.71×', true], // no vs_batch1: 80 / 17
    ]);
    const html = reportHtml(r);
    expect(html).toContain('Memory roofline of CPU ranks');
    expect(html).toContain('<td>stories110M</td><td>cpu</td><td>default</td>');
  });

  it('takes the TP cost from the round-by-round median ratio when the run had rounds', () => {
    const r = report({
      stories110M: { model: 's110', max_tokens: 16, results: [result(1, 8, 10), { ...result(2, 8, 9, 0.3), rounds_tokens_per_s: [9, 8, 10], vs_tp1: 0.96 }] },
    });
    expect(checkTargets(r)[3]).toMatchObject({ measured: '0.96×', met: true });
  });

  it('marks targets whose cases were not run instead of failing them', () => {
    const t = checkTargets(report({ stories15M: { model: 's15', max_tokens: 4, results: [result(1, 1, 10)] } }));
    expect(t.every((x) => x.met === null && x.measured === 'not run')).toBe(true);
  });

  it('embeds the data so that no text in it can close the script', () => {
    const r = report({ stories15M: { model: 's15', max_tokens: 4, results: [{ ...result(1, 1, 10), adapter: '</script><img src=x>' }] } });
    const html = reportHtml(r);
    expect(html).not.toContain('</script><img');
    expect(html).toContain('&#60;/script&#62;'); // the adapter name in the header, escaped
  });

  it('charts decode tok/s by engine and config per model, and tables our ratio to the best peer per model', () => {
    const row = (model: string, quant: string, engine: PeerResult['engine'], config: string, rate: number | null): PeerResult => ({
      engine, config, model, quant, threads: null, tp: null, devices: 'wasm', decode_tokens_per_s: rate, prefill_tokens_per_s: null, load_ms: null, tokens_match: null, first_mismatch: null,
    });
    const a: PeersReport = {
      results: [row('s15', 'f32', 'webgpu-tp', 'cpu tp2', 300), row('s15', 'f32', 'wllama', 'wasm 2t', 250), row('s15', 'f32', 'wllama', 'webgpu', null)],
      ratios: { 's15/f32': { ours: 300, ours_config: 'cpu tp2', best_peer: 250, best_peer_config: 'wllama wasm 2t', ratio: 1.2, rounds: [1.2, 1.1, 1.25] } },
    };
    const b: PeersReport = {
      results: [row('s110', 'q8_0', 'webgpu-tp', 'gpu tp1 int8', 2), row('s110', 'q8_0', 'wllama', 'wasm 2t', 25)],
      ratios: { 's110/q8_0': { ours: 2, ours_config: 'gpu tp1 int8', best_peer: 25, best_peer_config: 'wllama wasm 2t', ratio: 0.08, rounds: [0.08] } },
    };
    const peers = mergePeers([a, b]);
    expect(peersChart(peers)).toEqual({
      labels: ['s15/f32', 's110/q8_0'],
      datasets: [
        { label: 'webgpu-tp cpu tp2', data: [300, null] },
        { label: 'wllama wasm 2t', data: [250, 25] },
        { label: 'wllama webgpu', data: [null, null] },
        { label: 'webgpu-tp gpu tp1 int8', data: [null, 2] },
      ],
    });
    expect(peersRatioRows(peers)).toEqual([
      ['s15/f32', 300, 'cpu tp2', 250, 'wllama wasm 2t', 1.2, '1.20, 1.10, 1.25'],
      ['s110/q8_0', 2, 'gpu tp1 int8', 25, 'wllama wasm 2t', 0.08, '0.08'],
    ]);
    const html = reportHtml({ ...report({ stories15M: { model: 's15', max_tokens: 4, results: [result(1, 1, 10)] } }), peers });
    expect(html).toContain('<canvas id="peers">');
    expect(html).toContain('<td>s110/q8_0</td><td>2</td><td>gpu tp1 int8</td><td>25</td><td>wllama wasm 2t</td><td>0.08000</td>');
    expect(html).toContain('"label":"wllama wasm 2t","data":[250,25]');
    // a report from before the peers has neither
    expect(reportHtml(report({}))).not.toContain('id="peers"');
  });
});
