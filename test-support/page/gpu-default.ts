/**
 * The test page's engines run on WebGPU ranks unless a spec names its devices. The engine's own
 * default, `devices: 'auto'`, puts them on CPU ranks on a machine with no real GPU (SwiftShader
 * only, as in CI), and the GPU specs must keep testing the WebGPU path. A spec of the default
 * itself passes `devices: 'auto'` or calls `generateOnDefault`.
 */
import { createEngine } from '../../src/engine/engine.js';
import { serializeError, type SerializedError } from '../../src/errors.js';
import type { EngineStats } from '../../src/engine/types.js';
import type { PageGenerateOptions } from '../../src/cli/page/types.js';

/** `f` with `devices: 'gpu'` where its options give no devices. */
export function onGpu<A extends unknown[], R>(f: (o: PageGenerateOptions, ...rest: A) => R): (o: PageGenerateOptions, ...rest: A) => R {
  return (o, ...rest) => f({ ...o, devices: o.devices ?? 'gpu' }, ...rest);
}

/**
 * `createEngine` with nothing but the model and tokenizer (every other option at its default),
 * then a greedy generation from `prompt`: the tokens, the engine's stats, and the load time.
 */
export async function generateOnDefault(
  model: string, tokenizer: string, prompt: string, maxTokens: number,
): Promise<{ tokens: number[]; tp: number; loadMs: number; stats: EngineStats } | { error: SerializedError }> {
  try {
    const t0 = performance.now();
    const engine = await createEngine({ model, tokenizer });
    const loadMs = performance.now() - t0;
    try {
      const tokens: number[] = [];
      for await (const c of engine.generate(prompt, { maxTokens, temperature: 0 })) if (c.token >= 0) tokens.push(c.token);
      return { tokens, tp: engine.tensorParallel, loadMs, stats: await engine.stats() };
    } finally {
      await engine.dispose();
    }
  } catch (e) {
    return { error: serializeError(e) };
  }
}
