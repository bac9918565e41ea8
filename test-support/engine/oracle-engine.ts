/** stories260K with tok512 over the in-thread CPU oracle, as an `Engine` for unit tests. */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { loadLlama2c } from '../../src/model/formats/llama2c.js';
import { Tokenizer } from '../../src/model/tokenizer/tokenizer.js';
import { assembleEngine, type Engine } from '../../src/engine/engine.js';
import { modelsDir, readArrayBuffer } from '../fixtures/paths.js';
import { ReferenceBackend } from './reference-backend.js';

export function stories260KOracle(): { engine: Engine; tokenizer: Tokenizer } {
  const m = loadLlama2c(readArrayBuffer(resolve(modelsDir, 'stories260K.bin')));
  const tokenizer = Tokenizer.parse(readFileSync(resolve(modelsDir, 'tok512.bin')), 512);
  const engine = assembleEngine(m.config, 1, new ReferenceBackend({ config: m.config, weights: m.weights }), tokenizer, async () => [], async () => {});
  return { engine, tokenizer };
}
