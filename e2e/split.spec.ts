/**
 * Explicit uneven splits of stories260K (8 query heads, 4 KV heads): `split` through the SDK and
 * `--split` through the CLI must give exactly the reference greedy tokens.
 */
import { test, expect } from './fixtures.js';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { repoRoot, sharedModelsDir } from '../src/cli/browser.js';
import { runGenerate } from '../src/cli/generate.js';
import type { PageGenerateOptions } from '../src/cli/page/types.js';

const greedy = JSON.parse(readFileSync(new URL('../test-support/fixtures/stories260K-greedy.json', import.meta.url), 'utf8')) as { tokens: number[]; text: string };
const base: PageGenerateOptions = {
  model: '/models/stories260K.bin', tokenizer: '/models/tok512.bin', tp: 0, prompt: '', maxTokens: 256, temperature: 0, topP: 0.9, seed: 1,
};

test.describe.configure({ mode: 'serial' });

// 64 tokens on GPU ranks: the whole sample at 4/2/2 is e2e/cpu-ranks.spec.ts's, on CPU ranks.
test('3 ranks with 4/2/2 of the 8 query heads give the reference greedy tokens', async ({ harness }) => {
  const r = await runGenerate(harness, { ...base, split: [0.5, 0.25, 0.25], maxTokens: 64 });
  expect(r.tp).toBe(3);
  expect(r.tokens).toEqual(greedy.tokens.slice(1, 65));
  const p = r.stats.placement!;
  expect(p.split).toBe('explicit');
  expect(p.ranks.map((x) => x.heads)).toEqual([[0, 4], [4, 6], [6, 8]]);
  expect(p.fractions).toEqual([0.5, 0.25, 0.25]);
  // Rank 0 holds twice rank 1's share of every projection, so it uploads more.
  const w = r.stats.ranks.map((x) => x.weightBytes);
  expect(w[0]).toBeGreaterThan(w[1]!);
});

test('a split that cuts a KV group (5/3 heads: both ranks hold KV head 2) gives the reference tokens', async ({ harness }) => {
  const r = await runGenerate(harness, { ...base, split: [5, 3], maxTokens: 64 });
  expect(r.stats.placement!.ranks.map((x) => x.heads)).toEqual([[0, 5], [5, 8]]);
  expect(r.tokens).toEqual(greedy.tokens.slice(1, 65));
});

test('`webgpu-tp generate --split 0.5,0.25,0.25` runs 3 ranks with 4/2/2 heads and prints the reference text', async () => {
  const cli = resolve(repoRoot, 'dist/cli/main.js');
  const { stdout, stderr } = await promisify(execFile)('node', [
    cli, 'generate', '--devices', 'cpu', '--model', resolve(sharedModelsDir, 'stories260K.bin'), '--tokenizer', resolve(sharedModelsDir, 'tok512.bin'),
    '--split', '0.5,0.25,0.25', '--max-tokens', '40', '--temperature', '0', '--no-cache',
  ], { timeout: 240_000 });
  expect(stdout.trimEnd().length).toBeGreaterThan(100);
  expect(greedy.text.startsWith(stdout.trimEnd())).toBe(true);
  expect(stderr).toMatch(/tp=3 \(cpu, cpu, cpu\) split heads 4\/2\/2, MLP \d+\/\d+\/\d+, vocab 256\/128\/128 .*decode [\d.]+ tok\/s/);
});

test('`--split` and `--tp` that disagree fail with the InvalidArgumentError', async () => {
  const cli = resolve(repoRoot, 'dist/cli/main.js');
  const err = await promisify(execFile)('node', [
    cli, 'generate', '--model', resolve(sharedModelsDir, 'stories260K.bin'), '--tokenizer', resolve(sharedModelsDir, 'tok512.bin'),
    '--split', '1,1', '--tp', '4', '--no-cache',
  ], { timeout: 120_000 }).then(() => null, (e: { stderr: string; code: number }) => e);
  expect(err?.code).toBe(1);
  expect(err?.stderr).toContain('error [INVALID_ARGUMENT]: tensorParallel says 4 ranks but split says 2');
});
