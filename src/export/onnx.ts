/**
 * A Llama checkpoint's f32 weights as an ONNX model (opset 17, standard ops only), with its KV
 * cache as inputs and outputs, so that onnxruntime-web can run the same model as the engine
 * (`bench peers`). One step takes `input_ids` and `position_ids` (1, S) and
 * `past_key_values.{l}.key|value` (1, n_kv_heads, P, head_size); it returns the last position's
 * `logits` (1, 1, vocab) and `present.{l}.key|value` (1, n_kv_heads, P + S, head_size).
 * Positions must run on from the past: P, P + 1, ..., P + S − 1 (the causal mask compares them
 * with the key positions 0..P+S−1).
 */
import onnxProto, { type onnx } from 'onnx-proto';
import type { ModelConfig } from '../model/config.js';
import { ropeTables, type ReferenceModel } from '../model/reference.js';
import { InvalidArgumentError } from '../errors.js';
import { onnxNames } from './onnx-names.js';

export { onnxNames };

const proto = onnxProto.onnx;

export const ONNX_OPSET = 17;

type Attr = { name: string; i?: number; f?: number; ints?: number[] };

/** Nodes and initializers in the order they are added; names are made unique by a counter. */
class GraphBuilder {
  readonly nodes: onnx.INodeProto[] = [];
  readonly initializers: onnx.ITensorProto[] = [];
  private n = 0;

  op(opType: string, inputs: string[], attrs: Attr[] = [], outputs = 1): string[] {
    const id = this.n++;
    const outs = Array.from({ length: outputs }, (_, i) => `${opType.toLowerCase()}_${id}${outputs > 1 ? `_${i}` : ''}`);
    this.nodes.push({
      opType, input: inputs, output: outs, name: `${opType}_${id}`,
      attribute: attrs.map((a) => ({
        name: a.name,
        ...(a.i !== undefined && { i: a.i, type: proto.AttributeProto.AttributeType.INT }),
        ...(a.f !== undefined && { f: a.f, type: proto.AttributeProto.AttributeType.FLOAT }),
        ...(a.ints !== undefined && { ints: a.ints, type: proto.AttributeProto.AttributeType.INTS }),
      })),
    });
    return outs;
  }

  /** One output (most ops). */
  one(opType: string, inputs: string[], attrs: Attr[] = []): string {
    return this.op(opType, inputs, attrs)[0]!;
  }

  f32(name: string, dims: number[], data: Float32Array): string {
    this.initializers.push({ name, dims, dataType: proto.TensorProto.DataType.FLOAT, rawData: new Uint8Array(data.buffer, data.byteOffset, data.byteLength) });
    return name;
  }

  i64(name: string, values: number[], scalar = false): string {
    const data = BigInt64Array.from(values.map((v) => BigInt(v)));
    this.initializers.push({ name, dims: scalar ? [] : [values.length], dataType: proto.TensorProto.DataType.INT64, rawData: new Uint8Array(data.buffer) });
    return name;
  }

  scalarF32(name: string, v: number): string {
    return this.f32(name, [], Float32Array.of(v));
  }
}

/** W (rows, cols) row-major as Wᵀ (cols, rows): ONNX MatMul computes x·W, llama2.c stores W[out][in]. */
function transposed(w: Float32Array, rows: number, cols: number): Float32Array {
  const t = new Float32Array(rows * cols);
  for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) t[c * rows + r] = w[r * cols + c]!;
  return t;
}

function valueInfo(name: string, elemType: number, dims: (number | string)[]): onnx.IValueInfoProto {
  return {
    name,
    type: { tensorType: { elemType, shape: { dim: dims.map((d) => (typeof d === 'number' ? { dimValue: d } : { dimParam: d })) } } },
  };
}

/** Checks what the export supports: llama2.c-style Llama (no biases, no RoPE scaling). */
function checkExportable(c: ModelConfig): void {
  const bad = [c.qkvBias && 'qkv biases', c.qkNorm && 'per-head q/k norms', c.outBias && 'an output bias', c.ropeScaling && 'RoPE scaling'].filter(Boolean);
  if (bad.length) throw new InvalidArgumentError(`the ONNX export takes a plain Llama; this model has ${bad.join(', ')}`, 'Export a llama2.c or synth checkpoint');
  if (c.nHeads % c.nKvHeads !== 0) throw new InvalidArgumentError(`n_heads must be a multiple of n_kv_heads: expected n_heads % n_kv_heads = 0, got ${c.nHeads} % ${c.nKvHeads}`);
}

/** The ONNX ModelProto bytes of `model` (f32 weights, the classifier its own transposed copy). */
export function exportOnnx(model: ReferenceModel): Uint8Array {
  const c = model.config;
  checkExportable(c);
  const w = model.weights;
  const { dim, hiddenDim, nHeads, nKvHeads, headSize, vocabSize } = c;
  const qDim = nHeads * headSize;
  const kvDim = nKvHeads * headSize;
  const rep = nHeads / nKvHeads;
  const half = headSize / 2;
  const g = new GraphBuilder();
  const layer = (a: Float32Array, l: number, n: number) => a.subarray(l * n, (l + 1) * n);

  const eps = g.scalarF32('norm_eps', c.normEps);
  const sqrtHs = g.scalarF32('sqrt_head_size', Math.fround(Math.sqrt(headSize)));
  const negInf = g.scalarF32('neg_inf', -Infinity);
  const axisLast = g.i64('axes_last', [-1]);
  const axis2 = g.i64('axes_2', [2]);
  const split11 = g.i64('split_1_1', [1, 1]);
  const zero = g.i64('zero', [0], true);
  const one = g.i64('one', [1], true);
  const two = g.i64('two', [2], true);
  const shapeQ5 = g.i64('shape_q_pairs', [1, -1, nHeads, half, 2]);
  const shapeK5 = g.i64('shape_k_pairs', [1, -1, nKvHeads, half, 2]);
  const shapeQ = g.i64('shape_q', [1, -1, nHeads, headSize]);
  const shapeK = g.i64('shape_k', [1, -1, nKvHeads, headSize]);
  const shapeGroups = g.i64('shape_groups', [1, nKvHeads, rep, -1, headSize]);
  const shapeHeads = g.i64('shape_heads', [1, nHeads, -1, headSize]);
  const shapeAtt = g.i64('shape_att', [1, -1, qDim]);
  const tables = ropeTables(headSize, c.seqLen, c.ropeTheta);
  const cosT = g.f32('rope_cos', [c.seqLen, half], tables.cos);
  const sinT = g.f32('rope_sin', [c.seqLen, half], tables.sin);

  const rmsnorm = (x: string, weight: Float32Array, name: string): string => {
    const ms = g.one('ReduceMean', [g.one('Mul', [x, x])], [{ name: 'axes', ints: [-1] }, { name: 'keepdims', i: 1 }]);
    const inv = g.one('Reciprocal', [g.one('Sqrt', [g.one('Add', [ms, eps])])]);
    return g.one('Mul', [g.one('Mul', [x, inv]), g.f32(name, [dim], weight)]);
  };
  const matmul = (x: string, weight: Float32Array, rows: number, cols: number, name: string): string =>
    g.one('MatMul', [x, g.f32(name, [cols, rows], transposed(weight, rows, cols))]);

  // cos/sin of each row's position, (1, S, 1, hs/2, 1), broadcast over heads and the pair
  const posTable = (t: string) => g.one('Unsqueeze', [g.one('Unsqueeze', [g.one('Gather', [t, onnxNames.positionIds], [{ name: 'axis', i: 0 }]), axis2]), axisLast]);
  const cos = posTable(cosT);
  const sin = posTable(sinT);
  /** Interleaved RoPE (llama2.c): pairs (2i, 2i+1) of (1, S, heads·hs) as run.c rotates them. */
  const rope = (x: string, pairs: string, heads: string): string => {
    const [x0, x1] = g.op('Split', [g.one('Reshape', [x, pairs]), split11], [{ name: 'axis', i: -1 }], 2) as [string, string];
    const r0 = g.one('Sub', [g.one('Mul', [x0, cos]), g.one('Mul', [x1, sin])]);
    const r1 = g.one('Add', [g.one('Mul', [x0, sin]), g.one('Mul', [x1, cos])]);
    return g.one('Transpose', [g.one('Reshape', [g.one('Concat', [r0, r1], [{ name: 'axis', i: -1 }]), heads])], [{ name: 'perm', ints: [0, 2, 1, 3] }]);
  };

  // key position t is masked for the query at position p when t > p: (1, S, T) over the scores
  let mask: string | undefined;
  const causalMask = (presentKey: string): string => {
    const total = g.one('Gather', [g.one('Shape', [presentKey]), two], [{ name: 'axis', i: 0 }]);
    const keyPos = g.one('Range', [zero, total, one]);
    return g.one('Greater', [keyPos, g.one('Unsqueeze', [onnxNames.positionIds, axisLast])]);
  };

  let x = g.one('Gather', [g.f32('tok_embeddings', [vocabSize, dim], w.tokenEmbeddingTable), onnxNames.inputIds], [{ name: 'axis', i: 0 }]);
  for (let l = 0; l < c.nLayers; l++) {
    const p = `layers.${l}`;
    const xb = rmsnorm(x, layer(w.rmsAttWeight, l, dim), `${p}.attention_norm`);
    const q = rope(matmul(xb, layer(w.wq, l, qDim * dim), qDim, dim, `${p}.attention.wq`), shapeQ5, shapeQ);
    const k = rope(matmul(xb, layer(w.wk, l, kvDim * dim), kvDim, dim, `${p}.attention.wk`), shapeK5, shapeK);
    const v = g.one('Transpose', [g.one('Reshape', [matmul(xb, layer(w.wv, l, kvDim * dim), kvDim, dim, `${p}.attention.wv`), shapeK])], [{ name: 'perm', ints: [0, 2, 1, 3] }]);
    const presentK = g.op('Concat', [onnxNames.pastKey(l), k], [{ name: 'axis', i: 2 }])[0]!;
    const presentV = g.op('Concat', [onnxNames.pastValue(l), v], [{ name: 'axis', i: 2 }])[0]!;
    g.nodes.push({ opType: 'Identity', input: [presentK], output: [onnxNames.presentKey(l)], name: `present_key_${l}` });
    g.nodes.push({ opType: 'Identity', input: [presentV], output: [onnxNames.presentValue(l)], name: `present_value_${l}` });
    mask ??= causalMask(presentK);
    // grouped-query attention: query head h = kv·rep + r reads kv head kv, as run.c's h / kv_mul
    const qg = g.one('Reshape', [q, shapeGroups]);
    const kg = g.one('Unsqueeze', [presentK, axis2]);
    const vg = g.one('Unsqueeze', [presentV, axis2]);
    const scores = g.one('Div', [g.one('MatMul', [qg, g.one('Transpose', [kg], [{ name: 'perm', ints: [0, 1, 2, 4, 3] }])]), sqrtHs]);
    const probs = g.one('Softmax', [g.one('Where', [mask, negInf, scores])], [{ name: 'axis', i: -1 }]);
    const heads = g.one('Transpose', [g.one('Reshape', [g.one('MatMul', [probs, vg]), shapeHeads])], [{ name: 'perm', ints: [0, 2, 1, 3] }]);
    x = g.one('Add', [x, matmul(g.one('Reshape', [heads, shapeAtt]), layer(w.wo, l, dim * qDim), dim, qDim, `${p}.attention.wo`)]);

    const hb = rmsnorm(x, layer(w.rmsFfnWeight, l, dim), `${p}.ffn_norm`);
    const a = matmul(hb, layer(w.w1, l, hiddenDim * dim), hiddenDim, dim, `${p}.feed_forward.w1`);
    const b = matmul(hb, layer(w.w3, l, hiddenDim * dim), hiddenDim, dim, `${p}.feed_forward.w3`);
    const act = g.one('Mul', [g.one('Mul', [a, g.one('Sigmoid', [a])]), b]);
    x = g.one('Add', [x, matmul(act, layer(w.w2, l, dim * hiddenDim), dim, hiddenDim, `${p}.feed_forward.w2`)]);
  }
  const last = g.one('Slice', [rmsnorm(x, w.rmsFinalWeight, 'norm'), g.i64('slice_start', [-1]), g.i64('slice_end', [Number.MAX_SAFE_INTEGER]), g.i64('slice_axis', [1])]);
  const logits = g.one('MatMul', [last, g.f32('output', [dim, vocabSize], transposed(w.wcls, vocabSize, dim))]);
  g.nodes.push({ opType: 'Identity', input: [logits], output: [onnxNames.logits], name: 'logits' });

  const F = proto.TensorProto.DataType.FLOAT;
  const I64 = proto.TensorProto.DataType.INT64;
  const kv = (name: string, len: string) => valueInfo(name, F, [1, nKvHeads, len, headSize]);
  const layers = Array.from({ length: c.nLayers }, (_, l) => l);
  const graph: onnx.IGraphProto = {
    name: 'llama',
    node: g.nodes,
    initializer: g.initializers,
    input: [
      valueInfo(onnxNames.inputIds, I64, [1, 'seq']), valueInfo(onnxNames.positionIds, I64, [1, 'seq']),
      ...layers.flatMap((l) => [kv(onnxNames.pastKey(l), 'past'), kv(onnxNames.pastValue(l), 'past')]),
    ],
    output: [
      valueInfo(onnxNames.logits, F, [1, 1, vocabSize]),
      ...layers.flatMap((l) => [kv(onnxNames.presentKey(l), 'total'), kv(onnxNames.presentValue(l), 'total')]),
    ],
  };
  return proto.ModelProto.encode({ irVersion: 8, producerName: 'webgpu-tp', opsetImport: [{ domain: '', version: ONNX_OPSET }], graph }).finish();
}
