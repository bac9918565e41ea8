import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { modelsDir, readArrayBuffer } from '../../../test-support/fixtures/paths.js';
import { llama2cConfig } from '../synth.js';
import { ModelFormatError } from '../../errors.js';
import { encodeLlama2cV2Header, llama2cV2FileSize, loadLlama2cV2, parseLlama2cV2Header } from './llama2c-v2.js';
import { parseModelHeader } from './detect.js';
import { encodeLlama2cHeader, llama2cFileSize } from './llama2c.js';

const bytes = readArrayBuffer(resolve(modelsDir, 'stories260K-q8.bin'));
const head = new Uint8Array(bytes, 0, 256);

describe('llama2.c version 2 (runq.c Q8_0)', () => {
  it('reads stories260K-q8.bin: config, group size, norms first, each matrix values then scales', () => {
    const { config, groupSize, tensors } = parseLlama2cV2Header(head, bytes.byteLength);
    expect(config).toMatchObject({ dim: 64, hiddenDim: 172, nLayers: 5, nHeads: 8, nKvHeads: 4, vocabSize: 512, seqLen: 512, sharedClassifier: true });
    expect(groupSize).toBe(4);
    const by = new Map(tensors.map((t) => [t.name, t]));
    expect(by.get('layers.0.attention_norm')).toMatchObject({ offset: 256, dtype: 'f32' });
    expect(by.get('norm')!.offset).toBe(256 + 10 * 64 * 4);
    const emb = by.get('tok_embeddings')!;
    expect(emb).toMatchObject({ offset: 256 + 11 * 64 * 4, dtype: 'q8_0', byteLength: 512 * 64, quant: { groupSize: 4, scaleOffset: emb.offset + 512 * 64 } });
    expect(by.get('layers.0.attention.wq')!.offset).toBe(emb.quant!.scaleOffset + 512 * 16 * 4);
    expect(by.get('output')).toMatchObject({ aliasOf: 'tok_embeddings', offset: emb.offset });
    const w2 = by.get('layers.4.feed_forward.w2')!;
    expect(w2.shape).toEqual([64, 172]);
    const last = by.get('layers.4.feed_forward.w3')!;
    expect(last.quant!.scaleOffset + (last.byteLength / 4) * 4).toBe(bytes.byteLength);
  });

  it('loads views whose dequantised embedding is close to the f32 checkpoint\'s', () => {
    const m = loadLlama2cV2(bytes);
    const f32 = new Float32Array(readArrayBuffer(resolve(modelsDir, 'stories260K.bin')), 28, 512 * 64);
    let worst = 0;
    for (let i = 0; i < 512 * 64; i++) {
      const s = m.weights.tokens.s[Math.floor(i / 4)]!;
      worst = Math.max(worst, Math.abs(m.weights.tokens.q[i]! * s - f32[i]!) / (s || 1));
    }
    expect(worst).toBeLessThanOrEqual(0.5 + 1e-3); // within half a quantisation step everywhere
    expect(m.weights.wcls).toBe(m.weights.tokens);
  });

  it('format detection: "ak42" is version 2, anything else the legacy header', () => {
    expect(parseModelHeader(head, bytes.byteLength)).toMatchObject({ format: 'llama2c-v2', groupSize: 4 });
    const c = llama2cConfig({ dim: 8, hiddenDim: 16, nLayers: 1, nHeads: 2, nKvHeads: 2, vocabSize: 8, seqLen: 4 });
    expect(parseModelHeader(encodeLlama2cHeader(c), llama2cFileSize(c)).format).toBe('llama2c');
    expect(llama2cV2FileSize(c, 4)).toBe(256 + 3 * 8 * 4 + (8 * 8 + 4 * 8 * 8 + 3 * 16 * 8) * (1 + 1));
    expect(parseModelHeader(encodeLlama2cV2Header(c, 4), llama2cV2FileSize(c, 4))).toMatchObject({ format: 'llama2c-v2', config: c });
  });

  const corrupt = (edit: (v: DataView) => void): Uint8Array => {
    const h = new Uint8Array(head);
    edit(new DataView(h.buffer));
    return h;
  };
  it.each([
    ['a truncated file', head, bytes.byteLength - 1, /size mismatch.*implies 521728 bytes, the file has 521727/],
    ['a version 1 file', corrupt((v) => v.setInt32(4, 1, true)), bytes.byteLength, /version 1 files are not supported/],
    ['a bad magic', corrupt((v) => v.setUint32(0, 0x616b3433, true)), bytes.byteLength, /magic/],
    ['a group size that does not divide the rows', corrupt((v) => v.setInt32(37, 12, true)), bytes.byteLength, /groups of 12/],
    ['a group size of 2', corrupt((v) => v.setInt32(37, 2, true)), bytes.byteLength, /multiple of 4/],
    ['a negative vocab', corrupt((v) => v.setInt32(28, -512, true)), bytes.byteLength, /vocab_size > 0/],
    ['an absurd dim', corrupt((v) => v.setInt32(8, 0x40000000, true)), bytes.byteLength, /above the limit|n_heads must divide dim|impossibly large|size mismatch/],
    ['a header shorter than 256 bytes', head.subarray(0, 40), 40, /256-byte header/],
  ])('rejects %s with ModelFormatError', (_, h, size, msg) => {
    expect(() => parseLlama2cV2Header(h, size)).toThrow(ModelFormatError);
    expect(() => parseLlama2cV2Header(h, size)).toThrow(msg);
  });
});
