/**
 * What each CPU rank holds, counted from outside the engine (issue 22's "memory per rank"): an
 * init script makes every module Worker first import a prelude that wraps the
 * `WebAssembly.Memory` constructor and `grow` (the bytes each rank's own memory reserves) and
 * `%TypedArray%.prototype.set` into such a memory (the bytes copied into it, as memory.spec
 * counts the bytes written to GPU buffers), and reports them over a BroadcastChannel. The
 * counts are compared with formulas from the model's config, not with the engine's own report.
 */
import { expect, withInitScript } from './fixtures.js';
import { countingInit } from './counting.js';
import { newMappings, residentMappings, shardFloor, type Mapping } from './renderer-memory.js';
import { withSynth15M } from './synth-files.js';
import type { Harness } from '../src/cli/browser.js';
import { SYNTH_SHAPES } from '../src/model/synth.js';
import type { PageGenerateOptions } from '../src/cli/page/types.js';

// Shared memories are the collectives' group buffers, made on the main thread: not a rank's own.
// A block of its own: the counting prelude after it declares names too.
const PRELUDE = `{
const ch = new BroadcastChannel('tp-wasm-memory');
const rank = self.name;
const Native = WebAssembly.Memory;
const ids = new WeakMap();
const buffers = new WeakSet();
let next = 0;
const track = (m) => {
  buffers.add(m.buffer);
  ch.postMessage({ rank, memory: ids.get(m), reserved: m.buffer.byteLength });
};
WebAssembly.Memory = new Proxy(Native, {
  construct(target, args, newTarget) {
    const m = Reflect.construct(target, args, newTarget);
    if (!(args[0] && args[0].shared)) {
      ids.set(m, next++);
      track(m);
    }
    return m;
  },
});
const grow = Native.prototype.grow;
Native.prototype.grow = function (delta) {
  const r = grow.call(this, delta);
  if (ids.has(this)) track(this);
  return r;
};
const TypedArray = Object.getPrototypeOf(Uint8Array.prototype);
const set = TypedArray.set;
TypedArray.set = function (src, offset) {
  if (buffers.has(this.buffer)) ch.postMessage({ rank, written: (src.length ?? 0) * this.BYTES_PER_ELEMENT });
  return set.apply(this, arguments);
};
}
`;

// The page's side: the counts, by rank name. countingInit makes every module Worker import the
// prelude first (after the GPU counters, which CPU ranks never touch).
const LISTEN = `
window.__cpuMemory = {};
new BroadcastChannel('tp-wasm-memory').onmessage = (e) => {
  const r = (window.__cpuMemory[e.data.rank] ??= { reserved: {}, written: 0 });
  if (e.data.written !== undefined) r.written += e.data.written;
  else r.reserved[e.data.memory] = e.data.reserved;
};
`;

const test = withInitScript(LISTEN + countingInit(PRELUDE));

type Counted = Record<string, { reserved: Record<string, number>; written: number }>;

/** Loads `o` and returns what each rank's memory reserved and had copied into it while loading. */
async function countLoad(h: Harness, o: PageGenerateOptions): Promise<Counted> {
  await h.page.evaluate(() => {
    (window as unknown as { __cpuMemory: object }).__cpuMemory = {};
  });
  const r = await h.page.evaluate((x) => window.tp.engine.load(x), o);
  expect('error' in r ? r.error : null).toBeNull();
  // BroadcastChannel messages may trail the load's completion by a task or two.
  await h.page.waitForTimeout(300);
  return h.page.evaluate(() => (window as unknown as { __cpuMemory: Counted }).__cpuMemory);
}

test.describe.configure({ mode: 'serial' });

type Shape = { dim: number; hiddenDim: number; nLayers: number; nHeads: number; nKvHeads: number; vocabSize: number; seqLen: number };

/** Rank `rank`'s share of `n` units split over `tp` ranks, the first ones one larger. */
const share = (n: number, tp: number, rank: number) => Math.floor(n / tp) + (rank < n % tp ? 1 : 0);
const a16 = (bytes: number) => Math.ceil(bytes / 16) * 16;

/** What one rank of an even split holds, by hand from the shape (f32, rows unpadded): its slices, what every rank holds, and its dims. */
function rankShare(s: Shape, tp: number, rank: number) {
  const hs = s.dim / s.nHeads;
  const q = (s.nHeads / tp) * hs;
  const kv = (tp <= s.nKvHeads ? s.nKvHeads / tp : 1) * hs; // a KV head is replicated beyond nKvHeads ranks
  const hid = share(s.hiddenDim, tp, rank);
  const voc = share(s.vocabSize, tp, rank);
  const sliced = s.nLayers * ((q + 2 * kv) * s.dim + s.dim * q + 2 * hid * s.dim + s.dim * hid) + voc * s.dim;
  // the embedding, the norms and the RoPE table (seq, head_size / 2) × (cos, sin)
  const replicated = s.vocabSize * s.dim + (2 * s.nLayers + 1) * s.dim + s.seqLen * hs;
  return { sliced: 4 * sliced, replicated: 4 * replicated, q, kv, hid, voc, hs };
}

/** The whole model's sharded bytes: every layer matrix and the classifier. */
function shardedBytes(s: Shape): number {
  const hs = s.dim / s.nHeads;
  return 4 * (s.nLayers * ((s.nHeads + 2 * s.nKvHeads) * hs * s.dim + s.dim * s.nHeads * hs + 3 * s.hiddenDim * s.dim) + s.vocabSize * s.dim);
}

/**
 * A CPU rank's step state besides the RoPE table: the activations of `maxRows` rows, the logits
 * of `slots` rows and the KV cache of `slots` sequences of `seqLen` positions, each allocation
 * rounded to 16 bytes. GPU ranks' uploads do not count these either (memory.spec.ts).
 */
function workBytes(s: Shape, tp: number, rank: number, sizes: { maxRows: number; slots: number }): number {
  const r = rankShare(s, tp, rank);
  const { maxRows: m, slots } = sizes;
  const logitRows = Math.min(slots, m);
  const rows = [1, 1, 1, s.dim, s.dim, s.dim, r.q + 2 * r.kv, r.q, 2 * r.hid, r.hid].map((w) => a16(m * w * 4));
  const logits = a16(logitRows * s.dim * 4) + a16(logitRows * r.voc * 4) + a16(s.seqLen * 4);
  const kv = s.nLayers * 2 * a16(slots * r.kv * s.seqLen * 4);
  return rows.reduce((x, y) => x + y, 0) + logits + kv;
}

/** 4 sequences of the model's whole context, 64-row steps. */
const SIZES = { maxRows: 64, slots: 4 };
const load = (model: string, tokenizer: string, tp: number): PageGenerateOptions => ({
  model, tokenizer, tp, devices: 'cpu', maxRows: SIZES.maxRows, maxBatch: SIZES.slots, prompt: '', maxTokens: 1, temperature: 0, topP: 0.9, seed: 1, cache: false,
});

for (const tp of [1, 2, 4, 8]) {
  test(`each CPU rank copies its shard, not the model, into its memory at TP=${tp} (stories260K; counted by wrapping WebAssembly)`, async ({ counted }) => {
    const c = await countLoad(counted, load('/models/stories260K.bin', '/models/tok512.bin', tp));
    const ranks = Object.keys(c).filter((k) => k.startsWith('webgpu-tp rank')).sort();
    expect(ranks.length).toBe(tp);
    for (let rank = 0; rank < tp; rank++) {
      const got = c[`webgpu-tp rank ${rank}`]!;
      const r = rankShare(SYNTH_SHAPES.stories260K, tp, rank);
      const want = r.sliced + r.replicated;
      // Weights and the table are exact; the rest would be per-step data, which loading has none of.
      expect(got.written).toBeGreaterThanOrEqual(want);
      expect(got.written - want).toBeLessThan(4096);
      // One memory a rank, and it holds at least the shard and the KV cache.
      expect(Object.keys(got.reserved)).toEqual(['0']);
      expect(got.reserved['0']).toBeGreaterThanOrEqual(want + workBytes(SYNTH_SHAPES.stories260K, tp, rank, SIZES));
    }
    await counted.page.evaluate(() => window.tp.engine.disposeAll());
  });
}

test('each CPU rank\'s memory, less its activations and KV cache, is ≤ 1.05 × (sharded / N) + replicated at TP 1, 2, 3 and 6 (synth stories15M, f32)', async ({ counted }) => {
  test.setTimeout(120_000);
  const shape = SYNTH_SHAPES.stories15M;
  await withSynth15M(counted, 'cpu-mem', async (model, tokenizer) => {
    const sharded = shardedBytes(shape);
    const ratios: string[] = [];
    for (const tp of [1, 2, 3, 6]) {
      const c = await countLoad(counted, load(model, tokenizer, tp));
      for (let rank = 0; rank < tp; rank++) {
        const got = c[`webgpu-tp rank ${rank}`]!;
        const r = rankShare(shape, tp, rank);
        expect(got.written - (r.sliced + r.replicated)).toBeLessThan(4096);
        expect(Object.keys(got.reserved)).toEqual(['0']);
        const held = got.reserved['0']! - workBytes(shape, tp, rank, SIZES);
        expect(held).toBeGreaterThanOrEqual(r.sliced + r.replicated);
        expect(held).toBeLessThanOrEqual(1.05 * (sharded / tp) + r.replicated);
        ratios.push(`TP ${tp} rank ${rank}: ${((held - r.replicated) / (sharded / tp)).toFixed(4)}`);
      }
      await counted.page.evaluate(() => window.tp.engine.disposeAll());
    }
    test.info().annotations.push({ type: '(memory − work − replicated) / (sharded / N)', description: ratios.join('; ') });
  });
});

test('no CPU rank keeps its packed shard, or a matrix laid out for its memory, resident after load (synth stories15M f32, TP 2; the renderer\'s smaps)', async ({ counted }) => {
  test.setTimeout(120_000);
  const shape = SYNTH_SHAPES.stories15M;
  const tp = 2;
  await withSynth15M(counted, 'cpu-shard', async (model, tokenizer) => {
    const shares = Array.from({ length: tp }, (_, rank) => rankShare(shape, tp, rank));
    const slices = shares.map((r) => r.voc * shape.dim * 4);
    const smallestSlice = Math.min(...slices);
    // What earlier engines of this page left (the main thread's heap, say) is not this load's.
    const before = residentMappings(smallestSlice);
    // Without the cache: its IndexedDB writes are the browser's copies, not a rank's.
    const c = await countLoad(counted, load(model, tokenizer, tp));
    const reserved = shares.map((r, rank) => {
      const got = c[`webgpu-tp rank ${rank}`]!;
      expect(got.written).toBeGreaterThanOrEqual(r.sliced + r.replicated);
      return got.reserved['0']!;
    });
    // A rank's memory is a mapping at least its reserved size, its shard resident in it. Beside
    // those, no new mapping may stay resident that is a packed shard (as large as the embedding
    // plus a classifier slice, which every shard holds) or a classifier slice laid out for a
    // rank's memory (its size, up to a page's rounding). The step state lives in the memories.
    // Other mappings are the page's garbage awaiting the main thread's GC.
    const large = newMappings(before, residentMappings(smallestSlice));
    const isMemory = (m: Mapping) => m.size >= Math.min(...reserved) && m.rss >= Math.min(...shares.map((r) => r.sliced + r.replicated));
    const floor = shardFloor(shape, tp);
    const isLeak = (m: Mapping) => m.rss >= floor || slices.some((b) => m.rss >= b && m.rss < b + 4096);
    const leftover = large.filter((m) => !isMemory(m));
    test.info().annotations.push({ type: 'resident besides the memories (MiB)', description: leftover.map((m) => (m.rss / 2 ** 20).toFixed(1)).join(', ') || 'none' });
    expect(large.filter(isMemory).length).toBe(tp);
    expect(leftover.filter(isLeak).map((m) => m.rss)).toEqual([]);
    await counted.page.evaluate(() => window.tp.engine.disposeAll());
  });
});
