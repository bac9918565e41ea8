#!/usr/bin/env node
/**
 * `webgpu-tp`: the command line. Every command that computes runs the real engine in headless
 * Chromium through src/cli/browser.ts; only `synth` is plain Node.
 */
import { parseArgs } from 'node:util';
import { WebGpuTpError } from '../errors.js';

const USAGE = `webgpu-tp — tensor-parallel LLM inference over WebGPU, in headless Chromium

Usage:
  webgpu-tp generate --model PATH|URL --tokenizer PATH|URL [--tp N] [--prompt TEXT]
                     [--max-tokens N] [--temperature T] [--top-p P] [--seed S]
                     [--ignore-eos] [--no-cache] [--weight-only] [--json]
                     (a llama2.c v2 / runq.c Q8_0 model runs W8A8 as runq.c does;
                      --weight-only keeps f32 activations)
  webgpu-tp synth --shape stories15M|stories42M|stories110M [--seed S] [--quant q8_0] --out DIR
  webgpu-tp bench allreduce [--workers 2,4] [--sizes 2048,65536,4194304] [--json]
  webgpu-tp bench kernels [--json]
  webgpu-tp bench generate --model PATH --tokenizer PATH [--tp 1,2,4] [--max-tokens N] [--batch 1,8] [--spin N] [--json]
  webgpu-tp bench all [--out DIR] [--max-tokens N]   (all of the above on synth models; writes DIR/<date>.json)

Chromium: CHROME_PATH, else /usr/bin/chromium (Debian: apt-get install -y chromium).`;

const list = (s: string | undefined, dflt: number[]): number[] =>
  s === undefined ? dflt : s.split(',').map((x) => Number(x.trim()));

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (!command || command === '--help' || command === '-h' || command === 'help') {
    console.log(USAGE);
    return command ? 0 : 1;
  }
  if (command === 'generate') {
    const { values } = parseArgs({
      args: rest,
      options: {
        model: { type: 'string' },
        tokenizer: { type: 'string' },
        tp: { type: 'string', default: '1' },
        prompt: { type: 'string', default: '' },
        'max-tokens': { type: 'string', default: '256' },
        temperature: { type: 'string', default: '1.0' },
        'top-p': { type: 'string', default: '0.9' },
        seed: { type: 'string' },
        'ignore-eos': { type: 'boolean', default: false },
        'no-cache': { type: 'boolean', default: false },
        'weight-only': { type: 'boolean', default: false },
        json: { type: 'boolean', default: false },
      },
    });
    if (!values.model || !values.tokenizer) throw new UsageError('generate needs --model and --tokenizer');
    const { generateCommand } = await import('./generate.js');
    await generateCommand({
      model: values.model,
      tokenizer: values.tokenizer,
      tp: Number(values.tp),
      prompt: values.prompt ?? '',
      maxTokens: Number(values['max-tokens']),
      temperature: Number(values.temperature),
      topP: Number(values['top-p']),
      seed: values.seed === undefined ? Date.now() : Number(values.seed),
      ignoreEos: values['ignore-eos'] ?? false,
      json: values.json ?? false,
      cache: !values['no-cache'],
      weightOnly: values['weight-only'] ?? false,
    });
    return 0;
  }
  if (command === 'synth') {
    const { values } = parseArgs({
      args: rest,
      options: { shape: { type: 'string' }, seed: { type: 'string', default: '1' }, out: { type: 'string' }, quant: { type: 'string' } },
    });
    const shape = values.shape;
    if (shape !== 'stories15M' && shape !== 'stories42M' && shape !== 'stories110M') {
      throw new UsageError('synth needs --shape stories15M|stories42M|stories110M');
    }
    if (!values.out) throw new UsageError('synth needs --out DIR');
    const { synthCommand } = await import('./synth.js');
    const written = await synthCommand({ shape, seed: Number(values.seed), out: values.out, quant: values.quant?.split(',').map((q) => q.trim()) });
    console.log(JSON.stringify(written));
    return 0;
  }
  if (command === 'bench') {
    const [what, ...args] = rest;
    const { values } = parseArgs({
      args,
      options: {
        workers: { type: 'string' },
        sizes: { type: 'string' },
        model: { type: 'string' },
        tokenizer: { type: 'string' },
        tp: { type: 'string' },
        'max-tokens': { type: 'string', default: '64' },
        spin: { type: 'string' },
        batch: { type: 'string' },
        out: { type: 'string' },
        json: { type: 'boolean', default: false },
      },
    });
    let report: unknown;
    if (what === 'allreduce') {
      const { benchAllReduce } = await import('./bench-allreduce.js');
      report = await benchAllReduce({ workers: list(values.workers, [2, 4]), sizes: list(values.sizes, [2048, 65536, 4194304]) });
    } else if (what === 'kernels') {
      const { benchKernels } = await import('./bench-kernels.js');
      report = await benchKernels({});
    } else if (what === 'generate') {
      if (!values.model || !values.tokenizer) throw new UsageError('bench generate needs --model and --tokenizer');
      const { benchGenerate } = await import('./bench-generate.js');
      report = await benchGenerate({
        model: values.model,
        tokenizer: values.tokenizer,
        tp: list(values.tp, [1, 2]),
        maxTokens: Number(values['max-tokens']),
        spin: values.spin === undefined ? undefined : Number(values.spin),
        batch: list(values.batch, [1]),
      });
    } else if (what === 'all') {
      const { benchAll } = await import('./bench-all.js');
      report = await benchAll({ out: values.out ?? 'bench/results', maxTokens: Number(values['max-tokens']) });
    } else {
      throw new UsageError('bench needs allreduce, kernels, generate or all');
    }
    console.log(JSON.stringify(report, null, values.json ? 0 : 2));
    return 0;
  }
  throw new UsageError(`unknown command ${command}`);
}

class UsageError extends Error {}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (e: unknown) => {
    if (e instanceof UsageError) console.error(`${e.message}\n\n${USAGE}`);
    else if (e instanceof WebGpuTpError) console.error(`error [${e.code}]: ${e.message}`);
    else console.error(e);
    process.exit(e instanceof UsageError ? 2 : 1);
  },
);
