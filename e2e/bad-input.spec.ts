/**
 * Bad input refused by `createEngine` in the browser: checkpoints that are random bytes, all
 * zeros, cut short or have absurd headers; a tokenizer for another vocabulary; TP degrees that
 * do not divide the heads. Each must reject with its typed error's `code` before any worker
 * starts. Workers are counted from outside the engine: an init script wraps the page's
 * `Worker` constructor before any app code runs.
 */
import { test as base, expect, scriptedHarness } from './fixtures.js';
import type { Harness } from '../src/cli/browser.js';
import type { SerializedError } from '../src/errors.js';

const INIT = `
if (typeof window !== 'undefined') {
  const Native = window.Worker;
  window.__workers = 0;
  window.Worker = class extends Native {
    constructor(url, opts) {
      window.__workers++;
      super(url, opts);
    }
  };
}
`;

const test = base.extend<{ counted: Harness }>({ counted: scriptedHarness(INIT) });

type ModelKind = 'good' | 'random' | 'zeros' | 'absurd-dim' | 'negative-layers' | 'heads-not-dividing' | 'truncated' | 'padded';
type TokenizerKind = 'good' | 'other-vocab' | 'truncated';

interface Outcome {
  result: { tp: number } | { error: SerializedError };
  workers: number;
  ms: number;
}

/** Builds the sources inside the page (Blobs and buffers, as an app would) and calls createEngine. */
async function tryCreate(h: Harness, model: ModelKind, tokenizer: TokenizerKind, tensorParallel = 1, extra: Record<string, unknown> = {}, aborted = false): Promise<Outcome> {
  return h.page.evaluate(async ({ model, tokenizer, tensorParallel, extra, aborted }) => {
    const w = window as unknown as { __workers: number };
    const header = (v: number[], total: number) => {
      const b = new Uint8Array(total);
      const dv = new DataView(b.buffer);
      v.forEach((x, i) => dv.setInt32(i * 4, x, true));
      return b;
    };
    const real = async (url: string) => new Uint8Array(await (await fetch(url)).arrayBuffer());
    const models: Record<string, () => Promise<Blob | ArrayBuffer | string>> = {
      good: async () => '/models/stories260K.bin',
      random: async () => {
        const b = new Uint8Array(1 << 16);
        crypto.getRandomValues(b);
        return new Blob([b]);
      },
      zeros: async () => new ArrayBuffer(1056540),
      'absurd-dim': async () => new Blob([header([2 ** 30, 172, 5, 8, 4, 512, 512], 4096)]),
      'negative-layers': async () => new Blob([header([64, 172, -5, 8, 4, 512, 512], 4096)]),
      'heads-not-dividing': async () => new Blob([header([64, 172, 5, 6, 6, 512, 512], 4096)]),
      truncated: async () => new Blob([(await real('/models/stories260K.bin')).subarray(0, 500_000)]),
      padded: async () => new Blob([await real('/models/stories260K.bin'), new Uint8Array(4)]),
    };
    const tokenizers: Record<string, () => Promise<Blob | string>> = {
      good: async () => '/models/tok512.bin',
      // A vocab-512 tokenizer with one more entry appended: what a tokenizer for a bigger vocab looks like.
      'other-vocab': async () => new Blob([await real('/models/tok512.bin'), new Uint8Array([0, 0, 0, 0, 1, 0, 0, 0, 0x41])]),
      truncated: async () => new Blob([(await real('/models/tok512.bin')).subarray(0, 3000)]),
    };
    const m = await models[model]!();
    const t = await tokenizers[tokenizer]!();
    const before = w.__workers;
    const t0 = performance.now();
    const signal = aborted ? AbortSignal.abort() : undefined;
    const result = await window.tp.engine.tryCreate({ model: m, tokenizer: t, tensorParallel, cache: false, signal, ...extra });
    return { result, workers: w.__workers - before, ms: performance.now() - t0 };
  }, { model, tokenizer, tensorParallel, extra, aborted });
}

function expectRefused(o: Outcome, code: string, message: RegExp): void {
  expect('error' in o.result, JSON.stringify(o.result)).toBe(true);
  if (!('error' in o.result)) return;
  expect(o.result.error.code).toBe(code);
  expect(o.result.error.message).toMatch(message);
  // Every refusal names its remedy, not just a type.
  expect(o.result.error.extra?.remedy).toMatch(/\S/);
  expect(o.workers).toBe(0);
}

// CPU ranks: their workers are counted as GPU ranks' are, and load in a fraction of the time.
test('the worker count sees the workers a good load starts', async ({ counted }) => {
  const o = await tryCreate(counted, 'good', 'good', 2, { devices: 'cpu' });
  expect(o.result).toEqual({ tp: 2 });
  expect(o.workers).toBeGreaterThanOrEqual(2);
});

const badModels: [ModelKind, RegExp][] = [
  ['random', /llama2.c/],
  ['zeros', /expected dim > 0, got 0/],
  ['absurd-dim', /dim 1073741824 is above the limit/],
  ['negative-layers', /expected n_layers > 0, got -5/],
  ['heads-not-dividing', /n_heads must divide dim, got dim 64 and n_heads 6/],
  ['truncated', /implies 1056540 bytes, the file has 500000/],
  ['padded', /implies 1056540 bytes, the file has 1056544/],
];
for (const [kind, message] of badModels) {
  test(`a bad checkpoint (${kind}) rejects with MODEL_FORMAT and starts no worker`, async ({ counted }) => {
    const o = await tryCreate(counted, kind, 'good');
    expectRefused(o, 'MODEL_FORMAT', message);
    test.info().annotations.push({ type: 'refused in', description: `${o.ms.toFixed(1)} ms` });
  });
}

test('a tokenizer for another vocab or cut short rejects with TOKENIZER_FORMAT and starts no worker', async ({ counted }) => {
  expectRefused(await tryCreate(counted, 'good', 'other-vocab'), 'TOKENIZER_FORMAT', /vocab sizes do not match: the tokenizer has 513 entries but the model's vocab is 512/);
  expectRefused(await tryCreate(counted, 'good', 'truncated'), 'TOKENIZER_FORMAT', /entries|file ends/);
});

for (const tp of [0, -1, 3, 1000, 1.5]) {
  test(`tensorParallel ${tp} rejects with PLAN, lists the valid degrees and starts no worker`, async ({ counted }) => {
    expectRefused(await tryCreate(counted, 'good', 'good', tp), 'PLAN', new RegExp(`use 1, 2, 4 or 8 \\(got ${tp}\\)`));
  });
}

const badOptions: [Record<string, unknown>, RegExp][] = [
  [{ maxRows: 0 }, /maxRows must be a whole number ≥ 1, got 0/],
  [{ maxRows: 2.5 }, /maxRows must be a whole number ≥ 1, got 2.5/],
  [{ timeoutMs: NaN }, /timeoutMs must be a finite number of milliseconds > 0, got NaN/],
  [{ timeoutMs: -5 }, /timeoutMs must be a finite number of milliseconds > 0, got -5/],
  [{ spin: -1 }, /spin must be a finite number ≥ 0, got -1/],
  [{ maxBatch: 0 }, /maxBatch must be a whole number ≥ 1, got 0/],
];
test('engine options out of range (maxRows, timeoutMs, spin, maxBatch) reject with INVALID_ARGUMENT and a remedy, and start no worker', async ({ counted }) => {
  for (const [extra, message] of badOptions) expectRefused(await tryCreate(counted, 'good', 'good', 1, extra), 'INVALID_ARGUMENT', message);
});

test('an already-aborted signal rejects createEngine with ABORTED before any worker starts', async ({ counted }) => {
  const o = await tryCreate(counted, 'good', 'good', 2, {}, true);
  expect('error' in o.result && o.result.error.code).toBe('ABORTED');
  expect(o.workers).toBe(0);
});
