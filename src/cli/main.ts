#!/usr/bin/env node
/**
 * `webgpu-tp`: the command line. Every command that computes runs the real engine in headless
 * Chromium through src/cli/browser.ts; only `synth` is plain Node.
 */
import { realpathSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { WebGpuTpError } from '../errors.js';
import { checkKvCacheOption as checkKvCache, type KvCacheOption } from '../gpu/kernels/kv-format.js';
import type { SynthShape } from '../model/synth.js';
import { devicesFor, parseDevices } from './devices.js';
import { parseSplitFlag } from './split-flag.js';
import { UsageError } from './usage-error.js';

const USAGE = `webgpu-tp — tensor-parallel LLM inference over WebGPU, in headless Chromium

Usage:
  webgpu-tp generate --model PATH|URL [--tokenizer PATH|URL] [--chat] [--devices DEVICES] [--tp N] [--split SHARES] [--prompt TEXT]
                     [--max-tokens N] [--temperature T] [--top-p P] [--seed S]
                     [--ignore-eos] [--no-cache] [--weight-only | --int8-activations] [--no-runq-exact] [--kv-cache auto|f16|f32] [--json]
      --int8-activations: Q4_0 and Q8_0 matrices take their input quantised to int8 per group of 32, as llama.cpp's
                 CPU path does (W4A8 / W8A8). The default where every rank is a CPU rank and the GGUF's quantised
                 matrices are Q8_0/Q4_0; a llama2.c v2 / runq.c Q8_0 model runs W8A8 wherever it runs
      --weight-only: f32 activations for every format (quantised weights only dequantised); a GGUF's default with a GPU rank
      --no-runq-exact: llama2.c v2 W8A8 computes runq.c's floats bit for bit unless given (run.c-order attention; at
                 TP > 1 the wo/w2 sums chained rank to rank); with it, the faster online-softmax attention and
                 all-reduce, whose last bits differ
      --devices: where the ranks run: auto, gpu, cpu (WebAssembly SIMD CPU ranks), high-performance, low-power
                 or fallback (GPU ranks on that adapter), each with --tp ranks; N ranks on the default adapter;
                 or one rank per item of a list: gpu,cpu (a GPU and a CPU rank), cpu,cpu
      --split: per-rank shares of the work, e.g. 0.5,0.25,0.25 (every axis: heads, MLP units, vocab rows), or per axis,
               the others even: heads=2,1 (a name starts each axis's list: heads=2,1,vocab=1,1; axes heads, hidden, vocab).
               A stories110M-shaped K-quant GGUF at --tp 2 takes heads=2,1: wo's 768 inputs are 3 super-blocks of 256
      --kv-cache: f16 halves the KV cache (f32 math); auto (default) is f16 where the adapter has shader-f16
      --model: a llama2.c .bin, a .gguf (its tokenizer inside), a .safetensors with config.json beside it, a Hugging Face
               model directory, or a URL prefix of one (https://huggingface.co/ORG/NAME/resolve/main)
      --tokenizer: tokenizer.bin or tokenizer.json (default: the GGUF's own, or tokenizer.json beside an HF model)
      --chat: the prompt is one user message, rendered by the model's chat template
  webgpu-tp synth --shape stories260K|stories15M|stories42M|stories110M [--seed S] [--quant q8_0] --out DIR
  webgpu-tp synth --format gguf --shape ... [--seed S] --quant f32,f16,q8_0,q4_0,q4_k_m,q5_k_m,q6_k --out DIR
                     (one Llama GGUF per quant, the tokenizer inside; q4_k_m, q5_k_m, q6_k: llama-quantize's mixes)
  webgpu-tp bench allreduce [--workers 2,4] [--sizes 2048,65536,4194304] [--transport sab|tab] [--json]
                     (--transport tab: one rank per tab over BroadcastChannel, beside SAB)
  webgpu-tp bench kernels [--json]   (GPU kernels; CPU-rank matmuls at TP 1 and 2 beside a read of their bytes)
  webgpu-tp bench generate --model PATH --tokenizer PATH [--devices DEVICES]... [--tp 1,2,4] [--max-tokens N] [--batch 1,8] [--spin N] [--profile] [--rounds N] [--no-runq-exact] [--weight-only | --int8-activations] [--kv-cache auto|f16|f32] [--json]
                     (--devices as for generate, once per configuration to compare: --devices cpu --devices gpu
                      measures both at each --tp degree, a list at its own; with CPU ranks, the memory roofline too:
                      roofline_tokens_per_s = weight bytes / the two-thread WebAssembly read of as many bytes)
  webgpu-tp bench generate --quant f32,f16,q8_0,q4_0,q4_0+int8,q4_k_m,q5_k_m,q6_k [--shape stories110M] [--tp 1] ...
                     (one synth GGUF per quant; decode tok/s of each against f32; QUANT runs the
                      engine's default activations, QUANT+int8 forces int8 (W4A8 / W8A8), QUANT+f32 weight-only)
  webgpu-tp bench peers [--shape stories110M] [--quant f32,q8_0,q4_0,q4_k_m,q5_k_m,q6_k] [--rounds 3] [--tokens 32] [--warmup 4] [--skip "ENGINE CONFIG,..."] [--json]
                     (wllama and onnxruntime-web beside us on the same synth model and prompt ids, one
                      context each, interleaved rounds; our decode ratio to the best peer per quant;
                      with q4_k_m, #25's targets: vs wllama wasm 2t, and vs q4_0 where both ran)
  webgpu-tp bench grammar --model PATH --tokenizer PATH [--devices cpu|gpu] [--tp N] [--max-tokens N] [--rounds N] [--json]
                     (structured output's cost: decode tok/s under a JSON schema over plain, interleaved
                      rounds, and the grammar mask's own ms per token)
  webgpu-tp bench all [--out DIR] [--max-tokens N]   (all of the above on synth models; writes DIR/<date>.json,
                                                      and report.html + report.png beside DIR)
  webgpu-tp bench report --from DIR/<date>.json [--out DIR]   (rebuilds report.html and report.png)

Chromium: CHROME_PATH, else the system one (Debian: apt-get install -y chromium), else Playwright's (npx playwright install chromium).`;

/** --kv-cache, refused in the flag's words rather than the SDK option's. */
function checkKvCacheOption(v: string | undefined): KvCacheOption {
  try {
    return checkKvCache(v);
  } catch {
    throw new UsageError(`--kv-cache is auto, f16 or f32; got ${JSON.stringify(v)}`);
  }
}

/**
 * A flag's number, checked here so a typo stops before Chromium starts and the message names
 * the flag (not the SDK option it becomes).
 */
function num(flag: string, value: string, o: { int?: boolean; min?: number; max?: number } = {}): number {
  const v = value.trim() === '' ? NaN : Number(value);
  const ok = Number.isFinite(v) && (!o.int || Number.isInteger(v)) && v >= (o.min ?? -Infinity) && v <= (o.max ?? Infinity);
  if (!ok) {
    const kind = o.int ? 'a whole number' : 'a number';
    const range = o.max !== undefined ? ` in [${o.min ?? '-∞'}, ${o.max}]` : o.min !== undefined ? ` ≥ ${o.min}` : '';
    throw new UsageError(`${flag} must be ${kind}${range}; got ${JSON.stringify(value)}`);
  }
  return v;
}

/** --weight-only and --int8-activations as engine options: each forces its kind, neither leaves the engine's default. */
function activationFlags(v: { 'weight-only'?: boolean; 'int8-activations'?: boolean }): { weightOnly?: true; int8Activations?: true } {
  if (v['weight-only'] && v['int8-activations']) throw new UsageError('--weight-only (f32 activations) and --int8-activations contradict each other: pass one');
  return { ...(v['weight-only'] && { weightOnly: true }), ...(v['int8-activations'] && { int8Activations: true }) };
}

/** A comma-separated flag of whole numbers ≥ min (`dflt` when absent). */
function list(flag: string, s: string | undefined, dflt: number[], min = 1): number[] {
  return s === undefined ? dflt : s.split(',').map((x) => num(flag, x, { int: true, min }));
}

/** Runs `webgpu-tp ...argv`; resolves with the exit status, rejects with what `failureStatus` reports. */
export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (!command || command === 'help' || argv.includes('--help') || argv.includes('-h')) {
    console.log(USAGE);
    return command ? 0 : 1;
  }
  if (command === 'generate') {
    const { values } = parseArgs({
      args: rest,
      options: {
        model: { type: 'string' },
        tokenizer: { type: 'string' },
        devices: { type: 'string' },
        tp: { type: 'string' },
        split: { type: 'string' },
        prompt: { type: 'string', default: '' },
        'max-tokens': { type: 'string', default: '256' },
        temperature: { type: 'string', default: '1.0' },
        'top-p': { type: 'string', default: '0.9' },
        seed: { type: 'string' },
        'ignore-eos': { type: 'boolean', default: false },
        'no-cache': { type: 'boolean', default: false },
        'weight-only': { type: 'boolean', default: false },
        'no-runq-exact': { type: 'boolean', default: false },
        'kv-cache': { type: 'string', default: 'auto' },
        'int8-activations': { type: 'boolean', default: false },
        json: { type: 'boolean', default: false },
        chat: { type: 'boolean', default: false },
      },
    });
    if (!values.model) throw new UsageError('generate needs --model');
    const { generateCommand } = await import('./generate.js');
    // --split or --devices alone sets the rank count (a list, a count, or the engine's choice); with --tp they must agree.
    const split = values.split === undefined ? undefined : parseSplitFlag(values.split);
    const devices = values.devices === undefined ? undefined : parseDevices(values.devices);
    const tp = values.tp === undefined ? (split || devices ? 0 : 1) : num('--tp', values.tp, { int: true, min: 1 });
    await generateCommand({
      model: values.model,
      tokenizer: values.tokenizer,
      tp,
      devices: devices && devicesFor(devices, tp),
      split,
      prompt: values.prompt ?? '',
      maxTokens: num('--max-tokens', values['max-tokens']!, { int: true, min: 1 }),
      temperature: num('--temperature', values.temperature!, { min: 0 }),
      topP: num('--top-p', values['top-p']!, { min: 0, max: 1 }),
      seed: values.seed === undefined ? Date.now() : num('--seed', values.seed, { int: true }),
      ignoreEos: values['ignore-eos'] ?? false,
      json: values.json ?? false,
      cache: !values['no-cache'],
      chat: values.chat ?? false,
      ...activationFlags(values),
      runqExact: !values['no-runq-exact'],
      kvCache: checkKvCacheOption(values['kv-cache']),
    });
    return 0;
  }
  if (command === 'synth') {
    const { values } = parseArgs({
      args: rest,
      options: { shape: { type: 'string' }, seed: { type: 'string', default: '1' }, out: { type: 'string' }, quant: { type: 'string' }, format: { type: 'string' } },
    });
    const shape = synthShape(values.shape);
    if (!values.out) throw new UsageError('synth needs --out DIR');
    const { synthCommand } = await import('./synth.js');
    const written = await synthCommand({ shape, seed: num('--seed', values.seed!, { int: true }), out: values.out, quant: values.quant?.split(',').map((q) => q.trim()), format: values.format });
    console.log(JSON.stringify(written));
    return 0;
  }
  if (command === 'bench') {
    const [what, ...args] = rest;
    if (what === 'peers') return (await import('./bench-peers.js')).benchPeersMain(args);
    if (what === 'grammar') return (await import('./bench-grammar.js')).benchGrammarMain(args);
    const { values } = parseArgs({
      args,
      options: {
        workers: { type: 'string' },
        sizes: { type: 'string' },
        model: { type: 'string' },
        tokenizer: { type: 'string' },
        devices: { type: 'string', multiple: true },
        tp: { type: 'string' },
        'max-tokens': { type: 'string', default: '64' },
        spin: { type: 'string' },
        batch: { type: 'string' },
        profile: { type: 'boolean', default: false },
        rounds: { type: 'string', default: '1' },
        'no-runq-exact': { type: 'boolean', default: false },
        'kv-cache': { type: 'string', default: 'auto' },
        out: { type: 'string' },
        from: { type: 'string' },
        transport: { type: 'string', default: 'sab' },
        quant: { type: 'string' },
        shape: { type: 'string' },
        'int8-activations': { type: 'boolean', default: false },
        'weight-only': { type: 'boolean', default: false },
        json: { type: 'boolean', default: false },
      },
    });
    let report: unknown;
    if (what === 'allreduce' && values.transport === 'tab') {
      const { benchAllReduceTab } = await import('./bench-allreduce.js');
      report = await benchAllReduceTab({ workers: list('--workers', values.workers, [2], 2), sizes: list('--sizes', values.sizes, [2048, 65536, 4194304]) });
    } else if (what === 'allreduce') {
      if (values.transport !== 'sab') throw new UsageError('--transport is sab or tab');
      const { benchAllReduce, formatAllReduceReport } = await import('./bench-allreduce.js');
      const r = await benchAllReduce({ workers: list('--workers', values.workers, [2, 4], 2), sizes: list('--sizes', values.sizes, [2048, 65536, 4194304]) });
      if (!values.json) {
        console.log(formatAllReduceReport(r));
        return 0;
      }
      report = r;
    } else if (what === 'kernels') {
      const { benchKernels } = await import('./bench-kernels.js');
      report = await benchKernels({});
    } else if (what === 'generate') {
      const quant = values.quant?.split(',').map((q) => q.trim());
      if (!quant && (!values.model || (!values.tokenizer && !values.model.endsWith('.gguf')))) throw new UsageError('bench generate needs --model and --tokenizer (a .gguf needs no tokenizer), or --quant');
      const shape = synthShape(values.shape ?? 'stories110M');
      if (values.model) (await import('./generate.js')).checkGenerateInputs({ model: values.model, tokenizer: values.tokenizer });
      const { benchGenerate } = await import('./bench-generate.js');
      report = await benchGenerate({
        model: values.model,
        tokenizer: values.tokenizer,
        quant,
        shape,
        devices: values.devices?.map(parseDevices),
        tp: values.tp === undefined ? undefined : list('--tp', values.tp, [1, 2]),
        maxTokens: num('--max-tokens', values['max-tokens']!, { int: true, min: 1 }),
        spin: values.spin === undefined ? undefined : num('--spin', values.spin, { int: true, min: 0 }),
        batch: list('--batch', values.batch, [1]),
        profile: values.profile,
        rounds: num('--rounds', values.rounds!, { int: true, min: 1 }),
        runqExact: !values['no-runq-exact'],
        kvCache: checkKvCacheOption(values['kv-cache']),
        ...activationFlags(values),
      });
    } else if (what === 'all') {
      const { benchAll } = await import('./bench-all.js');
      report = await benchAll({ out: values.out ?? 'bench/results', maxTokens: num('--max-tokens', values['max-tokens']!, { int: true, min: 1 }) });
    } else if (what === 'report') {
      if (!values.from) throw new UsageError('bench report needs --from bench/results/<date>.json');
      const { writeReport } = await import('./bench-report.js');
      const { readFileSync, existsSync } = await import('node:fs');
      if (!existsSync(values.from)) throw new UsageError(`bench report: no file ${values.from} (\`webgpu-tp bench all\` writes one)`);
      const out = values.out ?? 'bench';
      report = { html: `${out}/report.html`, png: `${out}/report.png` };
      await writeReport(JSON.parse(readFileSync(values.from, 'utf8')), `${out}/report.html`, `${out}/report.png`);
    } else {
      throw new UsageError('bench needs allreduce, kernels, generate, peers, grammar, all or report');
    }
    console.log(JSON.stringify(report, null, values.json ? 0 : 2));
    // A quantisation that failed is in the report, and the exit status says so too.
    return (report as { failed?: unknown[] }).failed?.length ? 1 : 0;
  }
  throw new UsageError(`unknown command ${command}`);
}

const SHAPES: readonly SynthShape[] = ['stories260K', 'stories15M', 'stories42M', 'stories110M'];

function synthShape(value: string | undefined): SynthShape {
  const shape = SHAPES.find((s) => s === value);
  if (!shape) throw new UsageError(`--shape is one of ${SHAPES.join(', ')}${value === undefined ? '' : `; got ${value}`}`);
  return shape;
}

/** node:util parseArgs's own errors (an unknown option, a missing value): a usage mistake, not a crash. */
function isArgError(e: unknown): boolean {
  const code = (e as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code.startsWith('ERR_PARSE_ARGS_');
}

/** Prints why `main` failed, in one line unless WEBGPU_TP_DEBUG is set; returns the exit status (2: usage). */
export function failureStatus(e: unknown): number {
  if (e instanceof UsageError || isArgError(e)) console.error(`${(e as Error).message}\n\n${USAGE}`);
  else if (e instanceof WebGpuTpError) console.error(`error [${e.code}]: ${e.message}`);
  else if (e instanceof Error && !process.env.WEBGPU_TP_DEBUG) console.error(`error: ${e.message}\n(set WEBGPU_TP_DEBUG=1 for the stack)`);
  else console.error(e);
  return e instanceof UsageError || isArgError(e) ? 2 : 1;
}

// Run as the command (also through npm's bin symlink), not when a test imports `main`.
function isEntry(): boolean {
  try {
    return process.argv[1] !== undefined && import.meta.url === pathToFileURL(realpathSync(process.argv[1])).href;
  } catch {
    return false;
  }
}
if (isEntry()) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (e: unknown) => process.exit(failureStatus(e)),
  );
}
