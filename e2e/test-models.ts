/**
 * The test models, for both runners' global set-up. Only Karpathy's stories260K.bin and
 * tok512.bin are needed: when stories260K-q8.bin is missing, it is derived from stories260K.bin
 * the way llama2.c's `export.py --version 2` writes it (Q8_0), into test-results/models beside
 * links to the other files, and WEBGPU_TP_MODELS is pointed there for the tests and the page
 * server. The models folder itself is never written (it may be read-only).
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, symlinkSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { repoRoot } from '../src/cli/browser.js';
import type { ModelConfig } from '../src/model/config.js';
import { loadLlama2c } from '../src/model/formats/llama2c.js';
import { encodeLlama2cV2Header, llama2cV2TensorTable } from '../src/model/formats/llama2c-v2.js';
import { quantizeExport } from '../src/model/synth-q8.js';

export const Q8_MODEL = 'stories260K-q8.bin';
const F32_MODEL = 'stories260K.bin';

/**
 * The Q8_0 group size: export.py's 64, halved until every row splits into whole groups (runq.c
 * indexes a scale per group of a row), which for stories260K (dim 64, hidden_dim 172) is 4.
 */
function groupSizeFor(c: ModelConfig): number {
  let g = 64;
  while (c.dim % g !== 0 || c.hiddenDim % g !== 0) g /= 2;
  return g;
}

/**
 * The llama2.c version 2 file of a legacy (version 0) llama2.c checkpoint: the header, the f32
 * norms, then each matrix's int8 values and per-group scales, quantised with export.py's rules.
 */
export function deriveQ8(f32File: Uint8Array): Uint8Array {
  const bytes = f32File.buffer.slice(f32File.byteOffset, f32File.byteOffset + f32File.byteLength) as ArrayBuffer;
  const { config, tensors } = loadLlama2c(bytes);
  const gs = groupSizeFor(config);
  const source = new Map(tensors.map((t) => [t.name, t]));
  const parts: Uint8Array[] = [encodeLlama2cV2Header(config, gs)];
  for (const t of llama2cV2TensorTable(config, gs)) {
    if (t.aliasOf) continue;
    const s = source.get(t.name)!;
    const w = new Float32Array(bytes, s.offset, s.byteLength / 4);
    if (t.dtype === 'f32') {
      parts.push(new Uint8Array(bytes, s.offset, s.byteLength));
      continue;
    }
    const q = new Int8Array(w.length);
    const scales = new Float32Array(w.length / gs);
    quantizeExport(w, gs, q, scales);
    parts.push(new Uint8Array(q.buffer), new Uint8Array(scales.buffer));
  }
  return Buffer.concat(parts);
}

/**
 * Makes sure the models folder the tests read has stories260K-q8.bin, deriving it when missing,
 * and returns that folder. Safe to run from both runners at once: the file lands by rename.
 */
export function ensureTestModels(): string {
  const dir = resolve(repoRoot, process.env.WEBGPU_TP_MODELS ?? join('..', 'shared', 'models'));
  // Without the f32 model nothing can be derived: the tests then name the missing file.
  if (existsSync(join(dir, Q8_MODEL)) || !existsSync(join(dir, F32_MODEL))) return dir;
  const out = join(repoRoot, 'test-results', 'models');
  mkdirSync(out, { recursive: true });
  for (const name of readdirSync(dir)) {
    try {
      symlinkSync(join(dir, name), join(out, name));
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    }
  }
  const tmp = join(out, `${Q8_MODEL}.${process.pid}.tmp`);
  writeFileSync(tmp, deriveQ8(readFileSync(join(dir, F32_MODEL))));
  renameSync(tmp, join(out, Q8_MODEL));
  process.env.WEBGPU_TP_MODELS = out;
  return out;
}

/** Vitest's global set-up (vitest.config.ts). */
export default function setup(): void {
  ensureTestModels();
}
