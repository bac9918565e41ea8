/** Synthetic checkpoints for the e2e specs: written to a temporary directory, served, then removed. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Harness } from '../src/cli/browser.js';
import { llama2cConfig, SYNTH_SHAPES, writeSynthCheckpoint, writeSynthTokenizer } from '../src/model/synth.js';

/** Runs `body` on synth stories15M (f32) and its tokenizer, served by `h` under `/files/<name>/`. */
export async function withSynth15M(h: Harness, name: string, body: (model: string, tokenizer: string) => Promise<void>): Promise<void> {
  const config = llama2cConfig(SYNTH_SHAPES.stories15M);
  const dir = mkdtempSync(join(tmpdir(), `tp-${name}-`));
  try {
    await writeSynthCheckpoint(config, 1, join(dir, 'm.bin'));
    await writeSynthTokenizer(config.vocabSize, 1, join(dir, 'tok.bin'));
    await body(h.server.mountFile(`/files/${name}/m.bin`, join(dir, 'm.bin')), h.server.mountFile(`/files/${name}/tok.bin`, join(dir, 'tok.bin')));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
