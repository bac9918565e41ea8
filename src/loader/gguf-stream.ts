/**
 * A GGUF file's weights as the stream its layout describes (src/model/formats/gguf.ts): one
 * pass over the file, each tensor converted as it passes. F32 tensors, and F16 ones the layout
 * keeps in f16, pass as they are; F16 and quantised tensors the layout wants as f32 become f32 values; Q8_0/Q4_0 matrices become their values plane as the
 * blocks arrive and, at the tensor's end, the plane of f32 scales held back meanwhile (an
 * eighth of the values for Q8_0: the only memory beyond a chunk). Q4_1, Q5_0, Q5_1 and K-quant
 * matrices (`q8_m`) pass their byte codes, then their (scale, min) pairs.
 */
import { type GgufLayout, type GgufSegment, segmentStreamBytes } from '../model/formats/gguf.js';
import { dequantize, GGML_BLOCK, splitQ4Blocks, splitQ8Blocks } from '../model/formats/gguf-blocks.js';
import { AFFINE_GROUP, isAffineType, splitAffineBlocks } from '../model/formats/gguf-kquants.js';
import { ConvertedSource, type SegmentCodec, type SegmentDecoder } from './converted-source.js';
import type { ByteSource } from './source.js';

type StreamSegment = GgufSegment & { file: 0 };

const EMPTY = new Uint8Array(0);

function decoder(s: GgufSegment): SegmentDecoder {
  const block = GGML_BLOCK[s.type];
  if (s.type === 'F32' || (s.type === 'F16' && s.dtype === 'f16')) return { unit: block.bytes, push: (bytes) => bytes, end: () => EMPTY };
  if (s.dtype === 'f32') {
    return {
      unit: block.bytes,
      push(bytes) {
        const out = new Float32Array((bytes.byteLength / block.bytes) * block.values);
        dequantize(s.type, bytes, out);
        return new Uint8Array(out.buffer);
      },
      end: () => EMPTY,
    };
  }
  if (s.dtype === 'q8_m' && isAffineType(s.type)) {
    // codes now, (scale, min) pairs at the end
    const type = s.type;
    const perBlock = block.values / AFFINE_GROUP[type];
    const pairs = new Float32Array((s.byteLength / block.bytes) * perBlock * 2);
    let done = 0;
    return {
      unit: block.bytes,
      push(bytes) {
        const blocks = bytes.byteLength / block.bytes;
        const out = new Uint8Array(blocks * block.values);
        splitAffineBlocks(type, bytes, out, pairs.subarray(done * perBlock * 2, (done + blocks) * perBlock * 2));
        done += blocks;
        return out;
      },
      end: () => new Uint8Array(pairs.buffer),
    };
  }
  // q8_0 / q4_0: values now, scales at the end
  const scales = new Float32Array(s.byteLength / block.bytes);
  let done = 0; // blocks so far
  const perBlock = s.dtype === 'q8_0' ? 32 : 16;
  return {
    unit: block.bytes,
    push(bytes) {
      const blocks = bytes.byteLength / block.bytes;
      const out = new Uint8Array(blocks * perBlock);
      const s8 = scales.subarray(done, done + blocks);
      if (s.dtype === 'q8_0') splitQ8Blocks(bytes, new Int8Array(out.buffer), s8);
      else splitQ4Blocks(bytes, out, s8);
      done += blocks;
      return out;
    },
    end: () => new Uint8Array(scales.buffer),
  };
}

const ggufCodec: SegmentCodec<StreamSegment> = { outBytes: segmentStreamBytes, open: decoder };

/** The converted stream of `file`, laid out as `layout` says. */
export function ggufStream(file: ByteSource, layout: GgufLayout): ByteSource {
  const segments = layout.segments.map((s) => ({ ...s, file: 0 as const }));
  return new ConvertedSource(file.name, [file], segments, ggufCodec, 'gguf');
}
