/**
 * The CLI's usage and input errors, which it names before any browser starts. The first test
 * runs the command as a process from source (tsx in Node): the exit statuses and stderr of the
 * real entry point. The rest call the same `main` and `failureStatus` in this process, which
 * is what the process runs between its arguments and its exit. What needs a browser is
 * e2e/cli.spec.ts's.
 */
import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it, vi } from 'vitest';
import { repoRoot, sharedModelsDir } from './browser.js';
import { failureStatus, main } from './main.js';

const entry = resolve(repoRoot, 'src/cli/main.ts');
const model = resolve(sharedModelsDir, 'stories260K.bin');
const tokenizer = resolve(sharedModelsDir, 'tok512.bin');

interface Exit {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `webgpu-tp ...args` as a process; resolves with its exit code and output, whatever the code. */
function processCli(args: string[]): Promise<Exit> {
  return promisify(execFile)(process.execPath, ['--import', 'tsx', entry, ...args], { timeout: 120_000 }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, stdout: e.stdout, stderr: e.stderr }),
  );
}

/** Runs `webgpu-tp ...args` in this process, its console output captured: one at a time. */
async function cli(args: string[]): Promise<Exit> {
  const out: string[] = [];
  const err: string[] = [];
  const log = vi.spyOn(console, 'log').mockImplementation((...a: unknown[]) => void out.push(`${a.join(' ')}\n`));
  const error = vi.spyOn(console, 'error').mockImplementation((...a: unknown[]) => void err.push(`${a.join(' ')}\n`));
  try {
    const code = await main(args).catch(failureStatus);
    return { code, stdout: out.join(''), stderr: err.join('') };
  } finally {
    log.mockRestore();
    error.mockRestore();
  }
}

/** `cli` on each argument list in turn. */
async function each(argss: string[][]): Promise<Exit[]> {
  const r: Exit[] = [];
  for (const a of argss) r.push(await cli(a));
  return r;
}

describe('webgpu-tp usage errors', () => {
  it('`--help` after a command prints the usage; an unknown option is a usage error, not a stack trace', async () => {
    const [help, err, missing] = await Promise.all([
      processCli(['bench', 'allreduce', '--help']), processCli(['generate', '--modle', model]), processCli(['generate', '--model', '/nonexistent/model.bin', '--tokenizer', tokenizer, '--no-cache']),
    ]);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('webgpu-tp bench allreduce');
    expect(err.code).toBe(2);
    expect(err.stderr).toContain("Unknown option '--modle'");
    expect(err.stderr).toContain('Usage:');
    expect(err.stderr).not.toContain('    at ');
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('error [INVALID_ARGUMENT]: model not found: /nonexistent/model.bin. Check the --model path');
    expect(missing.stderr).not.toMatch(/\n\s+at /);
  });

  it('a missing model file or tokenizer is a typed error named before any browser starts, not a stack trace', async () => {
    const fail = (args: string[]) => cli(['generate', ...args, '--no-cache']);
    const missing = await fail(['--model', '/nonexistent/model.bin', '--tokenizer', tokenizer]);
    const noTokenizer = await fail(['--model', model]);
    const badTokenizer = await fail(['--model', model, '--tokenizer', '/nonexistent/tok.bin']);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('error [INVALID_ARGUMENT]: model not found: /nonexistent/model.bin. Check the --model path');
    expect(missing.stderr).not.toMatch(/\n\s+at /);
    expect(noTokenizer.stderr).toContain('a llama2.c model needs --tokenizer');
    expect(noTokenizer.stderr).not.toMatch(/\n\s+at /);
    expect(badTokenizer.stderr).toContain('tokenizer not found: /nonexistent/tok.bin');
  });

  it('a flag that is not a number in range, or flags that contradict each other, are usage errors naming the flags, before any browser starts; so is a missing file to bench', async () => {
    const cases = [
      [['generate', '--model', model, '--tokenizer', tokenizer, '--tp', 'abc'], '--tp must be a whole number ≥ 1; got "abc"'],
      [['generate', '--model', model, '--tokenizer', tokenizer, '--tp', '0'], '--tp must be a whole number ≥ 1; got "0"'],
      [['generate', '--model', model, '--tokenizer', tokenizer, '--max-tokens', '1.5'], '--max-tokens must be a whole number ≥ 1'],
      [['generate', '--model', model, '--tokenizer', tokenizer, '--top-p', '2'], '--top-p must be a number in [0, 1]'],
      [['generate', '--model', model, '--tokenizer', tokenizer, '--temperature', 'hot'], '--temperature must be a number ≥ 0'],
      [['bench', 'generate', '--model', model, '--tokenizer', tokenizer, '--batch', '0'], '--batch must be a whole number ≥ 1'],
      [['bench', 'allreduce', '--workers', '2,x'], '--workers must be a whole number ≥ 2; got "x"'],
      [['bench', 'report', '--from', '/nonexistent/run.json'], 'bench report: no file /nonexistent/run.json'],
      [['generate', '--model', model, '--tokenizer', tokenizer, '--weight-only', '--int8-activations'], '--weight-only (f32 activations) and --int8-activations contradict each other'],
      [['bench', 'generate', '--model', model, '--tokenizer', tokenizer, '--int8-activations', '--weight-only'], '--weight-only (f32 activations) and --int8-activations contradict each other'],
    ] as const;
    const [missing, ...errors] = await each([
      ['bench', 'generate', '--model', '/nonexistent/model.bin', '--tokenizer', tokenizer],
      ...cases.map(([args]) => [...args]),
    ]);
    cases.forEach(([args, flag], i) => {
      const e = errors[i]!;
      expect(e.code, args.join(' ')).toBe(2);
      expect(e.stderr).toContain(flag);
      expect(e.stderr).not.toMatch(/\n\s+at /);
    });
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('model not found: /nonexistent/model.bin');
  });

  it('a --devices value that is no kind, count or list is a usage error naming what it takes', async () => {
    const [generate, bench] = await each([
      ['generate', '--model', model, '--tokenizer', tokenizer, '--devices', 'tpu'],
      ['bench', 'generate', '--model', model, '--tokenizer', tokenizer, '--devices', 'cpu', '--devices', 'cpu,x'],
    ]);
    for (const e of [generate, bench]) {
      expect(e.code).toBe(2);
      expect(e.stderr).toContain('--devices is auto, gpu, cpu, high-performance, low-power, fallback, a rank count, or a comma list');
      expect(e.stderr).not.toMatch(/\n\s+at /);
    }
    expect(bench.stderr).toContain('got "cpu,x"');
  });
});
