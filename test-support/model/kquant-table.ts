/**
 * A tensor table shaped as a K-quant GGUF is read (q8_m matrices in groups of `group`, with
 * super-blocks of `block`; f32 norms), for plan and placement tests that need no file.
 */
import type { ModelConfig, TensorInfo } from '../../src/model/config.js';
import { llama2cTensorTable } from '../../src/model/formats/llama2c.js';

/** stories110M's shape: wo's 768 inputs are 3 super-blocks of 256, 12 heads of 64. */
export const c110: ModelConfig = {
  dim: 768, hiddenDim: 2048, nLayers: 2, nHeads: 12, nKvHeads: 12, vocabSize: 32000, seqLen: 1024, headSize: 64,
  sharedClassifier: true, normEps: 1e-5, ropeTheta: 10000, ropeStyle: 'interleaved',
};

/** The tensor table with every matrix as a K-quant would be read (q8_m, groups of `group`, super-blocks of 256); block 0: none. */
export function kTable(c: ModelConfig, group = 32, block = 256): TensorInfo[] {
  let at = 0;
  const out: TensorInfo[] = [];
  for (const t of llama2cTensorTable(c)) {
    if (t.aliasOf) {
      out.push({ ...out.find((x) => x.name === t.aliasOf)!, name: t.name, aliasOf: t.aliasOf });
      continue;
    }
    const n = t.shape[0] * t.shape[1];
    const matrix = t.shape[0] > 1 && t.shape[1] > 1;
    out.push(matrix
      ? { name: t.name, offset: at, shape: t.shape, dtype: 'q8_m', byteLength: n, quant: { groupSize: group, scaleOffset: at + n, ...(block ? { block } : {}) } }
      : { name: t.name, offset: at, shape: t.shape, dtype: 'f32', byteLength: n * 4 });
    at += matrix ? n + (n / group) * 8 : n * 4;
  }
  return out;
}
