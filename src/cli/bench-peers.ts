/**
 * `webgpu-tp bench peers`: the engine beside the runtimes a user would pick instead, in one
 * headless Chromium run on the same synth model: wllama (llama.cpp in WebAssembly, the same
 * GGUF files) and onnxruntime-web (an ONNX export of the same f32 weights). Every configuration
 * gets its own browser context, loads once, and decodes greedily from the same prompt ids with
 * EOS ignored; rounds are interleaved (A B A B) and our ratio to the best peer is taken round by
 * round. The K-quant mixes (q4_k_m, q5_k_m, q6_k) run the same file in both; a configuration
 * that refuses a file (CPU ranks without K-quant kernels) is a failed row like any other.
 */
import { existsSync, readFileSync } from 'node:fs';
import { rename, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { parseArgs } from 'node:util';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { Page } from 'playwright-core';
import { appDir, launchChromium, serveStatic, type LaunchedBrowser, type StaticServer } from './browser.js';
import { synthCommand } from './synth.js';
import { InvalidArgumentError, type SerializedError } from '../errors.js';
import { GGUF_QUANTS, type GgufQuant } from '../model/formats/gguf-write.js';
import { GGUF_MIXES, isGgufMix } from '../model/formats/gguf-mix.js';
import type { ModelConfig } from '../model/config.js';
import { wholeBlockSplit } from './bench-peers-split.js';
import { loadLlama2c } from '../model/formats/llama2c.js';
import { llama2cConfig, SYNTH_SHAPES, synthTokenizerBytes, type SynthShape } from '../model/synth.js';
import { Tokenizer } from '../model/tokenizer/tokenizer.js';
import { exportOnnx } from '../export/onnx.js';
import type { PeerLoaded, PeerRun, PeerRunRequest, PeerSpec } from './page/peers-types.js';
import { formatPeersTable, issue25Targets, ratioToBestPeer, summarize, type ConfigRuns, type PeerConfig, type PeersReport } from './bench-peers-summary.js';

export const PEERS_PAGE = '/src/cli/page/peers.html';
/** The fewest timed tokens a run the budget stops early still gives. */
export const MIN_TIMED = 4;
/** What both sides read: the GGUFs (ONNX: f32 only). */
export const PEER_QUANTS: readonly GgufQuant[] = ['f32', 'q8_0', 'q4_0', ...GGUF_MIXES];
const PROMPT = 'Once upon a time, there was a little girl who loved to play in the park with her friends.';

export interface BenchPeersOptions {
  shape: SynthShape;
  /** GGUF quantisations (PEER_QUANTS; default f32, q8_0, q4_0); ONNX runs f32 only. */
  quant?: GgufQuant[];
  /** Timed decode tokens per run (default 32), after `warmup` (default 4). */
  tokens?: number;
  warmup?: number;
  /** Interleaved timed rounds (default 3). */
  rounds?: number;
  /**
   * Seconds of decoding one timed run of a configuration may take (default 6; its check run,
   * whose first 32 tokens are compared, gets twice that): a slower run stops at its next token
   * once it has its warm-up and MIN_TIMED timed tokens. A configuration whose runs so far took
   * more than (rounds + 1) budgets, prefill included, gets no further round (it keeps at least
   * one), so a slow prefill bounds the run too. Either cut is reported in the row's note, with
   * its measured rate.
   */
  budget?: number;
  /** Where the synth files are kept between runs (default WEBGPU_TP_SYNTH_DIR or the temp dir). */
  synthDir?: string;
  /** Configurations to leave out, as `engine config` (e.g. `onnxruntime-web webgpu`). */
  skip?: string[];
  /** Progress lines (default: none). */
  log?: (line: string) => void;
}

type PageWindow = { tpPeers: { load(s: PeerSpec): Promise<PeerLoaded | { error: SerializedError }>; run(r: PeerRunRequest): Promise<PeerRun | { error: SerializedError }> } };

/** One configuration to load: how the row names it, and what the page loads. */
interface Planned { config: PeerConfig; spec: (files: ModelFiles) => PeerSpec }
interface ModelFiles { gguf: string; onnx?: string }

/**
 * Every configuration of one quantisation of a model; ours at GPU TP 1 first (the tokens everyone
 * is compared with). Our TP 2 rows split the heads unevenly where an even split would cut a block
 * of wo, the MLP and vocab even (`wholeBlockSplit`), and their config names the heads per rank
 * (`gpu tp2 heads 8:4`).
 */
export function plannedConfigs(quant: GgufQuant, ctx: number, model: ModelConfig): Planned[] {
  const quantised = quant === 'q8_0' || quant === 'q4_0';
  const ours = (devices: 'gpu' | 'cpu', tp: number): Planned => {
    const split = wholeBlockSplit(model, quant, tp);
    const heads = split?.heads ? ` heads ${split.heads.join(':')}` : '';
    // llama.cpp quantises activations for every quantised matrix (Q8_K for K-quants), so ours runs
    // its int8-activation mode wherever it has one: Q8_0/Q4_0 on both rank kinds, K-quant mixes on
    // CPU ranks (GPU ranks keep f32 activations against q8_m weights, so those rows stay weight-only).
    const int8 = quantised || (isGgufMix(quant) && devices === 'cpu');
    return {
      config: { engine: 'webgpu-tp', config: `${devices} tp${tp}${heads}${int8 ? ' int8' : ''}`, quant, threads: null, tp, devices },
      // the kind is pinned: under auto a fallback adapter gets CPU ranks, and the GPU row would be a second CPU one
      spec: (f) => ({ engine: 'ours', model: f.gguf, tp, devices, ...(int8 && { int8Activations: true }), ...(split && { split }) }),
    };
  };
  const wllama = (threads: number, gpu: boolean): Planned => ({
    config: { engine: 'wllama', config: gpu ? 'webgpu' : `wasm ${threads}t`, quant, threads, tp: null, devices: gpu ? 'webgpu' : 'wasm' },
    spec: (f) => ({ engine: 'wllama', model: f.gguf, threads, gpu, ctx }),
  });
  const ort = (threads: number, ep: 'wasm' | 'webgpu'): Planned => ({
    config: { engine: 'onnxruntime-web', config: ep === 'webgpu' ? 'webgpu' : `wasm ${threads}t`, quant, threads, tp: null, devices: ep },
    spec: (f) => ({ engine: 'onnxruntime-web', model: f.onnx!, threads, ep }),
  });
  return [
    ours('gpu', 1), ours('gpu', 2), ours('cpu', 1), ours('cpu', 2),
    wllama(1, false), wllama(2, false), wllama(1, true),
    ...(quant === 'f32' ? [ort(1, 'wasm'), ort(2, 'wasm'), ort(1, 'webgpu')] : []),
  ];
}

/** The directories the peers' own files are served from: their npm packages, never a CDN. */
export function peerAssetDirs(): Record<string, string> {
  const require = createRequire(import.meta.url);
  try {
    return {
      '/peers/wllama/': dirname(require.resolve('@wllama/wllama')),
      '/peers/ort/': dirname(require.resolve('onnxruntime-web')),
    };
  } catch {
    throw new InvalidArgumentError('bench peers needs the devDependencies @wllama/wllama and onnxruntime-web', 'Run `npm ci` in the webgpu-tp checkout');
  }
}

/** The synth files one shape needs, written once into `dir` (a later run reuses them). */
async function synthFiles(shape: SynthShape, quants: GgufQuant[], dir: string, log: (l: string) => void): Promise<Record<string, ModelFiles>> {
  const files: Record<string, ModelFiles> = {};
  for (const q of quants) {
    const gguf = join(dir, `${shape}-synth-${q}.gguf`);
    if (!existsSync(gguf)) {
      log(`writing ${gguf}`);
      await synthCommand({ shape, seed: 1, out: dir, format: 'gguf', quant: [q] });
    }
    files[q] = { gguf };
  }
  if (quants.includes('f32')) {
    const onnx = join(dir, `${shape}-synth-f32.onnx`);
    if (!existsSync(onnx)) {
      const bin = join(dir, `${shape}-synth.bin`);
      if (!existsSync(bin)) await synthCommand({ shape, seed: 1, out: dir });
      log(`exporting ${onnx}`);
      const b = readFileSync(bin);
      const whole = b.byteOffset === 0 && b.byteLength === b.buffer.byteLength ? b.buffer : b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength);
      await writeFile(`${onnx}.part`, exportOnnx(loadLlama2c(whole as ArrayBuffer)));
      await rename(`${onnx}.part`, onnx);
    }
    files.f32!.onnx = onnx;
  }
  return files;
}

const message = (e: SerializedError) => `${e.code ? `[${e.code}] ` : ''}${e.message}`.replace(/\s+/g, ' ').slice(0, 400);

/** One configuration's own context and page. */
interface Slot { runs: ConfigRuns; page?: Page }

export async function benchPeers(o: BenchPeersOptions): Promise<PeersReport> {
  const quants = o.quant ?? ['f32', 'q8_0', 'q4_0'];
  const bad = quants.filter((q) => !PEER_QUANTS.includes(q));
  if (bad.length) throw new InvalidArgumentError(`bench peers --quant takes ${PEER_QUANTS.join(', ')} (got ${bad.join(', ')}; ${GGUF_QUANTS.join(', ')} exist as GGUF)`);
  const tokens = o.tokens ?? 32;
  const warmup = o.warmup ?? 4;
  const rounds = Math.max(1, o.rounds ?? 3);
  const budgetS = o.budget ?? 6;
  const budget = { budgetMs: budgetS * 1000, minTokens: 1 + warmup + MIN_TIMED };
  const log = o.log ?? (() => {});
  const dir = o.synthDir ?? process.env.WEBGPU_TP_SYNTH_DIR ?? join(tmpdir(), 'webgpu-tp-synth');
  const config = llama2cConfig(SYNTH_SHAPES[o.shape]);
  // the prompt as ids from our tokenizer, passed as ids to every engine (BOS first)
  const prompt = Tokenizer.parse(synthTokenizerBytes(config.vocabSize, 1), config.vocabSize).encode(PROMPT, true);
  // token 0 comes from prefill, then the warm-up steps, then the timed ones
  const maxTokens = 1 + warmup + tokens;
  const compared = Math.min(32, maxTokens);
  const files = await synthFiles(o.shape, quants, dir, log);
  const model = `${o.shape}-synth`;
  const report: PeersReport = { results: [], ratios: {} };
  let q4km: ConfigRuns[] | undefined;
  const server: StaticServer = await serveStatic({ root: appDir, mounts: { ...peerAssetDirs(), '/files/': dir } });
  let browser: LaunchedBrowser | undefined;
  try {
    browser = await launchChromium({});
    for (const quant of quants) {
      const f = files[quant]!;
      const served: ModelFiles = { gguf: `/files/${encodeURIComponent(f.gguf.slice(dir.length + 1))}`, ...(f.onnx && { onnx: `/files/${encodeURIComponent(f.onnx.slice(dir.length + 1))}` }) };
      const slots: Slot[] = [];
      const planned = plannedConfigs(quant, Math.min(config.seqLen, 2 * maxTokens + prompt.length), config);
      for (const p of planned.filter((x) => !o.skip?.includes(`${x.config.engine} ${x.config.config}`))) {
        const slot: Slot = { runs: { config: p.config, rounds: [] } };
        slots.push(slot);
        log(`${model}/${quant} ${p.config.engine} ${p.config.config}: loading`);
        const context = await browser.browser!.newContext();
        const page = await context.newPage();
        try {
          await page.goto(`${server.url}${PEERS_PAGE}`);
          await page.waitForFunction(() => (window as unknown as { tpReady?: boolean }).tpReady === true, null, { timeout: 60_000 });
          const loaded = await page.evaluate((s) => (window as unknown as PageWindow).tpPeers.load(s), p.spec(served));
          if ('error' in loaded) throw loaded.error;
          slot.runs.loadMs = loaded.loadMs;
          // the first run is the correctness check (with each step's top two logits) and the warm-up
          const check = await runOnce(page, { prompt, text: PROMPT, maxTokens, top2: true, ...budget, budgetMs: 2 * budget.budgetMs });
          if ('error' in check) throw check.error;
          slot.runs.check = check;
          slot.page = page;
          log(`  ${loaded.backend}, load ${loaded.loadMs.toFixed(0)} ms, ${check.tokens.length} tokens checked`);
        } catch (e) {
          slot.runs.error = isSerialized(e) ? message(e) : String(e);
          log(`  failed: ${slot.runs.error}`);
          await context.close();
        }
      }
      // interleaved: each round runs every loaded configuration once
      for (let r = 0; r < rounds; r++) {
        for (const s of slots) {
          if (!s.page || (r > 0 && spentMs(s.runs) > (rounds + 1) * budget.budgetMs)) continue;
          const run = await runOnce(s.page, { prompt, text: PROMPT, maxTokens, top2: false, ...budget });
          if ('error' in run) {
            s.runs.error = message(run.error);
            await s.page.context().close();
            s.page = undefined;
            continue;
          }
          s.runs.rounds.push(run);
        }
        log(`${model}/${quant}: round ${r + 1}/${rounds} done`);
      }
      for (const s of slots) await s.page?.context().close();
      const runs = slots.map((s) => s.runs);
      report.results.push(...summarize(model, runs, runs[0], { warmup, compared, promptTokens: prompt.length, full: { tokens, rounds, budgetS } }));
      const ratio = ratioToBestPeer(runs, warmup);
      if (ratio) report.ratios[`${model}/${quant}`] = ratio;
      if (quant === 'q4_k_m') q4km = runs;
    }
    if (q4km) report.targets = issue25Targets(model, q4km, warmup, report.results);
  } finally {
    await browser?.close().catch(() => {});
    await server.close();
  }
  return report;
}

/** The time a configuration's runs took so far (its check and its rounds, prefill and decoding). */
function spentMs(r: ConfigRuns): number {
  return [r.check, ...r.rounds].reduce((t, x) => t + (x ? x.prefillMs + x.stepMs.reduce((a, b) => a + b, 0) : 0), 0);
}

function isSerialized(e: unknown): e is SerializedError {
  return typeof e === 'object' && e !== null && 'message' in e && !(e instanceof Error);
}

/** One run in the page; a crashed page or closed context comes back as an error like the page's own. */
async function runOnce(page: Page, r: PeerRunRequest): Promise<PeerRun | { error: SerializedError }> {
  try {
    return await page.evaluate((req) => (window as unknown as PageWindow).tpPeers.run(req), r);
  } catch (e) {
    return { error: { name: 'Error', message: e instanceof Error ? e.message : String(e) } };
  }
}

const USAGE = 'bench peers [--shape stories110M] [--quant f32,q8_0,q4_0,q4_k_m,q5_k_m,q6_k] [--rounds 3] [--tokens 32] [--warmup 4] [--budget 6] [--skip "onnxruntime-web webgpu,..."] [--synth-dir DIR] [--json]';

/**
 * The command: its own flags, the report as JSON on stdout with --json (the table then on
 * stderr), else the table on stdout. Exit status 1 if a configuration failed.
 */
export async function benchPeersMain(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      shape: { type: 'string', default: 'stories110M' }, quant: { type: 'string' }, rounds: { type: 'string', default: '3' },
      tokens: { type: 'string', default: '32' }, budget: { type: 'string', default: '6' }, warmup: { type: 'string', default: '4' }, 'synth-dir': { type: 'string' }, skip: { type: 'string' }, json: { type: 'boolean', default: false },
    },
  });
  const int = (flag: string, v: string, min: number) => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < min) throw new InvalidArgumentError(`--${flag} must be a whole number ≥ ${min}; got ${JSON.stringify(v)}`, USAGE);
    return n;
  };
  const shape = values.shape as SynthShape;
  if (!Object.hasOwn(SYNTH_SHAPES, shape)) throw new InvalidArgumentError(`--shape is one of ${Object.keys(SYNTH_SHAPES).join(', ')}; got ${shape}`, USAGE);
  const report = await benchPeers({
    shape, quant: values.quant?.split(',').map((q) => q.trim() as GgufQuant), rounds: int('rounds', values.rounds!, 1),
    tokens: int('tokens', values.tokens!, 1), warmup: int('warmup', values.warmup!, 0), budget: int('budget', values.budget!, 1), synthDir: values['synth-dir'],
    skip: values.skip?.split(',').map((x) => x.trim()),
    log: (l) => console.error(l),
  });
  if (values.json) {
    console.log(JSON.stringify(report));
    console.error(formatPeersTable(report));
  } else console.log(formatPeersTable(report));
  return report.results.some((r) => r.error) ? 1 : 0;
}
