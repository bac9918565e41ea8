import { test, expect } from './fixtures.js';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { repoRoot, sharedModelsDir } from '../src/cli/browser.js';
import { Tokenizer } from '../src/model/tokenizer/tokenizer.js';

const run = promisify(execFile);
const cli = resolve(repoRoot, 'dist/cli/main.js');
const greedy = JSON.parse(readFileSync(new URL('../test-support/fixtures/stories260K-greedy.json', import.meta.url), 'utf8')) as { tokens: number[]; text: string };
const model = resolve(sharedModelsDir, 'stories260K.bin');
const tokenizer = resolve(sharedModelsDir, 'tok512.bin');
const tok = Tokenizer.parse(readFileSync(tokenizer), 512);

// What needs a browser; the usage and input errors the CLI names before one starts are
// src/cli/main.test.ts's.

// The engine's 256 tokens at TP 2 are e2e/engine.spec.ts's; this checks what the CLI streams, on
// CPU ranks (the CLI's GPU ranks are the --json test's).
test('`webgpu-tp generate` streams the start of llama2.c\'s documented greedy sample at --tp 2', async () => {
  const { stdout, stderr } = await run('node', [cli, 'generate', '--devices', 'cpu', '--model', model, '--tokenizer', tokenizer, '--tp', '2', '--max-tokens', '64', '--temperature', '0', '--no-cache'], { timeout: 240_000 });
  expect(stdout).toBe(`${tok.decodeText(greedy.tokens.slice(1, 65))}\n`);
  expect(greedy.text.startsWith(stdout.trimEnd())).toBe(true);
  expect(stderr).toMatch(/tp=2 .*decode [\d.]+ tok\/s/);
});

test('`webgpu-tp generate --json` prints the documented shape', async () => {
  const { stdout } = await run('node', [cli, 'generate', '--devices', 'gpu', '--model', model, '--tokenizer', tokenizer, '--tp', '1', '--max-tokens', '16', '--temperature', '0', '--json', '--no-cache'], { timeout: 240_000 });
  const r = JSON.parse(stdout) as Record<string, unknown>;
  expect(Object.keys(r).sort()).toEqual(['placement', 'prompt_tokens', 'ranks', 'text', 'timings', 'tokens', 'tp']);
  expect(r.prompt_tokens).toEqual([1]);
  expect(r.tokens).toEqual(greedy.tokens.slice(1, 17));
  expect(Object.keys(r.timings as object).sort()).toEqual(['decode_tokens_per_s', 'load_ms', 'prefill_tokens_per_s']);
  expect(r.ranks).toEqual([expect.objectContaining({ rank: 0, backend: 'gpu', adapter: expect.any(String), heads: [0, 8] })]);
  expect(r.placement).toEqual({ mode: expect.any(String), reason: expect.any(String), split: 'even', activations: 'f32', activations_reason: 'no quantised matrix' });
});

test('`webgpu-tp generate --devices cpu --tp 2 --json` runs on two CPU ranks and says so', async () => {
  const { stdout } = await run('node', [cli, 'generate', '--model', model, '--tokenizer', tokenizer, '--devices', 'cpu', '--tp', '2', '--max-tokens', '16', '--temperature', '0', '--json', '--no-cache'], { timeout: 120_000 });
  const r = JSON.parse(stdout) as { tokens: number[]; tp: number; ranks: { rank: number; backend: string; spec: string; heads: number[] }[]; placement: { mode: string; reason: string } };
  expect(r.tokens).toEqual(greedy.tokens.slice(1, 17));
  expect(r.tp).toBe(2);
  expect(r.ranks.map((x) => [x.rank, x.backend, x.spec, x.heads])).toEqual([[0, 'cpu', 'cpu', [0, 4]], [1, 'cpu', 'cpu', [4, 8]]]);
  expect(r.placement.mode).toBe('cpu');
  expect(r.placement.reason).toMatch(/CPU/);
});

test('`webgpu-tp generate --tp 3` fails with the PlanError and its remedy', async () => {
  const err = await run('node', [cli, 'generate', '--model', model, '--tokenizer', tokenizer, '--tp', '3', '--no-cache'], { timeout: 120_000 }).then(
    () => null,
    (e: { stderr: string; code: number }) => e,
  );
  expect(err).not.toBeNull();
  expect(err!.code).toBe(1);
  expect(err!.stderr).toContain('error [PLAN]');
  expect(err!.stderr).toContain('1, 2, 4 or 8');
});
