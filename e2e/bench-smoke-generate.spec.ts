import { test, expect } from './fixtures.js';
import { existsSync, mkdtempSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { benchGenerate, type BenchGenerateResult } from '../src/cli/bench-generate.js';
import { writeReport, type BenchAllReport } from '../src/cli/bench-report.js';
import { sharedModelsDir } from '../src/cli/browser.js';
import { parseDevices } from '../src/cli/devices.js';

/** A `bench all` report around `generate`, with minimal other sections. */
function benchAllReport(generate: BenchAllReport['generate']): BenchAllReport {
  return {
    date: '2026-01-01T00:00:00.000Z',
    allreduce: {
      results: [{ workers: 2, floats: 2048, algorithm: 'auto', picked: 'direct', median_us: 5, busbw_gbs: 1, batch: 1000, samples: 3 }],
      baselines: { memcpy_gbs: 4, postmessage: [{ workers: 2, floats: 2048, median_us: 150 }] },
      meta: { spin: 2000, hardwareConcurrency: 2, note: '' },
    },
    kernels: {
      adapter: { vendor: 'google', architecture: 'swiftshader' },
      choices: { gemm: 'regblock', gemv: 'tree', measured: {} },
      results: [{ kernel: 'gemv', m: 1, k: 64, n: 64, median_ms: 0.1, gflops: 0.08 }],
      variants: [],
      baselines: { js: [], tfjs: [] },
      readback_ms: 1,
      readback: {} as BenchAllReport['kernels']['readback'],
    },
    generate,
  };
}

// Smoke pass of `bench generate` so the benchmark never rots: tiny model, few tokens, shape only.
test('bench generate runs and reports every field per TP degree and batch, with a kernel profile', async () => {
  const r = await benchGenerate({
    devices: [parseDevices('gpu')],
    model: resolve(sharedModelsDir, 'stories260K.bin'),
    tokenizer: resolve(sharedModelsDir, 'tok512.bin'),
    tp: [1, 2],
    batch: [1, 2],
    maxTokens: 4,
    profile: true,
  });
  expect(r.results.map((x) => [x.tp, x.batch])).toEqual([[1, 1], [1, 2], [2, 1], [2, 2]]);
  for (const x of r.results) {
    expect(x.tokens).toBe(4 * x.batch);
    for (const k of ['decode_tokens_per_s', 'aggregate_tokens_per_s', 'allreduce_roundtrip_ms', 'load_ms'] as const) {
      expect(typeof x[k]).toBe('number');
    }
    // Prefill has a rate of its own only alone; a batch's prompt is counted in tokens, not characters.
    expect(typeof x.prefill_tokens_per_s).toBe(x.batch === 1 ? 'number' : 'undefined');
    expect(x.prompt_tokens).toBe(r.results[0]!.prompt_tokens);
    expect(Object.keys(x.breakdown_ms).sort()).toEqual(['allreduce_ms', 'compute_ms', 'readback_ms', 'scheduler_ms', 'upload_ms']);
    // Every rank's breakdown at TP > 1, rank 0's first.
    if (x.tp === 1) expect(x.ranks_breakdown_ms).toBeUndefined();
    else {
      expect(x.ranks_breakdown_ms!.length).toBe(x.tp);
      expect(x.ranks_breakdown_ms![0]).toEqual(x.breakdown_ms);
      expect(x.ranks_breakdown_ms![1]!.compute_ms).toBeGreaterThan(0);
    }
    // Timestamp queries time every kernel kind of a decode step (5 layers summed per kind).
    const p = x.profile!;
    expect(p.steps).toBeGreaterThan(0);
    for (const k of ['attention', 'matmul wqkv', 'matmul wo', 'matmul w13', 'matmul w2', 'matmul output', 'rope_kv', 'embed']) {
      expect(p.kernels_ms_per_step[k], k).toBeGreaterThanOrEqual(0);
    }
    // No residual add at any TP: TP=1 accumulates in the matmuls, and at TP=2 rank 0's partial
    // sums carry the residual, so each all-reduce's sum is the new x.
    expect('add' in p.kernels_ms_per_step).toBe(false);
    const sum = Object.values(p.kernels_ms_per_step).reduce((a, b) => a + b, 0);
    expect(p.gpu_ms_per_step).toBeCloseTo(sum, 6);
    expect(p.gpu_ms_per_step).toBeGreaterThan(0);
    expect(p.matmul_gflops).toBeGreaterThan(0);
    // Every rank's kernels at TP > 1 (they share the adapter's cores), rank 0's as above.
    if (x.tp === 1) expect(p.ranks_kernels_ms_per_step).toBeUndefined();
    else {
      expect(p.ranks_kernels_ms_per_step!.length).toBe(x.tp);
      expect(p.ranks_kernels_ms_per_step![0]).toEqual(p.kernels_ms_per_step);
      expect(Object.keys(p.ranks_kernels_ms_per_step![1]!).sort()).toEqual(Object.keys(p.kernels_ms_per_step).sort());
    }
  }
  expect(r.results.find((x) => x.tp === 2)!.allreduce_roundtrip_ms).toBeGreaterThan(0);
  // One round: the TP = 2 rate over TP = 1's at the same batch; no per-round rates.
  for (const x of r.results) {
    expect(x.rounds_tokens_per_s).toBeUndefined();
    const tp1 = r.results.find((y) => y.tp === 1 && y.batch === x.batch)!;
    if (x.tp === 1) expect(x.vs_tp1).toBeUndefined();
    else expect(x.vs_tp1).toBeCloseTo(x.aggregate_tokens_per_s / tp1.aggregate_tokens_per_s, 9);
  }

  // The report renders from these figures: an HTML page with its data and charts, and a PNG.
  const dir = mkdtempSync(join(tmpdir(), 'tp-report-'));
  const report = benchAllReport({ stories15M: r });
  await writeReport(report, join(dir, 'report.html'), join(dir, 'report.png'));
  const html = readFileSync(join(dir, 'report.html'), 'utf8');
  expect(html).toContain('Targets (issue #6)');
  expect(html).not.toMatch(/<script src=/); // self-contained
  expect(existsSync(join(dir, 'report.png'))).toBe(true);
  const png = readFileSync(join(dir, 'report.png'));
  expect(png.subarray(1, 4).toString()).toBe('PNG');
  expect(statSync(join(dir, 'report.png')).size).toBeGreaterThan(20_000);
});

// `--rounds N`: the cases run in interleaved rounds, each round loading every engine afresh; a
// result is its median round, and vs_tp1 the median of the round-by-round ratios. The rounds
// are the same code for every device kind; CPU ranks load in a tenth of SwiftShader's time.
test('bench generate --rounds interleaves the degrees and reports the median round and ratio', async () => {
  const r = await benchGenerate({
    devices: [parseDevices('cpu')],
    model: resolve(sharedModelsDir, 'stories260K.bin'),
    tokenizer: resolve(sharedModelsDir, 'tok512.bin'),
    tp: [1, 2],
    batch: [2],
    // Enough steps that the window (from the step that gives both streams a token) is never
    // empty on CPU ranks, which step in ~1 ms here.
    maxTokens: 16,
    rounds: 3,
  });
  expect(r.results.map((x) => x.tp)).toEqual([1, 2]);
  const [one, two] = r.results as [BenchGenerateResult, BenchGenerateResult];
  for (const x of r.results) {
    expect(x.rounds_tokens_per_s).toHaveLength(3);
    expect(x.rounds_tokens_per_s!.every((v) => v > 0)).toBe(true);
    expect(x.aggregate_tokens_per_s).toBe([...x.rounds_tokens_per_s!].sort((a, b) => a - b)[1]);
    expect(x.decode_tokens_per_s).toBeCloseTo(x.aggregate_tokens_per_s / 2, 9);
    expect(x.tokens).toBe(32);
    expect(x.rounds_load_ms).toHaveLength(3);
    expect(x.rounds_load_ms!.every((v) => v > 0)).toBe(true);
  }
  const ratios = two.rounds_tokens_per_s!.map((v, i) => v / one.rounds_tokens_per_s![i]!).sort((a, b) => a - b);
  expect(two.vs_tp1).toBeCloseTo(ratios[1]!, 9);
  expect(one.vs_tp1).toBeUndefined();
});

// `--quant`: one synth GGUF per quantisation, each measured, with decode speed against f32. A
// quantisation the kernels cannot run is reported with its typed error instead of ending the run.
// `q4_0+int8` runs the same Q4_0 file with int8 activations (W4A8). The quantisation loop and its
// ratios are the same for every device kind; CPU ranks run every one of these files.
test('bench generate --quant measures each synth GGUF quantisation against f32', async () => {
  const r = await benchGenerate({ devices: [parseDevices('cpu')], quant: ['f32', 'f16', 'q8_0', 'q4_0', 'q4_0+int8'], shape: 'stories260K', tp: [1], maxTokens: 4 });
  const f32 = r.results.find((x) => x.quant === 'f32')!;
  expect(f32.decode_vs_f32).toBe(1);
  const q8 = r.results.find((x) => x.quant === 'q8_0')!;
  expect(q8.tokens).toBe(4);
  expect(q8.decode_vs_f32).toBeCloseTo(q8.decode_tokens_per_s / f32.decode_tokens_per_s, 9);
  // Every quantisation runs here: none may be reported as failed.
  expect(r.failed ?? []).toEqual([]);
  for (const quant of ['f16', 'q4_0'] as const) {
    const q = r.results.find((x) => x.quant === quant && !x.activations)!;
    expect(q.tokens, quant).toBe(4);
    expect(q.decode_vs_f32).toBeCloseTo(q.decode_tokens_per_s / f32.decode_tokens_per_s, 9);
  }
  const w4a8 = r.results.find((x) => x.quant === 'q4_0' && x.activations === 'int8')!;
  expect(w4a8.tokens).toBe(4);
  expect(w4a8.ranks_activations).toBe('int8');
  expect(w4a8.decode_vs_f32).toBeCloseTo(w4a8.decode_tokens_per_s / f32.decode_tokens_per_s, 9);
  expect(r.results).toHaveLength(5);
});

// `--devices`, once per configuration: CPU ranks and a GPU + CPU list in one run, interleaved,
// with each case's ranks named, the ratios to the first case and to batch 1, and the memory
// roofline (the one- and two-thread WebAssembly read of the weights' bytes) beside the CPU cases.
test('bench generate --devices cpu --devices gpu,cpu compares the kinds in one run, with the roofline', async () => {
  const r = await benchGenerate({
    model: resolve(sharedModelsDir, 'stories260K.bin'),
    tokenizer: resolve(sharedModelsDir, 'tok512.bin'),
    devices: [parseDevices('cpu'), parseDevices('gpu,cpu')],
    tp: [1],
    batch: [1, 2],
    // As in the --rounds test: a window of a few steps on a CPU rank can end before it starts.
    maxTokens: 16,
    rounds: 2,
  });
  expect(r.results.map((x) => [x.devices, x.backend, x.tp, x.batch])).toEqual([
    ['cpu', 'cpu', 1, 1], ['cpu', 'cpu', 1, 2], ['gpu,cpu', 'mixed', 2, 1], ['gpu,cpu', 'mixed', 2, 2],
  ]);
  expect(r.first).toEqual({ devices: 'cpu', tp: 1 });
  const ratio = (x: BenchGenerateResult, y: BenchGenerateResult) => {
    const rs = x.rounds_tokens_per_s!.map((v, i) => v / y.rounds_tokens_per_s![i]!).sort((a, b) => a - b);
    return (rs[0]! + rs[1]!) / 2;
  };
  const [c1, c2, m1, m2] = r.results as [BenchGenerateResult, BenchGenerateResult, BenchGenerateResult, BenchGenerateResult];
  expect(c1.ranks.map((x) => [x.rank, x.backend, x.spec])).toEqual([[0, 'cpu', 'cpu']]);
  expect(m1.ranks.map((x) => x.backend)).toEqual(['gpu', 'cpu']);
  expect(c1.vs_first).toBeUndefined();
  expect(m1.vs_first).toBeCloseTo(ratio(m1, c1), 9);
  expect(m2.vs_first).toBeCloseTo(ratio(m2, c2), 9);
  expect(c2.vs_batch1).toBeCloseTo(ratio(c2, c1), 9);
  expect(c1.vs_batch1).toBeUndefined();
  // stories260K's f32 matrices: 5 layers of q and o (64 × 64), k and v (32 × 64: 4 KV heads), the
  // MLP (3 × 172 × 64), and the classifier (512 × 64).
  const ro = r.roofline!;
  expect(ro.weight_bytes).toBe(4 * (5 * (2 * 64 * 64 + 2 * 32 * 64 + 3 * 172 * 64) + 512 * 64));
  expect(ro.read.bytes).toBe(ro.weight_bytes);
  expect(ro.read.one_thread.median_ms).toBeGreaterThan(0);
  // Each read is the faster of one and two streams a thread.
  for (const x of [ro.read.one_thread, ro.read.two_threads]) {
    expect(x.gbs).toBeCloseTo(Math.max(x.one_stream_gbs, x.two_streams_gbs), 2);
    expect(x.gbs).toBeCloseTo(x.streams === 1 ? x.one_stream_gbs : x.two_streams_gbs, 9);
  }
  expect(ro.roofline_tokens_per_s).toBeCloseTo(1000 / ro.read.two_threads.median_ms, 6);
  for (const x of r.results) expect(x.vs_roofline).toBeGreaterThan(0);

  // The report charts the CPU and mixed cases beside each other, with the roofline.
  const dir = mkdtempSync(join(tmpdir(), 'tp-report-'));
  await writeReport(benchAllReport({ stories260K: r }), join(dir, 'report.html'), join(dir, 'report.png'));
  const html = readFileSync(join(dir, 'report.html'), 'utf8');
  expect(html).toContain('Memory roofline of CPU ranks');
  expect(html).toContain('<td>stories260K</td><td>mixed</td><td>gpu,cpu</td>');
});
