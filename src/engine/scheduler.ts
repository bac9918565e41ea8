/**
 * The scheduler: owns requests and drives steps. It runs on the main thread and never blocks:
 * each step is posted to the backend (the shard workers, or the in-thread oracle) and awaited.
 * Requests start in arrival order and are batched (see `Scheduler`); each stream carries only
 * its own tokens.
 */
import { AbortedError, InvalidArgumentError, DisposedError } from '../errors.js';
import { BOS, EOS } from '../model/tokenizer/tokenizer.js';
import type { ChunkLogprobs, GenerateChunk, GenerateOptions, GenerationStats, FinishReason } from './types.js';
import type { SamplingParams } from './sampling.js';
import { resolveSampling, resolveTopLogprobs } from './sampling-options.js';
import { logprobsAt } from './sampling-logprobs.js';
import { PrefixCache, type PrefixCacheStats } from './prefix-cache.js';
import { StructuredOutput, resolveResponseFormat, type TokenGrammar } from './structured.js';
import { argmax } from '../model/reference.js';

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
  /** Sequences that can be in flight at once (KV-cache slots; default 1). */
  readonly maxSlots?: number;
  /** Positions each KV-cache slot holds. */
  readonly contextLength: number;
  /** Runs one step; returns the logits of the rows listed in `logitsFor`, in that order, valid until the next step (a backend may reuse them). */
  step(rows: StepRow[], logitsFor: number[]): Promise<Float32Array[]>;
  /**
   * Runs one step and returns the argmax of each row's logits (ties to the lower id, as
   * `argmax`), computed where the logits are; the scheduler calls it when every row's sampler
   * would only take that argmax.
   */
  stepArgmax?(rows: StepRow[], logitsFor: number[]): Promise<number[]>;
}

export interface TokenizerLike {
  /** Token ids are in [0, vocabSize): prompt ids outside it are refused (when given). */
  readonly vocabSize?: number;
  encode(text: string, bos: boolean, eos: boolean): number[];
  /** Bytes of `token`'s piece after `prev` (run.c's decode, incl. the space strip after BOS). */
  decodeBytes(prev: number, token: number): Uint8Array;
  /** Tokens that end a generation (default llama2.c's BOS and EOS). */
  readonly stopTokens?: readonly number[];
}

export interface SamplerLike {
  /** Picks the next token; it may overwrite `logits`. */
  sample(logits: Float32Array): number;
  /** True when `sample` is the logits' argmax, whatever came before (greedy, no penalties or bias). */
  readonly greedy?: boolean;
  /** Tells it a token of the sequence (each prompt token, then each sampled one), for the penalties. */
  accept?(token: number): void;
}

export type SamplerFactory = (params: SamplingParams) => SamplerLike;


/** One request in flight: its prompt, where it is, and the stream its chunks go to. */
interface Sequence {
  prompt: number[];
  /** Prompt tokens already fed (or whose KV its slot already held). */
  prefilled: number;
  /** Whether it may take a slot holding a prefix of its prompt (`cachePrompt`). */
  cachePrompt: boolean;
  /** Prompt tokens whose KV it reused. */
  cached: number;
  /** New tokens it may still produce at most (maxTokens capped by the context). */
  budget: number;
  generated: number[];
  /** The token to feed next (the last sampled one) and its position. */
  token: number;
  pos: number;
  slot: number;
  sampler: SamplerLike;
  decoder: TextDecoder;
  stops: string[];
  /** Text held back while it could still be the start of a stop string. */
  pending: string;
  ignoreEos: boolean;
  /** Top tokens each chunk's logprobs list; undefined: no logprobs. */
  topLogprobs: number | undefined;
  /** The `responseFormat`'s matcher; undefined: free text. */
  grammar: TokenGrammar | undefined;
  out: ChunkQueue;
  /** Set by the consumer (break) or an abort: the sequence leaves at the next step. */
  cancelled: boolean;
  t0: number;
  tFirst: number;
}

/**
 * Continuous batching: every step carries one row per decoding sequence plus prompt rows of
 * the sequences still prefilling (up to `maxRows` in all), each row in its own KV-cache slot.
 * Requests join at the next step in arrival order while a slot is free, and leave when done.
 */
export class Scheduler {
  private readonly waiting: Sequence[] = [];
  private readonly active: Sequence[] = [];
  /** The KV slots: which are free, and which tokens each holds. */
  private readonly slots: PrefixCache;
  private running = false;
  private disposed = false;
  /** Main-thread time per step outside the backend (ms), for stats. */
  private schedulerMsSum = 0;
  private steps = 0;
  private readonly stopTokens: readonly number[];
  private structured: StructuredOutput | undefined;

  constructor(
    private readonly backend: StepBackend,
    private readonly tokenizer: TokenizerLike,
    private readonly makeSampler: SamplerFactory,
  ) {
    this.slots = new PrefixCache(backend.maxSlots ?? 1);
    this.stopTokens = tokenizer.stopTokens ?? [BOS, EOS];
  }

  get schedulerMs(): number {
    return this.steps ? this.schedulerMsSum / this.steps : 0;
  }

  dispose(): void {
    this.disposed = true;
    for (const s of [...this.waiting, ...this.active]) {
      s.out.fail(new DisposedError());
      s.grammar?.dispose();
    }
    this.structured?.dispose();
  }

  /** Prefix KV reuse since the last reset. */
  get prefixCache(): PrefixCacheStats {
    return { ...this.slots.stats };
  }

  resetStats(): void {
    this.slots.resetStats();
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
    if (promptTokens.length === 0) {
      throw new InvalidArgumentError('the prompt has no tokens', 'Pass at least the BOS token (generate("") does that for you)');
    }
    // An error rather than silently dropping the start of the prompt: the caller decides what to cut.
    if (promptTokens.length >= ctx) {
      throw new InvalidArgumentError(
        `the prompt is ${promptTokens.length} tokens but maxContext is ${ctx} (the prompt and at least one new token must fit)`,
        `Shorten the prompt to at most ${ctx - 1} tokens, or create the engine with a larger maxContext`,
      );
    }
    const vocab = this.tokenizer.vocabSize;
    if (vocab !== undefined) {
      // An id outside the vocabulary would index past the embedding table on the GPU.
      const bad = promptTokens.findIndex((t) => !Number.isInteger(t) || t < 0 || t >= vocab);
      if (bad >= 0) {
        throw new InvalidArgumentError(
          `prompt token ${promptTokens[bad]} at index ${bad} is outside the vocabulary [0, ${vocab})`,
          'Pass ids from engine.encode() or from this model\'s tokenizer',
        );
      }
    }
    const maxTokens = opts.maxTokens ?? 256;
    if (!Number.isInteger(maxTokens) || maxTokens < 0) throw new InvalidArgumentError(`maxTokens must be a whole number ≥ 0, got ${maxTokens}`, 'Pass how many new tokens to generate at most (default 256)');
    const sampling = resolveSampling(opts, vocab);
    const topLogprobs = resolveTopLogprobs(opts);
    const format = resolveResponseFormat(opts.responseFormat);
    if (this.disposed) throw new DisposedError();
    if (opts.signal?.aborted) throw new AbortedError('generation aborted');
    const grammar = format && (await this.grammars().grammar(format));
    // The first schema compiles for ~100 ms: the engine may be disposed or the request aborted meanwhile.
    if (this.disposed || opts.signal?.aborted) {
      grammar?.dispose();
      throw this.disposed ? new DisposedError() : new AbortedError('generation aborted');
    }

    const seq: Sequence = {
      prompt: promptTokens,
      prefilled: 0,
      cachePrompt: opts.cachePrompt ?? true,
      cached: 0,
      budget: Math.min(maxTokens, ctx - promptTokens.length),
      generated: [],
      token: promptTokens[promptTokens.length - 1]!,
      pos: promptTokens.length - 1,
      slot: -1,
      sampler: this.makeSampler(sampling),
      decoder: new TextDecoder('utf-8'),
      stops: opts.stop?.filter((x) => x.length > 0) ?? [],
      pending: '',
      ignoreEos: opts.ignoreEos ?? false,
      topLogprobs,
      grammar,
      out: new ChunkQueue(),
      cancelled: false,
      t0: 0,
      tFirst: 0,
    };
    if (seq.sampler.accept) for (const t of promptTokens) seq.sampler.accept(t);
    const onAbort = () => {
      seq.cancelled = true;
      seq.out.fail(new AbortedError('generation aborted'));
    };
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    this.waiting.push(seq);
    this.pump();
    try {
      for (;;) {
        const chunk = await seq.out.next();
        yield chunk;
        if (chunk.done) return;
      }
    } finally {
      // Breaking out of the loop (or an error) cancels the sequence; it leaves at the next step.
      seq.cancelled = true;
      opts.signal?.removeEventListener('abort', onAbort);
    }
  }

  /** The grammar compiler over this tokenizer's vocabulary, made on the first structured request. */
  private grammars(): StructuredOutput {
    const t = this.tokenizer;
    const vocabSize = t.vocabSize;
    if (vocabSize === undefined) throw new InvalidArgumentError('responseFormat needs the vocabulary size', 'Give the tokenizer a vocabSize');
    // Mid-sequence bytes (prev -1 is no BOS): only a first token after BOS loses a leading space,
    // and the grammars here (no whitespace outside strings) never allow one there.
    return (this.structured ??= new StructuredOutput({ vocabSize, stopTokens: this.stopTokens, bytesOf: (token) => bytesOrNone(() => t.decodeBytes(-1, token)) }));
  }

  private pump(): void {
    if (this.running) return;
    this.running = true;
    void this.loop().finally(() => {
      this.running = false;
      if (this.waiting.length && !this.disposed) this.pump();
    });
  }

  private async loop(): Promise<void> {
    while (!this.disposed) {
      this.admit();
      const live = this.active.filter((s) => !s.cancelled);
      for (const s of [...this.active]) if (s.cancelled) this.release(s);
      if (live.length === 0) {
        if (this.waiting.length === 0) return;
        continue;
      }
      const tBuild = performance.now();
      const rows: StepRow[] = [];
      const logitsFor: number[] = [];
      const owners: Sequence[] = [];
      let room = this.backend.maxRows;
      for (const s of live) {
        if (room === 0) break;
        if (s.prefilled < s.prompt.length) {
          const n = Math.min(room, s.prompt.length - s.prefilled);
          for (let i = 0; i < n; i++) rows.push({ token: s.prompt[s.prefilled + i]!, position: s.prefilled + i, slot: s.slot });
          s.prefilled += n;
          room -= n;
          if (s.prefilled === s.prompt.length) {
            logitsFor.push(rows.length - 1);
            owners.push(s);
          }
        } else {
          rows.push({ token: s.token, position: s.pos, slot: s.slot });
          logitsFor.push(rows.length - 1);
          owners.push(s);
          room--;
        }
      }
      // Greedy rows with nothing else to read in the logits take only their argmax from the ranks.
      const argmaxOnly = this.backend.stepArgmax !== undefined && owners.length > 0 &&
        owners.every((s) => s.sampler.greedy && !s.grammar && s.topLogprobs === undefined);
      let picks: readonly (Float32Array | number)[];
      const tStep = performance.now();
      try {
        picks = argmaxOnly ? await this.backend.stepArgmax!(rows, logitsFor) : await this.backend.step(rows, logitsFor);
      } catch (e) {
        // Every sequence in the batch shared the failed step: each fails with its error. The
        // ranks' KV caches may be rebuilt (empty) or half written, so nothing kept is trusted.
        this.slots.clear();
        for (const s of [...this.active]) {
          s.out.fail(e instanceof Error ? e : new Error(String(e)));
          this.release(s);
        }
        continue;
      }
      const tDone = performance.now();
      this.slots.wrote(rows);
      if (owners.some((s) => s.grammar)) await Promise.all(owners.map((s) => this.prepareGrammar(s)));
      owners.forEach((s, i) => {
        if (!s.cancelled) this.advance(s, picks[i]!);
      });
      this.steps++;
      this.schedulerMsSum += tStep - tBuild + (performance.now() - tDone);
    }
  }

  /** The sequence's allowed next tokens, when it has a grammar; a failure ends it alone. */
  private async prepareGrammar(s: Sequence): Promise<void> {
    if (!s.grammar || s.cancelled) return;
    try {
      await s.grammar.prepare();
    } catch (e) {
      s.cancelled = true;
      s.out.fail(e instanceof Error ? e : new Error(String(e)));
    }
  }

  /** Gives free slots to waiting sequences, in arrival order. */
  private admit(): void {
    while (this.waiting.length && this.slots.freeSlots) {
      const s = this.waiting.shift()!;
      if (s.cancelled) {
        s.grammar?.dispose();
        continue;
      }
      const { slot, reused } = this.slots.take(s.prompt, s.cachePrompt);
      s.slot = slot;
      s.prefilled = s.cached = reused;
      s.t0 = performance.now();
      this.active.push(s);
    }
  }

  private release(s: Sequence): void {
    const i = this.active.indexOf(s);
    if (i >= 0) {
      this.active.splice(i, 1);
      this.slots.release(s.slot);
      s.grammar?.dispose();
    }
  }

  /**
   * Samples the sequence's next token from its logits (or takes the argmax the ranks picked),
   * streams it, and ends it when due.
   */
  private advance(s: Sequence, pick: Float32Array | number): void {
    if (s.generated.length === 0) s.tFirst = performance.now();
    if (s.generated.length >= s.budget) return this.finish(s, 'length');
    const { next, raw } = typeof pick === 'number' ? { next: pick, raw: undefined } : this.sample(s, pick);
    s.sampler.accept?.(next);
    try {
      s.grammar?.accept(next);
    } catch (e) {
      s.out.fail(e instanceof Error ? e : new Error(String(e)));
      return this.release(s);
    }
    // Under a grammar a stop token comes only where the output is complete.
    if (s.grammar?.done || (!s.ignoreEos && this.stopTokens.includes(next))) return this.finish(s, 'stop');
    s.generated.push(next);
    const bytes = this.tokenizer.decodeBytes(s.token, next);
    const logprobs = raw && this.logprobs(raw, s.token, next, bytes, s.topLogprobs!);
    let text = s.decoder.decode(bytes, { stream: true });
    s.token = next;
    s.pos = s.prompt.length - 1 + s.generated.length;
    if (s.stops.length) {
      s.pending += text;
      const hit = firstStop(s.pending, s.stops);
      if (hit >= 0) {
        const out = s.pending.slice(0, hit);
        s.pending = '';
        if (out) s.out.push({ token: next, text: out, done: false, ...(logprobs && { logprobs }) });
        return this.finish(s, 'stop');
      }
      const keep = stopPrefixLength(s.pending, s.stops);
      text = s.pending.slice(0, s.pending.length - keep);
      s.pending = s.pending.slice(s.pending.length - keep);
    }
    s.out.push({ token: next, text, done: false, ...(logprobs && { logprobs }) });
    if (s.generated.length >= s.budget) this.finish(s, 'length');
  }

  /** The sequence's next token from its logits, and the raw logits when it wants logprobs. */
  private sample(s: Sequence, logits: Float32Array): { next: number; raw: Float32Array | undefined } {
    // The sampler may overwrite the logits, and logprobs are of the raw ones.
    const raw = s.topLogprobs === undefined ? undefined : logits.slice();
    s.grammar?.mask(logits);
    let next = s.sampler.sample(logits);
    // A draw's rounding fallback (run.c's last index) can land on a masked token.
    if (s.grammar && !s.grammar.allows(next)) next = argmax(logits, logits.length);
    return { next, raw };
  }

  /** `token`'s log-probability after `prev`, and the `top` most likely tokens' there. */
  private logprobs(raw: Float32Array, prev: number, token: number, bytes: Uint8Array, top: number): ChunkLogprobs {
    const n = this.tokenizer.vocabSize ?? raw.length;
    const lp = logprobsAt(raw, n, token, top);
    return {
      token, bytes: Array.from(bytes), logprob: lp.logprob,
      top: lp.top.map((t) => ({ token: t.token, bytes: Array.from(this.tokenizer.decodeBytes(prev, t.token)), logprob: t.logprob })),
    };
  }

  private finish(s: Sequence, reason: FinishReason): void {
    const tEnd = performance.now();
    const tail = s.pending + s.decoder.decode();
    const decoded = Math.max(s.generated.length - 1, 0);
    const stats: GenerationStats = {
      promptTokens: s.prompt.length,
      cachedTokens: s.cached,
      generatedTokens: s.generated.length,
      prefillMs: s.tFirst - s.t0,
      prefillTokensPerS: (s.prompt.length - s.cached) / Math.max((s.tFirst - s.t0) / 1000, 1e-9),
      decodeMs: tEnd - s.tFirst,
      decodeTokensPerS: decoded / Math.max((tEnd - s.tFirst) / 1000, 1e-9),
      finishReason: reason,
    };
    s.out.push({ token: -1, text: tail, done: true, stats });
    this.release(s);
  }
}

/** A single-consumer queue of chunks that can also carry one error. */
class ChunkQueue {
  private readonly items: GenerateChunk[] = [];
  private error: Error | undefined;
  private wake: (() => void) | undefined;

  push(c: GenerateChunk): void {
    this.items.push(c);
    this.wake?.();
  }

  fail(e: Error): void {
    this.error ??= e;
    this.wake?.();
  }

  async next(): Promise<GenerateChunk> {
    for (;;) {
      if (this.error) throw this.error;
      const c = this.items.shift();
      if (c) return c;
      await new Promise<void>((r) => (this.wake = r));
      this.wake = undefined;
    }
  }
}

/** A token's bytes, or none for a row the tokenizer has no piece for (padding). */
function bytesOrNone(decode: () => Uint8Array): Uint8Array {
  try {
    return decode();
  } catch {
    return new Uint8Array(0);
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
