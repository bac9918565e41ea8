import { test, expect } from './fixtures.js';
import { benchKernels } from '../src/cli/bench-kernels.js';

/** `bench kernels --smoke`: the JSON has its documented shape (no timing assertions). */
test('bench kernels (smoke) reports results, baselines and readback figures', async () => {
  test.setTimeout(180_000);
  const r = await benchKernels({ smoke: true });
  const row = expect.objectContaining({
    kernel: expect.any(String), m: expect.any(Number), k: expect.any(Number), n: expect.any(Number),
    median_ms: expect.any(Number), gflops: expect.any(Number),
  });
  expect(r.results.length).toBeGreaterThan(0);
  for (const x of r.results) expect(x).toEqual(row);
  expect(r.baselines.js.length).toBe(r.results.length);
  expect(r.baselines.tfjs.length).toBe(r.results.length);
  for (const x of [...r.baselines.js, ...r.baselines.tfjs]) expect(x).toEqual(row);
  expect(r.readback_ms).toBeGreaterThan(0);
  for (const f of [r.readback.tiny.helper, r.readback.tiny.plain, r.readback.long.helper, r.readback.long.plain]) {
    expect(f.median_ms).toBeGreaterThan(0);
  }
  expect(r.choices.gemm).toBeTruthy();
  expect(r.choices.small).toBeTruthy();
  expect(r.variants.some((v) => v.kernel.startsWith('small_'))).toBe(true);
  // The read roofline: the reads ran over the same floats and took time.
  expect(r.roofline?.floats).toBe(256 * 256);
  expect(['read_chunked', 'read_strided', 'read_rows4']).toContain(r.roofline?.gpu_read.kernel);
  expect(r.roofline?.gpu_read.median_ms).toBeGreaterThan(0);
  expect(r.roofline?.js_read.median_ms).toBeGreaterThan(0);
  // TP = 2 shards of each stories110M matrix kind, timed against the whole matrix.
  expect(r.shards?.map((x) => [x.matrix, x.split])).toEqual([['wqkv', 'col'], ['wo', 'row'], ['w13', 'col'], ['w2', 'row'], ['output', 'col']]);
  for (const x of r.shards!) {
    expect(x.full_ms).toBeGreaterThan(0);
    expect(x.shards_ms).toBeGreaterThan(0);
    expect(x.ratio).toBeCloseTo(x.shards_ms / x.full_ms, 9);
  }
  // CPU ranks: each matrix at m = 1 and 8, TP 1 and 2, beside the read of its bytes by as many threads.
  const cpu = r.cpu!;
  expect(cpu.map((x) => [x.matrix, x.m, x.tp])).toEqual(
    ['wqkv', 'wo', 'w13', 'w2', 'output'].flatMap((matrix) => [1, 8].flatMap((m) => [[matrix, m, 1], [matrix, m, 2]])),
  );
  for (const x of cpu) {
    expect(x.median_ms).toBeGreaterThan(0);
    expect(x.read_ms).toBeGreaterThan(0);
    expect(x.gbs).toBeCloseTo((x.n * x.k * 4) / (x.median_ms * 1e6), 2);
    expect(x.vs_read).toBeCloseTo(x.read_ms / x.median_ms, 2);
    expect([1, 2]).toContain(x.read_streams);
  }
  // The CPU GEMM beside the panel matmul on the same panels: each TP 2 shard shape, f32 and f16.
  const gemm = r.cpu_gemm!;
  expect(gemm.rows.map((x) => [x.dtype, x.matrix])).toEqual(['f32', 'f16'].flatMap((d) => ['wqkv', 'wo', 'w13', 'w2'].map((m) => [d, m])));
  for (const x of gemm.rows) {
    expect(x.gemm_gflops).toBeGreaterThan(0);
    expect(x.panel_gflops).toBeGreaterThan(0);
    expect(x.vs_peak).toBeCloseTo(x.gemm_gflops / gemm.peak_gflops, 1);
  }
});
