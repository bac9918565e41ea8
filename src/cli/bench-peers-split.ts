/**
 * The TP split `bench peers` gives our rows: even, unless an even split would cut a quantisation
 * block of wo's rows (stories110M's 768-wide Q4_K_M wo is 3 super-blocks, 1.5 a rank at TP 2, a
 * PlanError); then the heads alone go out in runs that start on whole blocks, as evenly as they
 * can (8:4 there), and the MLP and vocab stay even: the engine's per-axis `split: {heads}`.
 * The units come from the tensor table the reader makes of the file the writer would write.
 */
import type { ModelConfig, TensorInfo } from '../model/config.js';
import { GGML_TYPE_ID } from '../model/formats/gguf-blocks.js';
import { ggufName, layoutGguf } from '../model/formats/gguf.js';
import { ggufHeader, ggufMetadata, ggufTensorOut, ggufTensorPlan, type GgufQuant } from '../model/formats/gguf-write.js';
import { degreeSplit, type AxisSplit } from '../parallel/plan.js';

/** The tensor table the engine reads from the GGUF of `c` in `quant` (`synth --format gguf`'s), from its header alone. */
export function writtenTensors(c: ModelConfig, quant: GgufQuant): TensorInfo[] {
  const infos = ggufTensorPlan(c, quant).map((t) => ggufTensorOut({ ...t, name: ggufName(t.name) }));
  const kv = ggufMetadata(c, quant);
  const { header, offsets, fileSize } = ggufHeader(kv, infos);
  const metadata = Object.fromEntries(Object.entries(kv).map(([k, v]) => [k, v.value]));
  const tensors = infos.map((t, i) => ({ name: t.name, dims: t.dims, type: GGML_TYPE_ID[t.type], offset: offsets[i]! }));
  return layoutGguf({ version: 3, metadata, tensors, dataOffset: header.byteLength }, fileSize, `${quant}.gguf`).tensors;
}

/** Heads per rank at `tp` ranks, MLP and vocab even (undefined: the even split keeps wo's blocks whole, or no split does). */
export function wholeBlockSplit(c: ModelConfig, quant: GgufQuant, tp: number): AxisSplit | undefined {
  return degreeSplit(c, tp, writtenTensors(c, quant))?.axes;
}
