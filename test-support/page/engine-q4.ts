/**
 * The engine on a q4_0 layout built in the page (test-support/model/q4-layout.ts) from stories260K's f32
 * weights, exposed as `window.tp.q4engine.*`. No file holds that layout (GGUF Q4_0 files go
 * through `createEngine` itself), so this goes the rest of `createEngine`'s way by hand: the plan
 * over the layout's tensor table, the worker group (byte router, shard packing, ranks) on the
 * layout's bytes, the scheduler.
 */
import { assembleEngine, type Engine } from '../../src/engine/engine.js';
import { WorkerGroup } from '../../src/engine/worker-group.js';
import { parseTokenizer } from '../../src/engine/tokenizers.js';
import { DEFAULT_SPIN } from '../../src/collective/index.js';
import { openSource } from '../../src/loader/source.js';
import { loadLlama2c } from '../../src/model/formats/llama2c.js';
import { q4Layout } from '../model/q4-layout.js';
import { makePlan } from '../../src/parallel/plan.js';
import { serializeError, type SerializedError } from '../../src/errors.js';

export interface Q4EngineOptions {
  /** An f32 llama2.c checkpoint (URL); its matrices whose rows are whole groups of 32 become q4_0. */
  model: string;
  tokenizer: string;
  tp: number;
  /** Tensor names to keep f32 besides those Q4_0 cannot hold (default none); 'all' lays out the f32 model itself (a baseline on the same path). */
  keepF32?: string[] | 'all';
}

let current: Engine | undefined;

async function bytesOf(url: string): Promise<ArrayBuffer> {
  const r = await fetch(url);
  if (!r.ok) throw new Error(`${url}: HTTP ${r.status}`);
  return r.arrayBuffer();
}

async function open(o: Q4EngineOptions): Promise<{ engine: Engine; quantised: string[] }> {
  await dispose();
  const [file, tok] = await Promise.all([bytesOf(o.model), bytesOf(o.tokenizer)]);
  const f32 = loadLlama2c(file);
  const keep = new Set(o.keepF32 === 'all' ? [] : (o.keepF32 ?? []));
  const layout = q4Layout(file, f32.tensors, (t) => o.keepF32 !== 'all' && !keep.has(t.name));
  const config = f32.config;
  const plan = makePlan(config, { tensorParallel: o.tp }, layout.tensors);
  const group = await WorkerGroup.create({
    config, plan, source: openSource(layout.bytes), cache: false,
    rank: {
      maxRows: 16, slots: 2, contextLength: config.seqLen, spin: DEFAULT_SPIN, timeoutMs: 30_000,
      profile: false, activations: 'f32', runqExact: false, kvCache: 'auto',
    },
  });
  const tokenizer = parseTokenizer(new Uint8Array(tok), config.vocabSize);
  current = assembleEngine(config, plan.world, group, tokenizer, async () => group.stats(), () => group.dispose(), () => group.resetStats(), 'q4_0 layout');
  return { engine: current, quantised: layout.quantised };
}

/** Loads the layout's engine (kept until `dispose`), for tests that count what loading uploaded. */
export async function load(o: Q4EngineOptions): Promise<{ tp: number; quantised: string[] } | { error: SerializedError }> {
  try {
    const { engine, quantised } = await open(o);
    return { tp: engine.tensorParallel, quantised };
  } catch (e) {
    return { error: serializeError(e) };
  }
}

/** Greedy tokens after `prompt` (default BOS alone), `maxTokens` of them, and the decode rate; then disposes the engine. */
export async function greedy(
  o: Q4EngineOptions & { maxTokens: number; prompt?: number[]; ignoreEos?: boolean },
): Promise<{ tokens: number[]; tp: number; quantised: string[]; decodeTokensPerS: number } | { error: SerializedError }> {
  try {
    const { engine, quantised } = await open(o);
    const tokens: number[] = [];
    let decodeTokensPerS = 0;
    for await (const chunk of engine.generateTokens(o.prompt ?? [1], { maxTokens: o.maxTokens, temperature: 0, ignoreEos: o.ignoreEos })) {
      if (chunk.token >= 0) tokens.push(chunk.token);
      if (chunk.stats) decodeTokensPerS = chunk.stats.decodeTokensPerS;
    }
    return { tokens, tp: engine.tensorParallel, quantised, decodeTokensPerS };
  } catch (e) {
    return { error: serializeError(e) };
  } finally {
    await dispose();
  }
}

export async function dispose(): Promise<void> {
  const e = current;
  current = undefined;
  await e?.dispose();
}
