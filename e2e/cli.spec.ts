import { test, expect } from '@playwright/test';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { repoRoot, sharedModelsDir } from '../src/cli/browser.js';

const run = promisify(execFile);
const cli = resolve(repoRoot, 'dist/cli/main.js');
const greedy = JSON.parse(readFileSync(new URL('../test-support/fixtures/stories260K-greedy.json', import.meta.url), 'utf8')) as { tokens: number[]; text: string };
const model = resolve(sharedModelsDir, 'stories260K.bin');
const tokenizer = resolve(sharedModelsDir, 'tok512.bin');

test('`webgpu-tp generate` streams llama2.c\'s documented greedy sample at --tp 2', async () => {
  const { stdout, stderr } = await run('node', [cli, 'generate', '--model', model, '--tokenizer', tokenizer, '--tp', '2', '--max-tokens', '256', '--temperature', '0', '--no-cache'], { timeout: 240_000 });
  expect(stdout).toBe(`${greedy.text}\n`);
  expect(stderr).toMatch(/tp=2 .*decode [\d.]+ tok\/s/);
});

test('`webgpu-tp generate --json` prints the documented shape', async () => {
  const { stdout } = await run('node', [cli, 'generate', '--model', model, '--tokenizer', tokenizer, '--tp', '1', '--max-tokens', '16', '--temperature', '0', '--json', '--no-cache'], { timeout: 240_000 });
  const r = JSON.parse(stdout) as Record<string, unknown>;
  expect(Object.keys(r).sort()).toEqual(['prompt_tokens', 'text', 'timings', 'tokens', 'tp']);
  expect(r.prompt_tokens).toEqual([1]);
  expect(r.tokens).toEqual(greedy.tokens.slice(1, 17));
  expect(Object.keys(r.timings as object).sort()).toEqual(['decode_tokens_per_s', 'load_ms', 'prefill_tokens_per_s']);
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

test('`--help` after a command prints the usage; an unknown option is a usage error, not a stack trace', async () => {
  const { stdout } = await run('node', [cli, 'bench', 'allreduce', '--help'], { timeout: 30_000 });
  expect(stdout).toContain('webgpu-tp bench allreduce');
  const err = await run('node', [cli, 'generate', '--modle', model], { timeout: 30_000 }).then(
    () => null,
    (e: { stderr: string; code: number }) => e,
  );
  expect(err).not.toBeNull();
  expect(err!.code).toBe(2);
  expect(err!.stderr).toContain("Unknown option '--modle'");
  expect(err!.stderr).toContain('Usage:');
  expect(err!.stderr).not.toContain('    at ');
});

test('a missing model file or tokenizer is a typed error named before any browser starts, not a stack trace', async () => {
  const fail = (args: string[]) => run('node', [cli, 'generate', ...args, '--no-cache'], { timeout: 30_000 }).then(
    () => null,
    (e: { stderr: string; code: number }) => e,
  );
  const missing = await fail(['--model', '/nonexistent/model.bin', '--tokenizer', tokenizer]);
  expect(missing?.code).toBe(1);
  expect(missing?.stderr).toContain('error [INVALID_ARGUMENT]: model not found: /nonexistent/model.bin. Check the --model path');
  expect(missing?.stderr).not.toMatch(/\n\s+at /);
  const noTokenizer = await fail(['--model', model]);
  expect(noTokenizer?.stderr).toContain('a llama2.c model needs --tokenizer');
  expect(noTokenizer?.stderr).not.toMatch(/\n\s+at /);
  const badTokenizer = await fail(['--model', model, '--tokenizer', '/nonexistent/tok.bin']);
  expect(badTokenizer?.stderr).toContain('tokenizer not found: /nonexistent/tok.bin');
});

test('a flag that is not a number in range is a usage error naming the flag, before any browser starts; so is a missing file to bench', async () => {
  const fail = (args: string[]) => run('node', [cli, ...args], { timeout: 30_000 }).then(
    () => null,
    (e: { stderr: string; code: number }) => e,
  );
  const cases = [
    [['generate', '--model', model, '--tokenizer', tokenizer, '--tp', 'abc'], '--tp must be a whole number ≥ 1; got "abc"'],
    [['generate', '--model', model, '--tokenizer', tokenizer, '--tp', '0'], '--tp must be a whole number ≥ 1; got "0"'],
    [['generate', '--model', model, '--tokenizer', tokenizer, '--max-tokens', '1.5'], '--max-tokens must be a whole number ≥ 1'],
    [['generate', '--model', model, '--tokenizer', tokenizer, '--top-p', '2'], '--top-p must be a number in [0, 1]'],
    [['generate', '--model', model, '--tokenizer', tokenizer, '--temperature', 'hot'], '--temperature must be a number ≥ 0'],
    [['bench', 'generate', '--model', model, '--tokenizer', tokenizer, '--batch', '0'], '--batch must be a whole number ≥ 1'],
    [['bench', 'allreduce', '--workers', '2,x'], '--workers must be a whole number ≥ 2; got "x"'],
    [['bench', 'report', '--from', '/nonexistent/run.json'], 'bench report: no file /nonexistent/run.json'],
  ] as const;
  // No browser starts, so the processes can run at once.
  const [missing, ...errors] = await Promise.all([
    fail(['bench', 'generate', '--model', '/nonexistent/model.bin', '--tokenizer', tokenizer]),
    ...cases.map(([args]) => fail([...args])),
  ]);
  cases.forEach(([args, flag], i) => {
    const e = errors[i];
    expect(e?.code, args.join(' ')).toBe(2);
    expect(e?.stderr).toContain(flag);
    expect(e?.stderr).not.toMatch(/\n\s+at /);
  });
  expect(missing?.code).toBe(1);
  expect(missing?.stderr).toContain('model not found: /nonexistent/model.bin');
});
