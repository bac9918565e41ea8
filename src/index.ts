/**
 * webgpu-tp: tensor-parallel LLM inference in the browser, on WebGPU ranks and WebAssembly SIMD
 * CPU ranks (`devices: 'auto'`, the default, picks by measurement; `stats().placement` says why).
 *
 * ```ts
 * import { createEngine } from 'webgpu-tp';
 * const engine = await createEngine({ model: '/models/stories260K.bin', tokenizer: '/models/tok512.bin', tensorParallel: 2 });
 * for await (const chunk of engine.generate('Once upon a time', { maxTokens: 64 })) console.log(chunk.text);
 * ```
 *
 * Hugging Face models load from a base URL holding config.json, model.safetensors (or its
 * index and shards) and tokenizer.json; chat goes through the model's template:
 * ```ts
 * const engine = await createEngine({ model: { hf: 'https://huggingface.co/ORG/NAME/resolve/main' }, maxContext: 2048 });
 * const reply = await engine.chat.completions.create({ messages: [{ role: 'user', content: 'Hi!' }] });
 * ```
 *
 * The page must be cross-origin isolated (COOP `same-origin`, COEP `require-corp` or
 * `credentialless`): without it there is no SharedArrayBuffer and `createEngine` throws
 * `NotIsolatedError`. The shard worker ships inside this module and starts from a Blob URL, so
 * there is no worker file to serve; see README.md, "Embed it".
 */
export { createEngine, type Engine, type EngineOptions } from './engine/engine.js';
export { joinEngine, type JoinOptions, type TabJoin, type TabJoinInfo } from './engine/tab-join.js';
export type { TabRankState } from './protocol.js';
export type { HfModelOption } from './engine/hf-open.js';
export type {
  ChatMessage, ChatCompletionParams, ChatCompletion, ChatCompletionChunk, ChatCompletions, ChatChoiceLogprobs, ChatTokenLogprob, ChatTopLogprob,
} from './engine/chat-completions.js';
export type { CompletionParams, CompletionChoice, Completion, CompletionChunk, Completions, CompletionLogprobs } from './engine/completions.js';
export type { OpenAiSamplingParams, OpenAiUsage } from './engine/sampling-openai.js';
export type { ResponseFormat, JsonSchema } from './engine/structured.js';
export type { ModelSource } from './loader/source.js';
export type { LoadProgress } from './engine/load-shards.js';
export type {
  GenerateOptions, GenerateChunk, GenerationStats, FinishReason, EngineStats, RankStats, RankShard, RankReport, StepBreakdown, KernelTiming, DevicePlacement,
  PlacementTiming, RankPrecision, RankBackend, TokenLogprob, ChunkLogprobs,
} from './engine/types.js';
export type { KvCacheOption } from './gpu/kernels/kv-format.js';
export type { DevicesOption } from './engine/placement.js';
export type { AxisSplit } from './parallel/axis-split.js';
export type { DeviceSpec, AdapterFilter } from './gpu/core/adapter.js';
export type { ModelConfig } from './model/config.js';
export {
  WebGpuTpError, WebGpuUnavailableError, NotIsolatedError, ModelFormatError, ModelFetchError, TokenizerFormatError, PlanError,
  CollectiveTimeoutError, DeviceLostError, WorkerFailedError, AbortedError, InvalidArgumentError, DisposedError, AdapterNotFoundError,
  TabJoinTimeoutError, RankMemoryError, CpuMemoryError, GrammarError, type ErrorCode,
} from './errors.js';
