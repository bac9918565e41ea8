/**
 * The test page's SDK calls (window.tp.api, test-support/page/api.ts) as specs make them, and a
 * story prompt long enough for prefill's GEMM, shared by the specs that need them.
 */
import type { Harness } from '../src/cli/browser.js';
import type { PageGenerateOptions } from '../src/cli/page/types.js';
import type { GenerateOptions } from '../src/engine/types.js';

/** 128+ tokens under tok512, so a prefill takes more than one 64-row chunk through the GEMM. */
export const LONG_PROMPT = 'Once upon a time, there was a little girl named Lily. She loved to play outside in the park with her dog, Max. '
  + 'One day, Lily and Max saw a big red ball under a tree. Lily wanted to play with the ball, but a boy said it was his. '
  + 'Lily was sad, so her mom gave her a hug. Lily smiled and said thank you. Then she ran to the swings with Max, '
  + 'and they played until the sun went down. At night, Lily said';

/** The page's answer, or the error it came back with thrown. */
export function ok<T>(r: T): Exclude<T, { error: unknown }> {
  if (r && typeof r === 'object' && 'error' in r) {
    const e = r.error as { name: string; message: string };
    throw new Error(`${e.name}: ${e.message}`);
  }
  return r as Exclude<T, { error: unknown }>;
}

/** `generate`'s chunks for `prompt` on an engine made with `o`, and the prompt's ids; a page error is thrown. */
export const generateChunks = async (h: Harness, o: PageGenerateOptions, prompt: string, opts: Omit<GenerateOptions, 'signal'>) =>
  ok(await h.page.evaluate(([o, prompt, opts]) => window.tp.api.generateChunks(o, prompt, opts), [o, prompt, opts] as const));
