import { test, expect } from './fixtures.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { benchPeers } from '../src/cli/bench-peers.js';
import { formatPeersTable } from '../src/cli/bench-peers-summary.js';

// Smoke pass of `bench peers` so the comparison never rots: stories260K-sized synth model, few
// tokens, one round. Shape and tokens only; no timing is asserted. onnxruntime-web's WebGPU is
// skipped (its shader compiles on SwiftShader were a third of the test's time; the export's
// tokens are checked on its wasm provider), which also checks --skip.
test('bench peers runs every configuration, and every wasm one produces tokens', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'tp-peers-'));
  try {
    const t0 = Date.now();
    const log = (l: string) => console.log(`${((Date.now() - t0) / 1000).toFixed(1)} s ${l}`);
    const r = await benchPeers({ shape: 'stories260K', quant: ['f32'], tokens: 4, warmup: 2, rounds: 1, synthDir: dir, skip: ['onnxruntime-web webgpu'], log });
    console.log(formatPeersTable(r));
    const keys = ['engine', 'config', 'model', 'quant', 'threads', 'tp', 'devices', 'decode_tokens_per_s', 'prefill_tokens_per_s', 'load_ms', 'tokens_match', 'first_mismatch'];
    for (const x of r.results) for (const k of keys) expect(x, `${x.engine} ${x.config} ${k}`).toHaveProperty(k);
    const name = (x: (typeof r.results)[number]) => `${x.quant} ${x.engine} ${x.config}`;
    expect(r.results.map(name)).toEqual([
      'f32 webgpu-tp gpu tp1', 'f32 webgpu-tp gpu tp2', 'f32 webgpu-tp cpu tp1', 'f32 webgpu-tp cpu tp2',
      'f32 wllama wasm 1t', 'f32 wllama wasm 2t', 'f32 wllama webgpu',
      'f32 onnxruntime-web wasm 1t', 'f32 onnxruntime-web wasm 2t',
    ]);
    for (const x of r.results.filter((y) => y.devices === 'wasm' || y.devices === 'cpu' || y.engine === 'webgpu-tp')) {
      expect(x.error, name(x)).toBeUndefined();
      expect(x.decode_tokens_per_s, name(x)).toBeGreaterThan(0);
      expect(x.prefill_tokens_per_s, name(x)).toBeGreaterThan(0);
      // wllama's ids come from its logprobs or return_tokens; without either it says so in a note
      if (x.engine === 'wllama' && x.tokens_match === null) expect(x.note, name(x)).toContain('no token ids');
      else expect(typeof x.tokens_match, name(x)).toBe('boolean');
      if (x.tokens_match === false) expect(x.first_mismatch, name(x)).toMatchObject({ position: expect.any(Number), ours: expect.any(Number), peer: expect.any(Number) });
    }
    // The ONNX export of the f32 weights decodes our tokens, and our own configurations agree.
    for (const x of r.results.filter((y) => y.quant === 'f32' && y.devices !== 'webgpu' && y.engine !== 'wllama')) expect(x.tokens_match, name(x)).toBe(true);
    for (const key of ['stories260K-synth/f32']) {
      expect(r.ratios[key], key).toMatchObject({ ours: expect.any(Number), best_peer: expect.any(Number), best_peer_config: expect.any(String), ratio: expect.any(Number) });
      expect(r.ratios[key]!.rounds).toHaveLength(1);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
