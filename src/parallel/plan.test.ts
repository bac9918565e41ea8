import { statSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PlanError } from '../errors.js';
import type { ModelConfig } from '../model/config.js';
import { modelsDir, readArrayBuffer } from '../../test-support/fixtures/paths.js';
import { llama2cFileSize, llama2cTensorTable, parseLlama2cHeader } from '../model/formats/llama2c.js';
import { checkRowSplit, fnv1a64, localKvHead, makePlan, type Plan, rankDims, rankWeightBytes, sliceListHash, styleFor } from './plan.js';
import { evenSizes, proportionalSizes } from './split.js';

const path = resolve(modelsDir, 'stories260K.bin');
const file = new Uint8Array(readArrayBuffer(path));
const { config, tensors } = parseLlama2cHeader(file.subarray(0, 28), statSync(path).size);

/** Copies a rank's slice of one tensor out of the file into its dense buffer. */
function gather(plan: Plan, rank: number, name: string): Float32Array {
  const s = plan.ranks[rank]!.slices.find((x) => x.name === name)!;
  const out = new Uint8Array(s.byteLength);
  for (const g of s.ranges) out.set(file.subarray(g.fileOffset, g.fileOffset + g.length), g.dstOffset);
  return new Float32Array(out.buffer);
}

/** Bytewise equality; vitest's deep equality is slow on large typed arrays. */
function same(a: Float32Array, b: Float32Array): boolean {
  return Buffer.from(a.buffer, a.byteOffset, a.byteLength).equals(Buffer.from(b.buffer, b.byteOffset, b.byteLength));
}

function tensor(name: string): Float32Array {
  const t = tensors.find((x) => x.name === name)!;
  return new Float32Array(file.slice(t.offset, t.offset + t.byteLength).buffer);
}

describe('makePlan on stories260K (8 heads, 4 kv heads, hidden 172, vocab 512)', () => {
  it('splits heads, kv heads, hidden units and vocab at TP 1, 2, 4, 8', () => {
    const ranges = (tp: number) => makePlan(config, { tensorParallel: tp }).ranks.map((r) => [r.heads, r.kvHeads, r.hidden, r.vocab]);
    expect(ranges(1)).toEqual([[[0, 8], [0, 4], [0, 172], [0, 512]]]);
    expect(ranges(2)).toEqual([[[0, 4], [0, 2], [0, 86], [0, 256]], [[4, 8], [2, 4], [86, 172], [256, 512]]]);
    expect(ranges(4).map((r) => r[1])).toEqual([[0, 1], [1, 2], [2, 3], [3, 4]]);
    expect(ranges(4).map((r) => r[2])).toEqual([[0, 43], [43, 86], [86, 129], [129, 172]]);
    // TP 8 > 4 kv heads: rank r reads kv head floor(r / 2), replicated on two ranks
    const p8 = makePlan(config, { tensorParallel: 8 });
    expect(p8.ranks.map((r) => r.heads)).toEqual([0, 1, 2, 3, 4, 5, 6, 7].map((h) => [h, h + 1]));
    expect(p8.ranks.map((r) => r.kvHeads)).toEqual([0, 1, 2, 3, 4, 5, 6, 7].map((r) => [r >> 1, (r >> 1) + 1]));
    expect(p8.ranks.map((r) => r.hidden[1] - r.hidden[0])).toEqual([22, 22, 22, 22, 21, 21, 21, 21]);
    expect(p8.ranks.map((r) => localKvHead(p8, r, 0))).toEqual([0, 0, 0, 0, 0, 0, 0, 0]);
    const p2 = makePlan(config, { tensorParallel: 2 });
    expect([0, 1, 2, 3].map((h) => localKvHead(p2, p2.ranks[1]!, h))).toEqual([0, 0, 1, 1]);
  });

  it('names the valid degrees when tensorParallel does not divide the heads', () => {
    for (const bad of [3, 0, -1, 1.5, 2.5, 1000, 16, NaN, Infinity, -Infinity, 2 ** 53]) {
      const e = (() => { try { makePlan(config, { tensorParallel: bad }); } catch (err) { return err; } })();
      expect(e).toBeInstanceOf(PlanError);
      expect((e as PlanError).code).toBe('PLAN');
      expect((e as Error).message).toContain(`tensorParallel must divide the 8 heads: use 1, 2, 4 or 8 (got ${bad})`);
      expect((e as PlanError).remedy).toContain('Pick one of those degrees');
    }
    expect(() => makePlan(config, {})).toThrow(/use 1, 2, 4 or 8 \(got undefined\)/);
  });

  for (const tp of [1, 2, 4, 8]) {
    it(`slices reassemble every tensor at TP ${tp}`, () => {
      const plan = makePlan(config, { tensorParallel: tp });
      for (const t of tensors) {
        const full = tensor(t.name);
        const [rows, cols] = t.shape;
        const parts = plan.ranks.map((_, r) => gather(plan, r, t.name));
        const style = plan.ranks[0]!.slices.find((s) => s.name === t.name)!.style;
        if (style === 'replicated') {
          for (const p of parts) expect(same(p, full)).toBe(true);
        } else if (style === 'row') {
          // interleave: row i of the full tensor is row i of each rank's shard, concatenated
          const back = new Float32Array(rows * cols);
          let col = 0;
          for (const p of parts) {
            const w = p.length / rows;
            for (let i = 0; i < rows; i++) back.set(p.subarray(i * w, (i + 1) * w), i * cols + col);
            col += w;
          }
          expect(same(back, full)).toBe(true);
        } else if (t.name.endsWith('.wk') || t.name.endsWith('.wv')) {
          // each rank holds the rows of its kv heads (possibly the same as a neighbour's)
          plan.ranks.forEach((r, i) => {
            const [a, b] = r.kvHeads;
            expect(same(parts[i]!, full.subarray(a * config.headSize * cols, b * config.headSize * cols))).toBe(true);
          });
        } else {
          const back = new Float32Array(rows * cols);
          let at = 0;
          for (const p of parts) { back.set(p, at); at += p.length; }
          expect(at).toBe(full.length);
          expect(same(back, full)).toBe(true);
        }
      }
    });
  }

  it('uses one range per column slice, one per row for row slices, merged at TP 1', () => {
    const p1 = makePlan(config, { tensorParallel: 1 });
    for (const s of p1.ranks[0]!.slices) expect(s.ranges).toHaveLength(1);
    const p4 = makePlan(config, { tensorParallel: 4 });
    const wo = p4.ranks[1]!.slices.find((s) => s.name === 'layers.2.attention.wo')!;
    expect(wo.shape).toEqual([64, 16]);
    expect(wo.ranges).toHaveLength(64);
    const w1 = p4.ranks[3]!.slices.find((s) => s.name === 'layers.0.feed_forward.w1')!;
    expect(w1.shape).toEqual([43, 64]);
    expect(w1.ranges).toHaveLength(1);
    const out = p4.ranks[2]!.slices.find((s) => s.name === 'output')!;
    expect(out).toMatchObject({ style: 'vocab', shape: [128, 64] });
    expect(out.ranges[0]!.fileOffset).toBe(28 + 256 * 64 * 4); // shared classifier = embedding rows
  });

  it('rankWeightBytes matches an independent count of the uploaded bytes', () => {
    for (const tp of [1, 2, 4, 8]) {
      const plan = makePlan(config, { tensorParallel: tp });
      for (const r of plan.ranks) {
        const counted = r.slices.reduce((n, s) => n + s.ranges.reduce((m, g) => m + g.length, 0), 0);
        expect(rankWeightBytes(config, r)).toBe(counted);
        expect(r.byteLength).toBe(counted);
      }
    }
    // tp 1 uploads the whole file minus the header and the RoPE tables, plus the classifier copy
    expect(makePlan(config, { tensorParallel: 1 }).ranks[0]!.byteLength).toBe(file.length - 28 - 2 * 512 * 4 * 4 + 512 * 64 * 4);
  });

  it('hashes slice lists stably and distinctly', () => {
    const a = makePlan(config, { tensorParallel: 4 });
    const b = makePlan(config, { tensorParallel: 4 });
    expect(a.ranks.map(sliceListHash)).toEqual(b.ranks.map(sliceListHash));
    expect(new Set(a.ranks.map(sliceListHash)).size).toBe(4);
    expect(sliceListHash(a.ranks[0]!)).toMatch(/^[0-9a-f]{16}$/);
    expect(sliceListHash(makePlan(config, { tensorParallel: 2 }).ranks[0]!)).not.toBe(sliceListHash(a.ranks[0]!));
    // FNV-1a 64 test vectors
    expect(fnv1a64('')).toBe('cbf29ce484222325');
    expect(fnv1a64('a')).toBe('af63dc4c8601ec8c');
    expect(fnv1a64('foobar')).toBe('85944171f73967e8');
  });

  it('checks tensor shapes against the config and every name against the spec', () => {
    const wrong: ModelConfig = { ...config, hiddenDim: 170 };
    expect(() => makePlan(wrong, { tensorParallel: 2 }, tensors)).toThrow(/layers\.0\.feed_forward\.w1: a column split expects 170 rows \(hidden_dim 170\), got 172/);
    expect(() => makePlan(config, { tensorParallel: 2 }, [...tensors, { ...tensors[0]!, name: 'rope.freqs' }])).toThrow(/No plan entry matches tensor "rope.freqs"/);
    expect(styleFor('layers.12.attention.wo')).toEqual({ style: 'row', by: 'heads' });
  });
});

describe('uneven splits', () => {
  it('splits as evenly as possible, first ranks get the extra', () => {
    expect(evenSizes(172, 8)).toEqual([22, 22, 22, 22, 21, 21, 21, 21]);
    expect(evenSizes(5, 3)).toEqual([2, 2, 1]);
    expect(proportionalSizes(172, [1, 1, 1, 1, 1, 1, 1, 1])).toEqual(evenSizes(172, 8));
    expect(proportionalSizes(172, [3, 1], 4)).toEqual([128, 44]);
    expect(proportionalSizes(10, [1, 1, 1], 4)).toEqual([4, 4, 2]);
  });

  it('gives heads out whole by fraction; kv heads, MLP blocks and vocab follow', () => {
    const plan = makePlan(config, { fractions: [0.5, 0.25, 0.25] });
    expect(plan.world).toBe(3);
    expect(plan.ranks.map((r) => r.heads)).toEqual([[0, 4], [4, 6], [6, 8]]);
    expect(plan.ranks.map((r) => r.kvHeads)).toEqual([[0, 2], [2, 3], [3, 4]]);
    // 43 blocks of 4: quotas 21.5, 10.75, 10.75 -> 21, 11, 11 by largest remainder
    expect(plan.ranks.map((r) => r.hidden)).toEqual([[0, 84], [84, 128], [128, 172]]);
    expect(plan.ranks.map((r) => r.vocab)).toEqual([[0, 256], [256, 384], [384, 512]]);
    for (const r of plan.ranks) expect(rankWeightBytes(config, r)).toBe(r.byteLength);
    // query heads 3..5 of an odd split read kv heads 1..2
    const odd = makePlan(config, { fractions: [3, 3, 2] });
    expect(odd.ranks.map((r) => r.heads)).toEqual([[0, 3], [3, 6], [6, 8]]);
    expect(odd.ranks.map((r) => r.kvHeads)).toEqual([[0, 2], [1, 3], [3, 4]]);
    expect([0, 1, 2].map((h) => localKvHead(odd, odd.ranks[1]!, h))).toEqual([0, 1, 1]);
    // the backends' kv group (rankDims) reads the kv heads localKvHead names
    for (const r of odd.ranks) {
      const d = rankDims(config, r);
      expect(Array.from({ length: d.nHeads }, (_, h) => Math.floor((h + d.headOffset) / d.kvMul))).toEqual(Array.from({ length: d.nHeads }, (_, h) => localKvHead(odd, r, h)));
    }
    expect(rankDims(config, odd.ranks[1]!)).toMatchObject({ kvMul: 2, headOffset: 1 });
  });

  it('checkRowSplit: the all-reduced matmuls must be split by rows', () => {
    const r = makePlan(config, { tensorParallel: 2 }).ranks[0]!;
    expect(() => checkRowSplit(r, 'layers.0.attention.wo')).not.toThrow();
    expect(() => checkRowSplit(r, 'layers.0.attention.wq')).toThrow(PlanError);
    expect(() => checkRowSplit(r, 'layers.0.attention.wq')).toThrow(/layers\.0\.attention\.wq: the forward all-reduces its output, so it must be split by rows, got column/);
    expect(() => checkRowSplit(r, 'layers.9.attention.wo')).toThrow(/got no slice/);
  });

  it('rejects fractions that starve a rank or do not match tensorParallel', () => {
    expect(() => makePlan(config, { fractions: [1, 0.01] })).toThrow(/rank 1's fraction 0.01 gives it none of the 8 query heads/);
    expect(() => makePlan(config, { fractions: [1, 1], tensorParallel: 4 })).toThrow(/does not match the 2 fractions/);
    expect(() => makePlan(config, { fractions: [] })).toThrow(PlanError);
    expect(() => makePlan(config, { fractions: [1, -1] })).toThrow(PlanError);
    expect(() => makePlan(config, { fractions: new Array(9).fill(1) })).toThrow(/at most 8/);
  });
});

describe('plan for a real-shape header', () => {
  it('lays out stories110M without the file', () => {
    const c: ModelConfig = { ...config, dim: 768, hiddenDim: 2048, nLayers: 12, nHeads: 12, nKvHeads: 12, vocabSize: 32000, seqLen: 1024, headSize: 64 };
    // 109,595,392 floats (with the RoPE tables) + the header
    expect(llama2cFileSize(c)).toBe(109_595_392 * 4 + 28);
    const plan = makePlan(c, { tensorParallel: 4 }, llama2cTensorTable(c));
    expect(plan.ranks.map((r) => r.hidden[1] - r.hidden[0])).toEqual([512, 512, 512, 512]);
    for (const r of plan.ranks) expect(rankWeightBytes(c, r)).toBe(r.byteLength);
  });
});
