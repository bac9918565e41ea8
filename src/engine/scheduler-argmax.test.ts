import { beforeAll, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { loadLlama2c } from '../model/formats/llama2c.js';
import { Tokenizer } from '../model/tokenizer/tokenizer.js';
import { modelsDir, readArrayBuffer } from '../../test-support/fixtures/paths.js';
import { ReferenceBackend } from '../../test-support/engine/reference-backend.js';
import { assembleEngine, type Engine } from './engine.js';
import type { StepRow } from './scheduler.js';
import type { GenerateChunk, GenerateOptions } from './types.js';
import { BEST_FLOATS, pickBest, sliceBests } from './vocab-argmax.js';

const greedy = JSON.parse(readFileSync(new URL('../../test-support/fixtures/stories260K-greedy.json', import.meta.url), 'utf8')) as { tokens: number[] };

/** The oracle, with a greedy step that picks as two ranks would: each its half's best, then the main thread's pick. */
class TwoRankArgmax extends ReferenceBackend {
  logitSteps = 0;
  argmaxSteps = 0;
  constructor(model: ConstructorParameters<typeof ReferenceBackend>[0], private readonly vocab: number) {
    super(model, { maxSlots: 4 });
  }

  override async step(rows: StepRow[], logitsFor: number[]): Promise<Float32Array[]> {
    if (logitsFor.length) this.logitSteps++;
    return super.step(rows, logitsFor);
  }

  async stepArgmax(rows: StepRow[], logitsFor: number[]): Promise<number[]> {
    this.argmaxSteps++;
    const logits = await super.step(rows, logitsFor);
    const half = this.vocab >> 1;
    const slices = [[0, half], [half, this.vocab]].map(([a, b]) => {
      const n = b! - a!;
      const out = new Float32Array(logits.length * BEST_FLOATS);
      const rowsOf = new Float32Array(logits.length * n);
      logits.forEach((l, j) => rowsOf.set(l.subarray(a, b), j * n));
      sliceBests(rowsOf, logits.length, n, a!, out);
      return out;
    });
    return logitsFor.map((_, j) => pickBest((r) => slices[r]!, 2, j));
  }
}

let tokenizer: Tokenizer;
let model: ReturnType<typeof loadLlama2c>;

function engineOver(b: ReferenceBackend): Engine {
  return assembleEngine(model.config, 1, b, tokenizer, async () => [], async () => {});
}

async function tokens(e: Engine, prompt: string, o: GenerateOptions): Promise<number[]> {
  const out: GenerateChunk[] = [];
  for await (const c of e.generate(prompt, o)) out.push(c);
  return out.filter((c) => !c.done).map((c) => c.token);
}

beforeAll(() => {
  tokenizer = Tokenizer.parse(readFileSync(resolve(modelsDir, 'tok512.bin')), 512);
  model = loadLlama2c(readArrayBuffer(resolve(modelsDir, 'stories260K.bin')));
});

describe('Scheduler: greedy steps take the ranks\' argmax instead of the logits', () => {
  it('a greedy request runs every step through stepArgmax and gives the documented greedy sample', async () => {
    const b = new TwoRankArgmax({ config: model.config, weights: model.weights }, model.config.vocabSize);
    const got = await tokens(engineOver(b), '', { maxTokens: 64, temperature: 0 });
    expect(got).toEqual(greedy.tokens.slice(1, 65));
    expect(b.argmaxSteps).toBe(64);
    expect(b.logitSteps).toBe(0);
  });

  it('anything that reads the logits (sampling, logprobs, penalties, bias) keeps the logits path, with the same tokens as the plain oracle', async () => {
    const cases: GenerateOptions[] = [
      { maxTokens: 24, temperature: 0.8, seed: 3 },
      { maxTokens: 24, temperature: 0, logprobs: true },
      { maxTokens: 24, temperature: 0, repetitionPenalty: 1.3 },
      { maxTokens: 24, temperature: 0, logitBias: { [greedy.tokens[1]!]: -100 } },
    ];
    for (const o of cases) {
      const b = new TwoRankArgmax({ config: model.config, weights: model.weights }, model.config.vocabSize);
      const want = await tokens(engineOver(new ReferenceBackend({ config: model.config, weights: model.weights })), 'Once', o);
      expect(await tokens(engineOver(b), 'Once', o)).toEqual(want);
      expect(b.argmaxSteps).toBe(0);
      expect(b.logitSteps).toBe(24);
    }
  });

  it('a batch mixing a greedy and a sampled request steps with logits; each gets the tokens it gets alone', async () => {
    const b = new TwoRankArgmax({ config: model.config, weights: model.weights }, model.config.vocabSize);
    const e = engineOver(b);
    const greedyAlone = await tokens(e, '', { maxTokens: 16, temperature: 0 });
    const sampledAlone = await tokens(e, 'Once', { maxTokens: 16, temperature: 0.9, seed: 5 });
    b.argmaxSteps = b.logitSteps = 0;
    const [g, s] = await Promise.all([tokens(e, '', { maxTokens: 16, temperature: 0 }), tokens(e, 'Once', { maxTokens: 16, temperature: 0.9, seed: 5 })]);
    expect(g).toEqual(greedyAlone);
    expect(s).toEqual(sampledAlone);
    expect(b.logitSteps).toBeGreaterThan(0);
  });
});
