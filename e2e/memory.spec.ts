/**
 * What each rank uploads, counted from outside the engine: an init script wraps every Worker
 * the page creates with a prelude that wraps GPUDevice.createBuffer and GPUQueue.writeBuffer
 * and reports the bytes over a BroadcastChannel. The count is compared with a formula from
 * the model's config, not with the engine's own report.
 */
import { test as base, expect, scriptedHarness } from './fixtures.js';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Harness } from '../src/cli/browser.js';
import { llama2cConfig, SYNTH_SHAPES, writeSynthCheckpoint, writeSynthTokenizer } from '../src/model/synth.js';
import { exportGroupSize, writeSynthCheckpointQ8 } from '../src/model/synth-q8.js';
import { modelsDir, readArrayBuffer } from '../test-support/fixtures/paths.js';
import { loadLlama2c } from '../src/model/formats/llama2c.js';
import { encodeGguf } from '../src/model/formats/gguf-write.js';
import { newMappings, residentMappings, shardFloor } from './renderer-memory.js';
import { withSynth15M } from './synth-files.js';
import { Tokenizer } from '../src/model/tokenizer/tokenizer.js';

const PRELUDE = `
const ch = new BroadcastChannel('tp-upload-count');
const rank = self.name;
const post = (bytes, usage) => ch.postMessage({ rank, bytes, uniform: (usage & GPUBufferUsage.UNIFORM) !== 0 });
const create = GPUDevice.prototype.createBuffer;
GPUDevice.prototype.createBuffer = function (desc) {
  const b = create.call(this, desc);
  if (desc.mappedAtCreation) post(desc.size, desc.usage);
  return b;
};
const write = GPUQueue.prototype.writeBuffer;
GPUQueue.prototype.writeBuffer = function (buffer, offset, data, dataOffset, size) {
  const el = ArrayBuffer.isView(data) ? data.BYTES_PER_ELEMENT || 1 : 1;
  const total = ArrayBuffer.isView(data) ? data.byteLength : data.byteLength;
  const bytes = size !== undefined ? size * el : total - (dataOffset ?? 0) * el;
  post(bytes, buffer.usage);
  return write.apply(this, arguments);
};
`;

// Runs in the page before any app code: every module Worker first imports the prelude.
const INIT = `
(() => {
  const prelude = URL.createObjectURL(new Blob([${JSON.stringify(PRELUDE)}], { type: 'text/javascript' }));
  const Native = Worker;
  window.__uploads = {};
  new BroadcastChannel('tp-upload-count').onmessage = (e) => {
    const u = (window.__uploads[e.data.rank] ??= { storage: 0, uniform: 0 });
    u[e.data.uniform ? 'uniform' : 'storage'] += e.data.bytes;
  };
  window.Worker = class extends Native {
    constructor(url, opts) {
      if (opts && opts.type === 'module') {
        const abs = new URL(url, location.href).href;
        const boot = 'import ' + JSON.stringify(prelude) + '; import ' + JSON.stringify(abs) + ';';
        url = URL.createObjectURL(new Blob([boot], { type: 'text/javascript' }));
      }
      super(url, opts);
    }
  };
})();
`;

const test = base.extend<{ counted: Harness }>({ counted: scriptedHarness(INIT) });

// stories260K: dim 64, hidden 172, 5 layers, 8 heads, 4 KV heads (head size 8), vocab 512, seq 512.
const c = { dim: 64, hidden: 172, layers: 5, heads: 8, kvHeads: 4, hs: 8, vocab: 512, seq: 512 };
const pad4 = (k: number) => Math.ceil(k / 4) * 4;

/** Bytes a rank uploads at degree tp: weights (rows padded to vec4) and its RoPE table. */
function expectedBytes(tp: number, rank: number): number {
  const q = (c.heads / tp) * c.hs;
  const kvHeads = tp <= c.kvHeads ? c.kvHeads / tp : 1;
  const kv = kvHeads * c.hs;
  const hid = Math.floor(c.hidden / tp) + (rank < c.hidden % tp ? 1 : 0);
  const voc = Math.floor(c.vocab / tp) + (rank < c.vocab % tp ? 1 : 0);
  const perLayer =
    2 * c.dim + // attention_norm, ffn_norm
    (q + 2 * kv) * pad4(c.dim) + // wq|wk|wv rows of its heads
    c.dim * pad4(q) + // wo: its columns
    2 * hid * pad4(c.dim) + // w1|w3 rows of its hidden units
    c.dim * pad4(hid); // w2: its columns
  const floats = c.vocab * pad4(c.dim) + c.layers * perLayer + c.dim + voc * pad4(c.dim) + c.seq * c.hs; // + rope (seq, hs/2) × (cos, sin)
  return floats * 4;
}

test.describe.configure({ mode: 'serial' });

for (const tp of [1, 2, 4]) {
  test(`each rank uploads its shard, not the model, at TP=${tp} (counted by wrapping WebGPU)`, async ({ counted }) => {
    await counted.page.evaluate(() => {
      (window as unknown as { __uploads: object }).__uploads = {};
    });
    const r = await counted.page.evaluate(
      (o) => window.tp.engine.load(o),
      { model: '/models/stories260K.bin', tokenizer: '/models/tok512.bin', tp, prompt: '', maxTokens: 1, temperature: 0, topP: 0.9, seed: 1 },
    );
    expect('error' in r ? r.error : null).toBeNull();
    // BroadcastChannel messages may trail the load's completion by a task or two.
    await counted.page.waitForTimeout(300);
    const uploads = await counted.page.evaluate(() => (window as unknown as { __uploads: Record<string, { storage: number; uniform: number }> }).__uploads);
    const ranks = Object.keys(uploads).filter((k) => k.startsWith('webgpu-tp rank')).sort();
    expect(ranks.length).toBe(tp);
    for (let rank = 0; rank < tp; rank++) {
      const got = uploads[`webgpu-tp rank ${rank}`]!.storage;
      const want = expectedBytes(tp, rank);
      // Weights and tables are exact; the rest is per-op step data and, on the page's first
      // engine, kernel tuning's inputs: a few hundred bytes, far below one shard's split part.
      expect(got).toBeGreaterThanOrEqual(want);
      expect(got - want).toBeLessThan(4096);
    }
    await counted.page.evaluate(() => window.tp.engine.disposeAll());
  });
}

/**
 * Bytes a rank uploads for a llama2.c-shaped model whose matrices take `matrixBytes(rows, cols)`
 * (f32: rows padded to vec4; Q8_0: int8 values and an f32 scale per group), with f32 norms and
 * its RoPE table; MLP units split in whole groups of `hiddenGroup`.
 */
function expectedShapeBytes(
  s: { dim: number; hiddenDim: number; nLayers: number; nHeads: number; nKvHeads: number; vocabSize: number; seqLen: number },
  tp: number, rank: number, matrixBytes: (rows: number, cols: number) => number, hiddenGroup = 1,
): number {
  const hs = s.dim / s.nHeads;
  const q = (s.nHeads / tp) * hs;
  const kv = (tp <= s.nKvHeads ? s.nKvHeads / tp : 1) * hs;
  const groups = s.hiddenDim / hiddenGroup;
  const hid = (Math.floor(groups / tp) + (rank < groups % tp ? 1 : 0)) * hiddenGroup;
  const voc = Math.floor(s.vocabSize / tp) + (rank < s.vocabSize % tp ? 1 : 0);
  const perLayer = 2 * s.dim * 4 + matrixBytes(q + 2 * kv, s.dim) + matrixBytes(s.dim, q) + matrixBytes(2 * hid, s.dim) + matrixBytes(s.dim, hid);
  return matrixBytes(s.vocabSize, s.dim) + s.nLayers * perLayer + s.dim * 4 + matrixBytes(voc, s.dim) + s.seqLen * hs * 4;
}

test('Q8_0 (synth stories15M, llama2.c v2, group 32): each rank uploads ≤ 0.3× its f32 bytes at TP 1 and 3 (counted by wrapping WebGPU)', async ({ counted }) => {
  test.setTimeout(300_000);
  const shape = SYNTH_SHAPES.stories15M;
  const config = llama2cConfig(shape);
  const gs = exportGroupSize(config);
  const dir = mkdtempSync(join(tmpdir(), 'tp-mem-q8-'));
  try {
    await writeSynthCheckpointQ8(config, 1, join(dir, 'm.bin'));
    await writeSynthTokenizer(config.vocabSize, 1, join(dir, 'tok.bin'));
    const model = counted.server.mountFile('/files/q8/m.bin', join(dir, 'm.bin'));
    const tokenizer = counted.server.mountFile('/files/q8/tok.bin', join(dir, 'tok.bin'));
    // Head size 48 and groups of 32: TP 2 would cut a group of wo's columns at column 144, TP 3 does not.
    const two = await counted.page.evaluate((o) => window.tp.engine.load(o), { model, tokenizer, tp: 2, prompt: '', maxTokens: 1, temperature: 0, topP: 0.9, seed: 1, cache: false });
    expect('error' in two ? two.error.name : null).toBe('PlanError');
    for (const tp of [1, 3]) {
      await counted.page.evaluate(() => {
        (window as unknown as { __uploads: object }).__uploads = {};
      });
      const r = await counted.page.evaluate((o) => window.tp.engine.load(o), { model, tokenizer, tp, prompt: '', maxTokens: 1, temperature: 0, topP: 0.9, seed: 1, cache: false });
      expect('error' in r ? r.error : null).toBeNull();
      await counted.page.waitForTimeout(300);
      const uploads = await counted.page.evaluate(() => (window as unknown as { __uploads: Record<string, { storage: number; uniform: number }> }).__uploads);
      for (let rank = 0; rank < tp; rank++) {
        const got = uploads[`webgpu-tp rank ${rank}`]!.storage;
        const want = expectedShapeBytes(shape, tp, rank, (rows, cols) => rows * cols + ((rows * cols) / gs) * 4, gs);
        const f32 = expectedShapeBytes(shape, tp, rank, (rows, cols) => rows * pad4(cols) * 4);
        expect(got).toBeGreaterThanOrEqual(want);
        expect(got - want).toBeLessThan(4096);
        expect(got / f32).toBeLessThanOrEqual(0.3);
      }
      await counted.page.evaluate(() => window.tp.engine.disposeAll());
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('Q4_0 (synth stories15M, every matrix q4_0 in groups of 32): each rank uploads its nibbles and scales, ≤ 0.17× its f32 bytes, at TP 1 and 3', async ({ counted }) => {
  test.setTimeout(300_000);
  const shape = SYNTH_SHAPES.stories15M;
  const config = llama2cConfig(shape);
  const dir = mkdtempSync(join(tmpdir(), 'tp-mem-q4-'));
  try {
    // The f32 checkpoint; the page lays it out as q4_0 (src/model/q4-layout.ts) and loads that.
    await writeSynthCheckpoint(config, 1, join(dir, 'm.bin'));
    await writeSynthTokenizer(config.vocabSize, 1, join(dir, 'tok.bin'));
    const model = counted.server.mountFile('/files/q4/m.bin', join(dir, 'm.bin'));
    const tokenizer = counted.server.mountFile('/files/q4/tok.bin', join(dir, 'tok.bin'));
    // Head size 48: TP 2 would start rank 1's heads at column 144 of wo, inside a group of 32.
    const two = await counted.page.evaluate((o) => window.tp.q4engine.load(o), { model, tokenizer, tp: 2 });
    expect('error' in two ? two.error.name : null).toBe('PlanError');
    for (const tp of [1, 3]) {
      await counted.page.evaluate(() => {
        (window as unknown as { __uploads: object }).__uploads = {};
      });
      const r = await counted.page.evaluate((o) => window.tp.q4engine.load(o), { model, tokenizer, tp });
      if ('error' in r) throw new Error(JSON.stringify(r.error));
      expect(r.quantised.length).toBe(1 + 7 * shape.nLayers); // the embedding (= classifier) and 7 matrices a layer
      await counted.page.waitForTimeout(300);
      const uploads = await counted.page.evaluate(() => (window as unknown as { __uploads: Record<string, { storage: number; uniform: number }> }).__uploads);
      for (let rank = 0; rank < tp; rank++) {
        const got = uploads[`webgpu-tp rank ${rank}`]!.storage;
        // 16 bytes of nibbles and a 4-byte scale per group of 32
        const want = expectedShapeBytes(shape, tp, rank, (rows, cols) => (rows * cols) / 2 + ((rows * cols) / 32) * 4, 32);
        const f32 = expectedShapeBytes(shape, tp, rank, (rows, cols) => rows * pad4(cols) * 4);
        expect(got).toBeGreaterThanOrEqual(want);
        expect(got - want).toBeLessThan(4096);
        expect(got / f32).toBeLessThanOrEqual(0.17);
      }
      await counted.page.evaluate(() => window.tp.q4engine.dispose());
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('f16 (stories260K as GGUF F16): each rank uploads 2 bytes a weight, about 0.5× its f32 bytes, at TP 1 and 2', async ({ counted }) => {
  test.setTimeout(120_000);
  const stories = loadLlama2c(readArrayBuffer(resolve(modelsDir, 'stories260K.bin')));
  const tok = Tokenizer.parse(readFileSync(resolve(modelsDir, 'tok512.bin')), 512);
  const dir = mkdtempSync(join(tmpdir(), 'tp-mem-f16-'));
  try {
    writeFileSync(join(dir, 'm.gguf'), encodeGguf(stories, 'f16', tok));
    const model = counted.server.mountFile('/files/f16/m.gguf', join(dir, 'm.gguf'));
    const shape = { dim: c.dim, hiddenDim: c.hidden, nLayers: c.layers, nHeads: c.heads, nKvHeads: c.kvHeads, vocabSize: c.vocab, seqLen: c.seq };
    for (const tp of [1, 2]) {
      await counted.page.evaluate(() => {
        (window as unknown as { __uploads: object }).__uploads = {};
      });
      const r = await counted.page.evaluate((o) => window.tp.engine.load(o), { model, tp, prompt: '', maxTokens: 1, temperature: 0, topP: 0.9, seed: 1, cache: false });
      expect('error' in r ? r.error : null).toBeNull();
      await counted.page.waitForTimeout(300);
      const uploads = await counted.page.evaluate(() => (window as unknown as { __uploads: Record<string, { storage: number; uniform: number }> }).__uploads);
      for (let rank = 0; rank < tp; rank++) {
        const got = uploads[`webgpu-tp rank ${rank}`]!.storage;
        // rows of halves padded to a multiple of 4 (8 bytes); the MLP split in pairs of halves
        const want = expectedShapeBytes(shape, tp, rank, (rows, cols) => rows * pad4(cols) * 2, 2);
        const f32 = expectedShapeBytes(shape, tp, rank, (rows, cols) => rows * pad4(cols) * 4);
        expect(got).toBeGreaterThanOrEqual(want);
        expect(got - want).toBeLessThan(4096);
        expect(got / f32).toBeGreaterThan(0.5);
        expect(got / f32).toBeLessThanOrEqual(0.53);
      }
      await counted.page.evaluate(() => window.tp.engine.disposeAll());
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('no GPU rank keeps its packed shard resident once uploaded (synth stories15M f32, TP 2; the renderer\'s smaps)', async ({ counted }) => {
  test.setTimeout(120_000);
  const shape = SYNTH_SHAPES.stories15M;
  const tp = 2;
  await withSynth15M(counted, 'gpu-shard', async (model, tokenizer) => {
    // A GPU rank's weights and state live in GPU buffers, so no new anonymous mapping as large as
    // a packed shard may stay resident in the renderer. (The page's own garbage, the streamed
    // file's chunks, waits for the main thread's next GC in smaller mappings.)
    const floor = shardFloor(shape, tp);
    // What earlier engines of this page left is not this load's.
    const before = residentMappings(floor);
    const r = await counted.page.evaluate((o) => window.tp.engine.load(o), { model, tokenizer, tp, prompt: '', maxTokens: 1, temperature: 0, topP: 0.9, seed: 1, cache: false });
    expect('error' in r ? r.error : null).toBeNull();
    expect(newMappings(before, residentMappings(floor)).map((m) => m.rss)).toEqual([]);
    await counted.page.evaluate(() => window.tp.engine.disposeAll());
  });
});
