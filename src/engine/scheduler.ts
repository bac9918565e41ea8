/**
 * The scheduler: owns requests and drives steps. It runs on the main thread and never blocks:
 * each step is posted to the backend (the shard workers, or the in-thread oracle) and awaited.
 * Requests start in arrival order; each stream carries only its own tokens.
 */
import { AbortedError, InvalidArgumentError, DisposedError } from '../errors.js';
import type { GenerateChunk, GenerateOptions, GenerationStats, FinishReason } from './types.js';

/** One row of a step: `token` at `position` of KV-cache sequence `slot`. */
export interface StepRow {
  token: number;
  position: number;
  slot: number;
}

/** What runs the model: the worker group, or an in-thread implementation for tests. */
export interface StepBackend {
  /** Rows one step can carry (prefill is chunked to this). */
  readonly maxRows: number;
  /** Positions each KV-cache slot holds. */
  readonly contextLength: number;
  /** Runs one step; returns the logits of the rows listed in `logitsFor`, in that order. */
  step(rows: StepRow[], logitsFor: number[]): Promise<Float32Array[]>;
}

export interface TokenizerLike {
  encode(text: string, bos: boolean, eos: boolean): number[];
  /** Bytes of `token`'s piece after `prev` (run.c's decode, incl. the space strip after BOS). */
  decodeBytes(prev: number, token: number): Uint8Array;
}

export interface SamplerLike {
  sample(logits: Float32Array): number;
}

export type SamplerFactory = (opts: { temperature: number; topP: number; seed: number }) => SamplerLike;

export const BOS = 1;
export const EOS = 2;

export class Scheduler {
  private queue: Promise<void> = Promise.resolve();
  private disposed = false;
  /** Main-thread time per step outside the backend (ms), for stats. */
  private schedulerMsSum = 0;
  private steps = 0;

  constructor(
    private readonly backend: StepBackend,
    private readonly tokenizer: TokenizerLike,
    private readonly makeSampler: SamplerFactory,
  ) {}

  get schedulerMs(): number {
    return this.steps ? this.schedulerMsSum / this.steps : 0;
  }

  dispose(): void {
    this.disposed = true;
  }

  resetStats(): void {
    this.schedulerMsSum = 0;
    this.steps = 0;
  }

  /** Streams the generation of `prompt`; break out of the loop or abort to stop it promptly. */
  async *generate(prompt: string, opts: GenerateOptions = {}): AsyncGenerator<GenerateChunk, void, undefined> {
    const promptTokens = this.tokenizer.encode(prompt, true, false);
    yield* this.generateTokens(promptTokens, opts);
  }

  async *generateTokens(promptTokens: number[], opts: GenerateOptions = {}): AsyncGenerator<GenerateChunk, void, undefined> {
    const ctx = this.backend.contextLength;
    if (promptTokens.length === 0) throw new InvalidArgumentError('the prompt has no tokens');
    if (promptTokens.length >= ctx) {
      throw new InvalidArgumentError(
        `the prompt is ${promptTokens.length} tokens but the context holds ${ctx}`,
        `Shorten the prompt to at most ${ctx - 1} tokens or raise maxContext`,
      );
    }
    const maxTokens = opts.maxTokens ?? 256;
    if (!Number.isInteger(maxTokens) || maxTokens < 0) throw new InvalidArgumentError(`maxTokens must be a whole number ≥ 0, got ${maxTokens}`);
    const temperature = opts.temperature ?? 1.0;
    if (!(temperature >= 0)) throw new InvalidArgumentError(`temperature must be ≥ 0, got ${temperature}`);
    const sampler = this.makeSampler({ temperature, topP: opts.topP ?? 0.9, seed: opts.seed ?? Date.now() });
    const signal = opts.signal;

    // Wait for our turn: requests run one at a time, in arrival order.
    let release!: () => void;
    const turn = this.queue;
    this.queue = new Promise<void>((r) => (release = r));
    try {
      await turn;
      yield* this.run(promptTokens, Math.min(maxTokens, ctx - promptTokens.length), sampler, opts, signal);
    } finally {
      release();
    }
  }

  private async *run(
    promptTokens: number[], budget: number, sampler: SamplerLike, opts: GenerateOptions, signal?: AbortSignal,
  ): AsyncGenerator<GenerateChunk, void, undefined> {
    const check = () => {
      if (this.disposed) throw new DisposedError();
      if (signal?.aborted) throw new AbortedError('generation aborted');
    };
    check();
    const decoder = new TextDecoder('utf-8');
    const stops = opts.stop?.filter((s) => s.length > 0) ?? [];
    let pending = ''; // text held back while it could still be the start of a stop string
    const t0 = performance.now();

    // Prefill: the prompt in chunks of maxRows, one batched pass each; logits of the last row.
    let logits: Float32Array | undefined;
    for (let start = 0; start < promptTokens.length; start += this.backend.maxRows) {
      const rows = promptTokens.slice(start, start + this.backend.maxRows).map((token, i) => ({ token, position: start + i, slot: 0 }));
      const last = start + rows.length >= promptTokens.length;
      const out = await this.timedStep(rows, last ? [rows.length - 1] : []);
      logits = out[0];
      check();
    }
    const tPrefill = performance.now();

    const generated: number[] = [];
    let token = promptTokens[promptTokens.length - 1];
    let pos = promptTokens.length - 1;
    let finish: FinishReason = 'length';
    while (generated.length < budget) {
      const next = sampler.sample(logits!);
      if (!opts.ignoreEos && (next === BOS || next === EOS)) {
        finish = 'stop';
        break;
      }
      generated.push(next);
      let text = decoder.decode(this.tokenizer.decodeBytes(token, next), { stream: true });
      token = next;
      pos++;
      if (stops.length) {
        pending += text;
        const hit = firstStop(pending, stops);
        if (hit >= 0) {
          const out = pending.slice(0, hit);
          pending = '';
          if (out) yield { token: next, text: out, done: false };
          finish = 'stop';
          break;
        }
        const keep = stopPrefixLength(pending, stops);
        text = pending.slice(0, pending.length - keep);
        pending = pending.slice(pending.length - keep);
      }
      yield { token: next, text, done: false };
      if (generated.length >= budget) break;
      check();
      logits = (await this.timedStep([{ token, position: pos, slot: 0 }], [0]))[0];
      check();
    }
    const tEnd = performance.now();
    const tail = pending + decoder.decode();
    const decoded = Math.max(generated.length - 1, 0);
    const stats: GenerationStats = {
      promptTokens: promptTokens.length,
      generatedTokens: generated.length,
      prefillMs: tPrefill - t0,
      prefillTokensPerS: promptTokens.length / Math.max((tPrefill - t0) / 1000, 1e-9),
      decodeMs: tEnd - tPrefill,
      decodeTokensPerS: decoded / Math.max((tEnd - tPrefill) / 1000, 1e-9),
      finishReason: finish,
    };
    yield { token: -1, text: tail, done: true, stats };
  }

  private async timedStep(rows: StepRow[], logitsFor: number[]): Promise<Float32Array[]> {
    const t = performance.now();
    const out = await this.backend.step(rows, logitsFor);
    this.steps++;
    this.schedulerMsSum += Math.max(0, performance.now() - t - (this.backendMs(out) ?? 0));
    return out;
  }

  /** Backends may report the time they spent in a step; the rest is scheduler overhead. */
  private backendMs(_out: Float32Array[]): number | undefined {
    return (this.backend as Partial<{ lastStepMs: number }>).lastStepMs;
  }
}

function firstStop(text: string, stops: string[]): number {
  let best = -1;
  for (const s of stops) {
    const i = text.indexOf(s);
    if (i >= 0 && (best < 0 || i < best)) best = i;
  }
  return best;
}

/** Length of the longest suffix of `text` that is a proper prefix of some stop string. */
function stopPrefixLength(text: string, stops: string[]): number {
  let keep = 0;
  for (const s of stops) {
    for (let n = Math.min(s.length - 1, text.length); n > keep; n--) {
      if (text.endsWith(s.slice(0, n))) {
        keep = n;
        break;
      }
    }
  }
  return keep;
}
