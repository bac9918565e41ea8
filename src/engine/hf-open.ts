/**
 * What `createEngine` needs from a Hugging Face model: its config and tensor table, its weights
 * as one f32 stream, and a tokenizer (`tokenizer.json` beside the weights unless another one,
 * `tokenizer.json` or llama2.c's `tokenizer.bin`, is given).
 */
import { InvalidArgumentError } from '../errors.js';
import { mapFiles, openHfModel, readBytes, readJson, urlFiles, type HfModel, type ModelFiles } from '../loader/hf-model.js';
import { openSource, type ModelSource } from '../loader/source.js';
import { parseTokenizer, type EngineTokenizer } from './tokenizers.js';

/**
 * A Hugging Face model directory: a base URL under which `config.json`, `model.safetensors`
 * (or `model.safetensors.index.json` and its shards), `tokenizer.json`, `tokenizer_config.json`
 * and `generation_config.json` are found — e.g. `https://huggingface.co/ORG/NAME/resolve/main`
 * — or those files by name (a picked folder).
 */
export interface HfModelOption {
  hf: string | URL | Record<string, ModelSource>;
}

export function isHfModelOption(m: unknown): m is HfModelOption {
  return typeof m === 'object' && m !== null && 'hf' in m;
}

function filesOf(o: HfModelOption): ModelFiles {
  if (typeof o.hf === 'string' || o.hf instanceof URL) return urlFiles(o.hf);
  if (typeof o.hf === 'object' && o.hf !== null) return mapFiles(o.hf, 'files');
  throw new InvalidArgumentError('model.hf must be a base URL or an object of files by name');
}

export async function openHfForEngine(o: HfModelOption, tokenizer?: ModelSource): Promise<{ model: HfModel; tokenizer: EngineTokenizer }> {
  const files = filesOf(o);
  const model = await openHfModel(files);
  const [bytes, config] = await Promise.all([
    tokenizer !== undefined ? readBytes(openSource(tokenizer)) : files.open('tokenizer.json').then((s) => {
      if (!s) throw new InvalidArgumentError(`${files.name} has no tokenizer.json`, 'Pass a tokenizer (tokenizer.json or llama2.c tokenizer.bin)');
      return readBytes(s);
    }),
    readJson(files, 'tokenizer_config.json', true),
  ]);
  return { model, tokenizer: parseTokenizer(bytes, model.config.vocabSize, { config, eosTokenIds: model.eosTokenIds }) };
}
