/**
 * GGUF K-quants on CPU ranks for the other architectures (issue 25 acceptance): a Qwen2-shaped
 * file (q/k/v biases), a Qwen3-shaped one (per-head q/k RMSNorm) and a Llama one with a
 * `rope_freqs` tensor, each written as the Q4_K_M-style mix (kquant-gguf.ts `q4kmMix`), must give
 * the f32 oracle's greedy tokens on ggml's dequantised weights at TP 1 and at TP 2. Dim 256 with
 * 8 heads of 64 (q is 512 wide, as Qwen3's head_dim makes it) and hidden 512: an even two-rank
 * split gives each rank 256 of wo's and w2's inputs, whole super-blocks. Each file also runs
 * int8 activations at TP 1 against the int8 oracle (reference-int8.ts's q8_m sums), on the
 * tokens that ulp-level differences do not move (int8-decided.ts).
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { test, expect } from './fixtures.js';
import { runGenerate } from '../src/cli/generate.js';
import type { Harness } from '../src/cli/browser.js';
import type { PageGenerateOptions } from '../src/cli/page/types.js';
import type { ModelConfig } from '../src/model/config.js';
import { loadGgufDequantized } from '../src/model/formats/gguf.js';
import { Tokenizer } from '../src/model/tokenizer/tokenizer.js';
import type { ReferenceModel } from '../src/model/reference.js';
import { loadGgufInt8 } from '../src/model/reference-int8.js';
import { modelsDir } from '../test-support/fixtures/paths.js';
import { greedyDecided } from '../test-support/model/greedy-decided.js';
import { int8Decided } from '../test-support/model/int8-decided.js';
import { KQUANT_CONFIG, encodeTypedGguf, kquantModel, q4kmMix } from '../test-support/model/kquant-gguf.js';

const CPU = 'CPU (WebAssembly SIMD)';
const STEPS = 24;
const tok = Tokenizer.parse(readFileSync(resolve(modelsDir, 'tok512.bin')), 512);
const dir = mkdtempSync(join(tmpdir(), 'webgpu-tp-cpu-kquant-arch-'));
test.afterAll(() => rmSync(dir, { recursive: true, force: true }));

const SHAPE: ModelConfig = { ...KQUANT_CONFIG, dim: 256 };
const QWEN = { ropeStyle: 'rotate_half', ropeTheta: 1e6, normEps: 1e-6 } as const;
/** Llama 3-like divisors for head size 64: frequencies 0–7 kept, 8–11 ramped, 12–31 slowed 8×. */
const FACTORS = Array.from({ length: 32 }, (_, i) => (i < 8 ? 1 : i < 12 ? 1 + (i - 7) * 1.75 : 8));

interface Case {
  name: string;
  config: ModelConfig;
  seed: number;
  /** The same model without the architecture's feature: its tokens must differ, or the case proves nothing. */
  without: (m: ReferenceModel) => ReferenceModel;
}

// These seeds (kquantModel's scale 4) give each file 24 tokens whose top-two margins all exceed
// 1e-3, and at least 22 int8 tokens that no ulp moves.
const CASES: Case[] = [
  {
    name: 'qwen2', config: { ...SHAPE, ...QWEN, qkvBias: true }, seed: 1,
    without: (m) => ({ ...m, weights: { ...m.weights, bq: undefined, bk: undefined, bv: undefined } }),
  },
  {
    name: 'qwen3', config: { ...SHAPE, ...QWEN, qkNorm: true }, seed: 2,
    without: (m) => ({ ...m, weights: { ...m.weights, qNorm: undefined, kNorm: undefined } }),
  },
  {
    name: 'llama-rope-freqs', config: { ...SHAPE, ropeScaling: { type: 'factors', factors: FACTORS } }, seed: 5,
    without: (m) => ({ ...m, config: { ...m.config, ropeScaling: undefined } }),
  },
];

const base: Omit<PageGenerateOptions, 'model' | 'tp'> = {
  devices: 'cpu', prompt: '', maxTokens: STEPS, temperature: 0, topP: 0.9, seed: 1, cache: false, ignoreEos: true,
};

function serve(h: Harness, name: string, bytes: Uint8Array): string {
  const path = join(dir, `${name}.gguf`);
  writeFileSync(path, bytes);
  return h.server.mountFile(`/files/cpu-kquant-arch/${name}.gguf`, path);
}

test.describe.configure({ mode: 'serial' });

for (const c of CASES) {
  test(`a ${c.name}-shaped Q4_K_M-style mix on CPU ranks: the oracle's greedy tokens at TP 1 and 2, and the int8 oracle's at TP 1`, async ({ harness }) => {
    test.setTimeout(60_000);
    const bytes = encodeTypedGguf(kquantModel(c.config, c.seed), q4kmMix, tok);
    const { model } = await loadGgufDequantized(bytes);
    const features = (x: ModelConfig) => [!!x.qkvBias, !!x.qkNorm, x.ropeStyle, x.ropeScaling?.type, x.headSize];
    expect(features(model.config), 'the file\'s architecture as read').toEqual(features(c.config));
    const { tokens: want, decided } = greedyDecided(model, [1], STEPS);
    expect(decided, 'the oracle\'s margins').toBe(STEPS);
    expect(greedyDecided(c.without(model), [1], STEPS).tokens, `${c.name} without its feature`).not.toEqual(want);
    const url = serve(harness, c.name, bytes);
    for (const tp of [1, 2]) {
      const r = await runGenerate(harness, { ...base, model: url, tp });
      expect(r.tokens, `TP ${tp} weight-only`).toEqual(want);
      expect(r.stats.ranks.map((x) => [x.adapter, x.precision.weights])).toEqual(Array(tp).fill([CPU, 'q8_m']));
    }
    const want8 = int8Decided(await loadGgufInt8(bytes), [1], STEPS);
    expect(want8.decided, 'the int8 oracle\'s decided tokens').toBeGreaterThanOrEqual(16);
    expect(want8.tokens.slice(0, want8.decided), 'int8 activations change the tokens').not.toEqual(want.slice(0, want8.decided));
    const r8 = await runGenerate(harness, { ...base, model: url, tp: 1, int8Activations: true });
    expect(r8.tokens.slice(0, want8.decided), 'TP 1 int8').toEqual(want8.tokens.slice(0, want8.decided));
  });
}
