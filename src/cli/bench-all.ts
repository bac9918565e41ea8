/**
 * `webgpu-tp bench all` (`npm run bench`): every benchmark in one run, on synthetic checkpoints
 * of real shape (written once to a cache directory, never committed), GPU and CPU ranks side
 * by side, saved as JSON.
 */
import { mkdirSync, writeFileSync, existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { tmpdir } from 'node:os';
import { benchAllReduce } from './bench-allreduce.js';
import { benchKernels } from './bench-kernels.js';
import { benchGenerate } from './bench-generate.js';
import { synthCommand } from './synth.js';
import { writeReport } from './bench-report.js';
import { parseDevices } from './devices.js';
import { benchPeers } from './bench-peers.js';
import { mergePeers } from './bench-report-peers.js';

/**
 * GPU ranks on the high-performance adapter beside CPU ranks: an explicit GPU spec, so the GPU
 * cases stay GPU ranks whatever the engine's default devices choose.
 */
const KINDS = [parseDevices('high-performance'), parseDevices('cpu')];

/**
 * Runs everything and writes `<out>/<date>.json`, then `report.html` and `report.png` beside
 * `out` (bench/results → bench/report.html).
 */
export async function benchAll(o: { out: string; maxTokens: number }): Promise<{ file: string; html: string; png: string }> {
  const synthDir = process.env.WEBGPU_TP_SYNTH_DIR ?? join(tmpdir(), 'webgpu-tp-synth');
  const models: Record<string, { model: string; tokenizer: string }> = {};
  for (const shape of ['stories15M', 'stories110M'] as const) {
    const model = join(synthDir, `${shape}-synth.bin`);
    const tokenizer = join(synthDir, 'tok32000-synth.bin');
    if (!existsSync(model) || !existsSync(tokenizer)) await synthCommand({ shape, seed: 1, out: synthDir });
    models[shape] = { model, tokenizer };
  }
  const report = {
    date: new Date().toISOString(),
    allreduce: await benchAllReduce({ workers: [2, 4], sizes: [2048, 65536, 4194304] }),
    kernels: await benchKernels({}),
    generate: {
      stories15M: await benchGenerate({ ...models.stories15M!, devices: KINDS, tp: [1, 2], batch: [1, 8], maxTokens: o.maxTokens, profile: true }),
      // Interleaved rounds: the TP-cost targets are ratios, and this machine's speed drifts by
      // more than they ask to resolve between runs minutes apart. The CPU cases' memory roofline
      // is measured in the same rounds.
      stories110M: await benchGenerate({ ...models.stories110M!, devices: KINDS, tp: [1, 2, 4], batch: [1, 8], maxTokens: o.maxTokens, profile: true, rounds: 3 }),
    },
    // wllama and onnxruntime-web beside us, on the same synth models
    peers: mergePeers([await benchPeers({ shape: 'stories15M', synthDir }), await benchPeers({ shape: 'stories110M', synthDir })]),
  };
  mkdirSync(o.out, { recursive: true });
  const file = join(o.out, `${report.date.slice(0, 10)}.json`);
  writeFileSync(file, JSON.stringify(report, null, 2));
  const html = join(dirname(o.out), 'report.html');
  const png = join(dirname(o.out), 'report.png');
  await writeReport(report, html, png);
  return { file, html, png };
}
