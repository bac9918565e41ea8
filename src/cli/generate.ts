/**
 * `webgpu-tp generate`: runs the engine in headless Chromium on a local or remote model and
 * streams the text (or prints one JSON object with --json).
 */
import { existsSync, readdirSync, statSync } from 'node:fs';
import { basename, dirname, resolve, join } from 'node:path';
import { homedir } from 'node:os';
import { openHarness, type Harness } from './browser.js';
import { InvalidArgumentError, reviveError, type SerializedError } from '../errors.js';
import type { PageGenerateOptions, PageGenerateResult } from './page/types.js';
import { rankReports } from './ranks.js';

/** The page's generation options (model and tokenizer as local paths or URLs), plus the CLI's own. */
export interface GenerateCommandOptions
  extends Pick<PageGenerateOptions, 'tp' | 'devices' | 'split' | 'prompt' | 'maxTokens' | 'temperature' | 'topP' | 'seed' | 'chat' | 'weightOnly' | 'int8Activations' | 'runqExact' | 'kvCache'> {
  /** A llama2.c .bin, a .safetensors with config.json beside it, a model directory, or a URL of either. */
  model: string;
  /** tokenizer.bin or tokenizer.json; default: the HF model's tokenizer.json. */
  tokenizer?: string;
  ignoreEos: boolean;
  json: boolean;
  /** Keep shards in a persistent browser profile's IndexedDB (default true). */
  cache: boolean;
}

/** The CLI's persistent Chromium profile, where the shard cache lives between runs. */
export function profileDir(): string {
  const base = process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache');
  return join(base, 'webgpu-tp', 'chromium-profile');
}

function notFound(what: string, file: string): InvalidArgumentError {
  return new InvalidArgumentError(`${what} not found: ${file}`, `Check the --${what} path`);
}

/**
 * The input mistakes `generate` can name before it starts a browser: a missing local file, or a
 * llama2.c model without --tokenizer (a GGUF or Hugging Face model brings its own).
 */
export function checkGenerateInputs(o: { model: string; tokenizer?: string }): void {
  const local = (p: string) => !/^https?:\/\//.test(p);
  if (local(o.model) && !existsSync(resolve(o.model))) throw notFound('model', resolve(o.model));
  if (o.tokenizer !== undefined && local(o.tokenizer) && !existsSync(resolve(o.tokenizer))) throw notFound('tokenizer', resolve(o.tokenizer));
  const llama2c = /\.bin$/.test(o.model) && (!local(o.model) || statSync(resolve(o.model)).isFile());
  if (llama2c && o.tokenizer === undefined) {
    throw new InvalidArgumentError('a llama2.c model needs --tokenizer', 'Pass --tokenizer with the tokenizer.bin that goes with the model (tok512.bin for stories260K)');
  }
}

/** A local path is served by the harness's server; a URL is passed through. */
export function mountInput(h: Harness, what: string, pathOrUrl: string): string {
  if (/^https?:\/\//.test(pathOrUrl)) return pathOrUrl;
  const file = resolve(pathOrUrl);
  if (!existsSync(file)) throw notFound(what, file);
  return h.server.mountFile(`/files/${what}/${basename(file)}`, file);
}

/**
 * The model argument as the page takes it: a llama2.c or GGUF file (path or URL ending in .bin or .gguf) as is;
 * anything else is a Hugging Face model directory: a URL prefix, a local directory, or the
 * directory of a local .safetensors file, whose files are served under one prefix.
 */
export function mountModel(h: Harness, pathOrUrl: string): PageGenerateOptions['model'] {
  if (/^https?:\/\//.test(pathOrUrl)) return /\.(bin|gguf)$/.test(pathOrUrl) ? pathOrUrl : { hf: pathOrUrl.replace(/\/(config\.json|[^/]*\.safetensors)$/, '') };
  const file = resolve(pathOrUrl);
  if (!existsSync(file)) throw notFound('model', file);
  if (statSync(file).isFile() && !file.endsWith('.safetensors')) return mountInput(h, 'model', file);
  const dir = statSync(file).isDirectory() ? file : dirname(file);
  if (!existsSync(join(dir, 'config.json'))) throw new InvalidArgumentError(`${dir} has no config.json`, 'A safetensors model needs its config.json beside it');
  for (const name of readdirSync(dir)) {
    if (statSync(join(dir, name)).isFile()) h.server.mountFile(`/files/hf/${name}`, join(dir, name));
  }
  return { hf: '/files/hf' };
}

/** Runs one generation in the page of `h`; throws the page's typed error. */
export async function runGenerate(h: Harness, o: PageGenerateOptions): Promise<PageGenerateResult> {
  type PageWindow = { tp: { engine: { generate(o: PageGenerateOptions): Promise<PageGenerateResult | { error: SerializedError }> } } };
  const r = await h.page.evaluate((opts) => (window as unknown as PageWindow).tp.engine.generate(opts), o);
  if ('error' in r) throw reviveError(r.error as SerializedError);
  return r;
}

export async function generateCommand(o: GenerateCommandOptions): Promise<void> {
  checkGenerateInputs(o);
  const h = await openHarness(o.cache ? { userDataDir: profileDir() } : {});
  try {
    const model = mountModel(h, o.model);
    if (typeof model === 'string' && !model.endsWith('.gguf') && o.tokenizer === undefined) {
      throw new InvalidArgumentError('a llama2.c model needs --tokenizer', 'Pass --tokenizer with the tokenizer.bin that goes with the model');
    }
    const tokenizer = o.tokenizer === undefined ? undefined : mountInput(h, 'tokenizer', o.tokenizer);
    if (!o.json) await h.page.exposeFunction('tpEmit', (text: string) => void process.stdout.write(text));
    const r = await runGenerate(h, {
      model, tokenizer, tp: o.tp, devices: o.devices, split: o.split, prompt: o.prompt, maxTokens: o.maxTokens, temperature: o.temperature,
      topP: o.topP, seed: o.seed, ignoreEos: o.ignoreEos, stream: !o.json, cache: o.cache, chat: o.chat, weightOnly: o.weightOnly, int8Activations: o.int8Activations, runqExact: o.runqExact,
      kvCache: o.kvCache,
    });
    const ranks = rankReports(r.stats);
    if (o.json) {
      const { stats, ...out } = r;
      const p = stats.placement;
      console.log(JSON.stringify({ ...out, ranks, ...(p && { placement: { mode: p.mode, reason: p.reason, split: p.split, activations: p.activations, activations_reason: p.activationsReason } }) }));
    } else {
      process.stdout.write('\n');
      const p = r.stats.placement;
      const per = (r: [number, number]) => r[1] - r[0];
      const split = p && p.split !== 'even'
        ? ` split heads ${p.ranks.map((x) => per(x.heads)).join('/')}, MLP ${p.ranks.map((x) => per(x.hidden)).join('/')}, vocab ${p.ranks.map((x) => per(x.vocab)).join('/')}`
        : '';
      console.error(
        `tp=${r.tp} (${ranks.map((x) => x.backend).join(', ')})${split} kv-cache ${r.stats.ranks[0]?.precision.kvCache ?? '?'}${p ? ` activations ${p.activations}` : ''}, load ${r.timings.load_ms.toFixed(0)} ms, prefill ${r.timings.prefill_tokens_per_s.toFixed(1)} tok/s, decode ${r.timings.decode_tokens_per_s.toFixed(1)} tok/s`,
      );
    }
  } finally {
    await h.close();
  }
}
