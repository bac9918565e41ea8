/**
 * Every error webgpu-tp raises is a `WebGpuTpError` with a stable `code` and a `remedy` that
 * tells the user what to do. Errors cross the worker boundary as `{name, code, message, ...}`
 * and are rebuilt with their class (see `reviveError`).
 */
export type ErrorCode =
  | 'NO_WEBGPU'
  | 'NOT_ISOLATED'
  | 'MODEL_FORMAT'
  | 'MODEL_FETCH'
  | 'TOKENIZER_FORMAT'
  | 'PLAN'
  | 'COLLECTIVE_TIMEOUT'
  | 'DEVICE_LOST'
  | 'WORKER_FAILED'
  | 'ABORTED'
  | 'INVALID_ARGUMENT'
  | 'NO_BROWSER'
  | 'NO_ADAPTER'
  | 'TAB_JOIN_TIMEOUT'
  | 'RANK_MEMORY'
  | 'CPU_MEMORY'
  | 'DISPOSED'
  | 'GRAMMAR';

export class WebGpuTpError extends Error {
  readonly code: ErrorCode;
  readonly remedy: string;
  constructor(code: ErrorCode, message: string, remedy = '') {
    super(remedy ? `${message}. ${remedy}` : message);
    // `name` comes from the prototype (see ERROR_CLASSES): class names do not survive minification.
    this.code = code;
    this.remedy = remedy;
  }
}

export class WebGpuUnavailableError extends WebGpuTpError {
  constructor(
    message = 'WebGPU is not available',
    remedy = 'Use a browser with WebGPU enabled (Chrome/Edge 113+, or Chromium with --enable-unsafe-webgpu), or run on CPU ranks, which need no WebGPU: devices: "cpu" (or leave devices unset for "auto")',
  ) {
    super('NO_WEBGPU', message, remedy);
  }
}

export class NotIsolatedError extends WebGpuTpError {
  constructor() {
    super(
      'NOT_ISOLATED',
      'The page is not cross-origin isolated, so SharedArrayBuffer is unavailable',
      'Serve the page with the headers Cross-Origin-Opener-Policy: same-origin and Cross-Origin-Embedder-Policy: require-corp (or credentialless)',
    );
  }
}

export class ModelFormatError extends WebGpuTpError {
  constructor(message: string, remedy = 'Check that the file is a complete model in a supported format: llama2.c, a Llama GGUF or Hugging Face safetensors (re-download it if it was cut short)') {
    super('MODEL_FORMAT', message, remedy);
  }
}

/**
 * A model or tokenizer URL could not be fetched: a network failure, an HTTP error, or a server
 * on another origin without CORS (the browser hides which, so the remedy names each).
 */
export class ModelFetchError extends WebGpuTpError {
  constructor(
    message: string,
    remedy = 'Check the URL and the network. A server on another origin must send CORS headers (Access-Control-Allow-Origin, and Access-Control-Expose-Headers: Content-Range)',
  ) {
    super('MODEL_FETCH', message, remedy);
  }
}

export class TokenizerFormatError extends WebGpuTpError {
  constructor(message: string, remedy = 'Use the tokenizer file that was exported with this model') {
    super('TOKENIZER_FORMAT', message, remedy);
  }
}

export class PlanError extends WebGpuTpError {
  constructor(message: string, remedy = '') {
    super('PLAN', message, remedy);
  }
}

export class CollectiveTimeoutError extends WebGpuTpError {
  /** Ranks that had not arrived when the wait gave up. */
  readonly missingRanks: number[];
  readonly op: string;
  readonly seq: number;
  constructor(op: string, seq: number, missingRanks: number[], timeoutMs: number, rank?: number, remedy?: string) {
    super(
      'COLLECTIVE_TIMEOUT',
      `${op} #${seq}${rank === undefined ? '' : ` on rank ${rank}`} timed out after ${timeoutMs} ms waiting for rank${missingRanks.length === 1 ? '' : 's'} ${missingRanks.join(', ')}`,
      remedy ?? 'A worker died, hung or lost its device; the engine rebuilds it, or dispose() and create a new engine',
    );
    this.missingRanks = missingRanks;
    this.op = op;
    this.seq = seq;
  }
}

export class DeviceLostError extends WebGpuTpError {
  readonly rank: number;
  constructor(rank: number, reason: string) {
    super('DEVICE_LOST', `The GPU device of rank ${rank} was lost: ${reason.replace(/\.$/, '')}`, 'Retry; the engine re-creates the device');
    this.rank = rank;
  }
}

export class WorkerFailedError extends WebGpuTpError {
  readonly rank: number;
  constructor(rank: number, message: string, remedy = 'Retry; the engine rebuilds the rank') {
    super('WORKER_FAILED', `Rank ${rank} failed: ${message}`, remedy);
    this.rank = rank;
  }
}

export class AbortedError extends WebGpuTpError {
  constructor(message = 'The operation was aborted') {
    super('ABORTED', message);
  }
}

export class InvalidArgumentError extends WebGpuTpError {
  constructor(message: string, remedy = '') {
    super('INVALID_ARGUMENT', message, remedy);
  }
}

export class BrowserNotFoundError extends WebGpuTpError {
  constructor(tried: string[]) {
    super(
      'NO_BROWSER',
      `No Chromium found (tried ${tried.join(', ')})`,
      'Set CHROME_PATH to a Chromium/Chrome binary, install one (Debian: apt-get update && apt-get install -y chromium), or run `npx playwright install chromium`',
    );
  }
}

export class AdapterNotFoundError extends WebGpuTpError {
  /** The spec that matched nothing, and the adapters the browser offered instead. */
  readonly spec: string;
  readonly seen: string[];
  constructor(spec: string, seen: string[]) {
    super(
      'NO_ADAPTER',
      `No GPU adapter matches ${spec}; the browser offered ${seen.length ? seen.join(', ') : 'none'}`,
      'Loosen the filter, or use devices: "auto" to take the adapters there are',
    );
    this.spec = spec;
    this.seen = seen;
  }
}

export class TabJoinTimeoutError extends WebGpuTpError {
  /** The join id the host waited on, and how many tabs it wanted and got. */
  readonly joinId: string;
  readonly wanted: number;
  readonly joined: number;
  constructor(joinId: string, wanted: number, joined: number, timeoutMs: number) {
    super(
      'TAB_JOIN_TIMEOUT',
      `${joined} of ${wanted} rank tab${wanted === 1 ? '' : 's'} joined "${joinId}" within ${timeoutMs} ms`,
      `Open the demo page at ?join=${encodeURIComponent(joinId)} in ${wanted - joined} more tab${wanted - joined === 1 ? '' : 's'} of this origin (same browser profile) while the engine loads, or pass a larger tabs.timeoutMs`,
    );
    this.joinId = joinId;
    this.wanted = wanted;
    this.joined = joined;
  }
}

/**
 * A CPU rank's shard, KV cache and activations do not fit one WebAssembly memory (wasm32:
 * 4 GiB). Found from the plan before anything loads, with `tensorParallel` and `fitsAt`, the
 * smallest degree at which every rank fits (undefined when none does); or inside a rank whose
 * memory could not grow (code `CPU_MEMORY`, `tensorParallel` undefined there), which the
 * engine turns into this error with both named.
 */
export class RankMemoryError extends WebGpuTpError {
  /** The degree the rank was planned at (undefined inside a rank, which does not know it). */
  readonly tensorParallel?: number;
  /** Bytes the largest rank needs (or asked for, when its memory could not grow), and the most one memory holds. */
  readonly bytes: number;
  readonly limit: number;
  /** What needs the bytes (the rank's shard, KV cache and activations), or why its memory could not grow. */
  readonly what: string;
  readonly fitsAt?: number;
  constructor(tensorParallel: number | undefined, bytes: number, limit: number, what: string, fitsAt: number | undefined, code: 'RANK_MEMORY' | 'CPU_MEMORY' = 'RANK_MEMORY') {
    super(
      code,
      `${tensorParallel !== undefined ? `At TP=${tensorParallel} a` : 'A'} CPU rank needs ${size(bytes)} ` +
        (bytes > limit ? `(${what}), over one WebAssembly memory's ${size(limit)}` : `of WebAssembly memory: ${what}`),
      fitsAt !== undefined
        ? `Split it over at least ${fitsAt} CPU ranks (tensorParallel: ${fitsAt}), the smallest degree that fits, or use GPU ranks (devices: "gpu")`
        : tensorParallel !== undefined
          ? 'No degree fits: lower maxContext or maxBatch, or use GPU ranks (devices: "gpu")'
          : 'Split the model over more CPU ranks (a larger tensorParallel), lower maxContext or maxBatch, or use GPU ranks (devices: "gpu")',
    );
    this.tensorParallel = tensorParallel;
    this.bytes = bytes;
    this.limit = limit;
    this.what = what;
    this.fitsAt = fitsAt;
  }
}

/**
 * @deprecated Catch `RankMemoryError`: this is one, raised inside a CPU rank whose memory could
 * not grow (code `CPU_MEMORY`), before the engine names the degrees.
 */
export class CpuMemoryError extends RankMemoryError {
  constructor(bytes: number, reason: string) {
    super(undefined, bytes, 2 ** 32, reason, undefined, 'CPU_MEMORY');
  }
}

function size(bytes: number): string {
  return bytes >= 2 ** 30 ? `${(bytes / 2 ** 30).toFixed(2)} GiB` : `${(bytes / 2 ** 20).toFixed(1)} MiB`;
}

export class DisposedError extends WebGpuTpError {
  constructor() {
    super('DISPOSED', 'The engine was disposed', 'Create a new engine with createEngine()');
  }
}

/** The grammar library behind structured output failed to load, or its matcher broke its own mask. */
export class GrammarError extends WebGpuTpError {
  constructor(message: string, remedy = 'Generate without responseFormat (response_format), and report the schema that failed') {
    super('GRAMMAR', message, remedy);
  }
}

/** Every error class by its stable name: used to name them and to rebuild them across threads. */
const ERROR_CLASSES = {
  WebGpuTpError, WebGpuUnavailableError, NotIsolatedError, ModelFormatError, ModelFetchError, TokenizerFormatError, PlanError,
  CollectiveTimeoutError, DeviceLostError, WorkerFailedError, AbortedError, InvalidArgumentError,
  BrowserNotFoundError, AdapterNotFoundError, TabJoinTimeoutError, RankMemoryError, CpuMemoryError, DisposedError,
  GrammarError,
};
for (const [name, cls] of Object.entries(ERROR_CLASSES)) {
  Object.defineProperty(cls.prototype, 'name', { value: name, writable: true, configurable: true });
}

/** A plain, structured-clone-safe form of an error, for crossing a worker boundary. */
export interface SerializedError {
  name: string;
  code?: ErrorCode;
  message: string;
  stack?: string;
  extra?: Record<string, unknown>;
}

export function serializeError(e: unknown): SerializedError {
  if (e instanceof WebGpuTpError) {
    const extra: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(e)) if (k !== 'code' && k !== 'remedy') extra[k] = v;
    return { name: e.name, code: e.code, message: e.message, stack: e.stack, extra: { ...extra, remedy: e.remedy } };
  }
  if (e instanceof Error) return { name: e.name, message: e.message, stack: e.stack };
  return { name: 'Error', message: String(e) };
}

/** Rebuilds an error serialized by `serializeError`, with its class and `code`. */
export function reviveError(s: SerializedError): Error {
  if (!s.code) {
    const e = new Error(s.message);
    e.name = s.name;
    if (s.stack) e.stack = s.stack;
    return e;
  }
  // Create an instance of the right class without re-running its message formatting.
  const cls = (ERROR_CLASSES as unknown as Record<string, typeof WebGpuTpError>)[s.name] ?? WebGpuTpError;
  const e = Object.create(cls.prototype) as WebGpuTpError;
  Object.assign(e, s.extra ?? {});
  Object.defineProperties(e, {
    name: { value: s.name, writable: true, configurable: true },
    message: { value: s.message, writable: true, configurable: true },
    code: { value: s.code, writable: false, enumerable: true },
    stack: { value: s.stack ?? `${s.name}: ${s.message}`, writable: true, configurable: true },
  });
  return e;
}
