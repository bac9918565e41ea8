/**
 * Runs stories260K tensor-parallel on the CPU from the plan's slices alone (each rank builds
 * its shard from file byte ranges, partial sums are added in rank order, logits concatenated)
 * and checks the greedy tokens against run.c's. This is the plan's end-to-end test: it proves
 * the ranges, the KV-head assignment and the row/vocab splits compose into the same model.
 */
import { statSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import greedy from '../../test-support/fixtures/stories260K-greedy.json';
import { modelsDir, readArrayBuffer } from '../../test-support/fixtures/paths.js';
import { parseLlama2cHeader } from '../model/formats/llama2c.js';
import * as R from '../model/reference.js';
import { localKvHead, makePlan, type Plan, type PlanOptions, type RankPlan } from './plan.js';

const path = resolve(modelsDir, 'stories260K.bin');
const file = new Uint8Array(readArrayBuffer(path));
const { config: c } = parseLlama2cHeader(file.subarray(0, 28), statSync(path).size);

function shard(r: RankPlan, name: string): Float32Array {
  const s = r.slices.find((x) => x.name === name)!;
  const out = new Uint8Array(s.byteLength);
  for (const g of s.ranges) out.set(file.subarray(g.fileOffset, g.fileOffset + g.length), g.dstOffset);
  return new Float32Array(out.buffer);
}

function runSharded(plan: Plan, steps: number): number[] {
  const hs = c.headSize;
  const ranks = plan.ranks.map((r) => {
    const nq = r.heads[1] - r.heads[0];
    const nkv = r.kvHeads[1] - r.kvHeads[0];
    const nh = r.hidden[1] - r.hidden[0];
    const layer = (l: number, n: string) => shard(r, `layers.${l}.${n}`);
    return {
      r, nq, nkv, nh,
      emb: shard(r, 'tok_embeddings'), norm: shard(r, 'norm'), cls: shard(r, 'output'),
      layers: Array.from({ length: c.nLayers }, (_, l) => ({
        att: layer(l, 'attention_norm'), ffn: layer(l, 'ffn_norm'),
        wq: layer(l, 'attention.wq'), wk: layer(l, 'attention.wk'), wv: layer(l, 'attention.wv'), wo: layer(l, 'attention.wo'),
        w1: layer(l, 'feed_forward.w1'), w2: layer(l, 'feed_forward.w2'), w3: layer(l, 'feed_forward.w3'),
        kCache: new Float32Array(c.seqLen * nkv * hs), vCache: new Float32Array(c.seqLen * nkv * hs),
      })),
    };
  });
  const rope = R.ropeTables(hs, c.seqLen, c.ropeTheta);
  const allReduce = (parts: Float32Array[]): Float32Array => {
    const sum = new Float32Array(c.dim);
    for (const p of parts) R.add(sum, p, c.dim); // fixed rank order
    return sum;
  };

  const tokens = [1];
  let token = 1;
  for (let pos = 0; pos < steps; pos++) {
    const positions = Int32Array.of(pos);
    const x = new Float32Array(c.dim);
    R.embed(x, ranks[0]!.emb, [token], c.dim);
    for (let l = 0; l < c.nLayers; l++) {
      const attnParts = ranks.map(({ r, nq, nkv, layers }) => {
        const w = layers[l]!;
        const xb = new Float32Array(c.dim);
        R.rmsnorm(xb, x, w.att, 1, c.dim, c.normEps);
        const q = new Float32Array(nq * hs), k = new Float32Array(nkv * hs), v = new Float32Array(nkv * hs);
        R.matmul(q, xb, w.wq, 1, c.dim, nq * hs);
        R.matmul(k, xb, w.wk, 1, c.dim, nkv * hs);
        R.matmul(v, xb, w.wv, 1, c.dim, nkv * hs);
        R.rope(q, 1, nq, hs, positions, rope, c.ropeStyle);
        R.rope(k, 1, nkv, hs, positions, rope, c.ropeStyle);
        w.kCache.set(k, pos * nkv * hs);
        w.vCache.set(v, pos * nkv * hs);
        const att = new Float32Array(nq * hs);
        for (let h = 0; h < nq; h++) {
          const g = localKvHead(plan, r, h) * hs;
          const out = att.subarray(h * hs, (h + 1) * hs);
          R.attention(out, q.subarray(h * hs, (h + 1) * hs), w.kCache.subarray(g), w.vCache.subarray(g), 1, positions, 1, 1, hs, nkv * hs);
        }
        const partial = new Float32Array(c.dim);
        R.matmul(partial, att, w.wo, 1, nq * hs, c.dim);
        return partial;
      });
      R.add(x, allReduce(attnParts), c.dim);
      const ffnParts = ranks.map(({ nh, layers }) => {
        const w = layers[l]!;
        const xb = new Float32Array(c.dim);
        R.rmsnorm(xb, x, w.ffn, 1, c.dim, c.normEps);
        const h1 = new Float32Array(nh), h3 = new Float32Array(nh);
        R.matmul(h1, xb, w.w1, 1, c.dim, nh);
        R.matmul(h3, xb, w.w3, 1, c.dim, nh);
        R.siluMul(h1, h1, h3, nh);
        const partial = new Float32Array(c.dim);
        R.matmul(partial, h1, w.w2, 1, nh, c.dim);
        return partial;
      });
      R.add(x, allReduce(ffnParts), c.dim);
    }
    // final norm, each rank's vocab rows, all-gather in rank order
    const logits = new Float32Array(c.vocabSize);
    for (const { r, norm, cls } of ranks) {
      const xn = new Float32Array(c.dim);
      R.rmsnorm(xn, x, norm, 1, c.dim, c.normEps);
      R.matmul(logits.subarray(r.vocab[0], r.vocab[1]), xn, cls, 1, c.dim, r.vocab[1] - r.vocab[0]);
    }
    const next = R.argmax(logits, c.vocabSize);
    if (next === 1) break;
    tokens.push(next);
    token = next;
  }
  return tokens;
}

describe('tensor-parallel forward from the plan (CPU)', () => {
  const cases: [string, PlanOptions][] = [
    ['TP 1', { tensorParallel: 1 }], ['TP 2', { tensorParallel: 2 }], ['TP 4', { tensorParallel: 4 }],
    ['TP 8 (kv heads replicated)', { tensorParallel: 8 }], ['fractions 3:3:2', { fractions: [3, 3, 2] }],
  ];
  for (const [what, opts] of cases) {
    it(`${what} gives run.c's greedy tokens`, () => {
      expect(runSharded(makePlan(c, opts), greedy.steps)).toEqual(greedy.tokens);
    });
  }
});
