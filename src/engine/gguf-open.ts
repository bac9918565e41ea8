/**
 * What `createEngine` needs from a GGUF file: its config and tensor table, its weights as the
 * converted stream, and a tokenizer (the one in its metadata unless another one is given).
 */
import { readBytes } from '../loader/hf-model.js';
import { ggufStream } from '../loader/gguf-stream.js';
import { openSource, type ByteSource, type ModelSource } from '../loader/source.js';
import type { ModelConfig, TensorInfo } from '../model/config.js';
import { readGguf } from '../model/formats/gguf.js';
import { ggufEngineTokenizer, parseTokenizer, type EngineTokenizer } from './tokenizers.js';

export async function openGgufForEngine(
  file: ByteSource, tokenizer?: ModelSource,
): Promise<{ config: ModelConfig; tensors: TensorInfo[]; source: ByteSource; tokenizer: EngineTokenizer }> {
  const layout = await readGguf(file);
  const { config } = layout;
  const tok = tokenizer === undefined
    ? ggufEngineTokenizer(layout.metadata, config.vocabSize)
    : parseTokenizer(await readBytes(openSource(tokenizer)), config.vocabSize);
  return { config, tensors: layout.tensors, source: ggufStream(file, layout), tokenizer: tok };
}
