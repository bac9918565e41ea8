import { describe, expect, it } from 'vitest';
import { ModelFormatError } from '../../errors.js';
import {
  encodeSafetensors, f16ToF32, f32ToBf16, parseSafetensors, parseSafetensorsHeader, parseSafetensorsIndex, safetensorsHeaderLength, toF32,
} from './safetensors.js';

const f32Bytes = (xs: number[]) => new Uint8Array(new Float32Array(xs).buffer);

/** A file whose header is `header` verbatim, followed by `data` bytes of zeros. */
function rawFile(header: unknown, data: number): Uint8Array {
  const json = new TextEncoder().encode(JSON.stringify(header));
  const out = new Uint8Array(8 + json.byteLength + data);
  new DataView(out.buffer).setBigUint64(0, BigInt(json.byteLength), true);
  out.set(json, 8);
  return out;
}

describe('safetensors header', () => {
  it('round-trips tensors written by encodeSafetensors, with absolute offsets in file order', () => {
    const file = encodeSafetensors([
      { name: 'b', dtype: 'F32', shape: [2, 3], data: f32Bytes([1, 2, 3, 4, 5, 6]) },
      { name: 'a', dtype: 'BF16', shape: [4], data: new Uint8Array(8) },
    ], { format: 'pt' });
    const h = parseSafetensors(file);
    expect(h.dataStart % 8).toBe(0);
    expect(h.metadata).toEqual({ format: 'pt' });
    expect(h.tensors.map((t) => [t.name, t.dtype, t.shape, t.offset, t.byteLength])).toEqual([
      ['b', 'F32', [2, 3], h.dataStart, 24],
      ['a', 'BF16', [4], h.dataStart + 24, 8],
    ]);
    expect(new Float32Array(file.buffer.slice(h.tensors[0]!.offset, h.tensors[0]!.offset + 24))).toEqual(new Float32Array([1, 2, 3, 4, 5, 6]));
  });

  it('rejects a header length that does not fit the file, before reading it', () => {
    const prefix = new Uint8Array(8);
    new DataView(prefix.buffer).setBigUint64(0, 1n << 60n, true);
    expect(() => safetensorsHeaderLength(prefix, 1000)).toThrow(/header length 1152921504606846976 does not fit a file of 1000/);
    new DataView(prefix.buffer).setBigUint64(0, 993n, true);
    expect(() => safetensorsHeaderLength(prefix, 1000)).toThrow(ModelFormatError);
    expect(safetensorsHeaderLength(prefix, 1001)).toBe(993);
    expect(() => safetensorsHeaderLength(new Uint8Array(4), 1000)).toThrow(/at least 8 bytes/);
  });

  it('checks every tensor against its dtype, shape and the file size', () => {
    const bad = (entry: unknown, data = 16) => {
      const f = rawFile({ t: entry }, data);
      return () => parseSafetensors(f, 'x.safetensors');
    };
    expect(bad({ dtype: 'I8', shape: [4], data_offsets: [0, 4] })).toThrow(/"t" has dtype "I8"; supported: F32, F16, BF16/);
    expect(bad({ dtype: 'F32', shape: [4], data_offsets: [0, 12] })).toThrow(/needs 16 bytes, its data_offsets span 12/);
    expect(bad({ dtype: 'F32', shape: [8], data_offsets: [0, 32] })).toThrow(/ends at data byte 32, past the 16 data bytes/);
    expect(bad({ dtype: 'F32', shape: [-1], data_offsets: [0, 4] })).toThrow(/shape \[-1\]/);
    expect(bad({ dtype: 'F32', shape: [1], data_offsets: [8, 4] })).toThrow(/data_offsets \[8,4\]/);
    // a hostile shape whose product is not an exact double still fails the size check
    expect(bad({ dtype: 'F32', shape: [2 ** 40, 2 ** 40], data_offsets: [0, 16] })).toThrow(/needs 4835703278458516698824704 bytes/);
    const overlap = rawFile({ a: { dtype: 'F32', shape: [2], data_offsets: [0, 8] }, b: { dtype: 'F32', shape: [2], data_offsets: [4, 12] } }, 16);
    expect(() => parseSafetensors(overlap)).toThrow(/"a" and "b" overlap/);
    const notJson = rawFile({}, 0);
    notJson[9] = 0x7b;
    notJson[8] = 0x5b;
    expect(() => parseSafetensors(notJson)).toThrow(/not valid JSON/);
    expect(() => parseSafetensorsHeader(new Uint8Array(20), 10)).toThrow(ModelFormatError);
  });

  it('reads the shard index and refuses paths out of the model directory', () => {
    const idx = parseSafetensorsIndex({ weight_map: { a: 'model-00001-of-00002.safetensors', b: 'model-00002-of-00002.safetensors', c: 'model-00001-of-00002.safetensors' } });
    expect(idx.files).toEqual(['model-00001-of-00002.safetensors', 'model-00002-of-00002.safetensors']);
    expect([...idx.fileOf]).toEqual([['a', 0], ['b', 1], ['c', 0]]);
    expect(() => parseSafetensorsIndex({ weight_map: { a: '../secret.safetensors' } })).toThrow(/maps to "..\/secret.safetensors"/);
    expect(() => parseSafetensorsIndex({ weight_map: { a: 'https://x/y.safetensors' } })).toThrow(ModelFormatError);
    expect(() => parseSafetensorsIndex({})).toThrow(/weight_map/);
  });
});

describe('dtype conversion', () => {
  it('f16: normals, subnormals, zeros, infinities and NaN exactly', () => {
    expect(f16ToF32(0x3c00)).toBe(1);
    expect(f16ToF32(0xc000)).toBe(-2);
    expect(f16ToF32(0x7bff)).toBe(65504);
    expect(f16ToF32(0x0001)).toBe(2 ** -24);
    expect(Object.is(f16ToF32(0x8000), -0)).toBe(true);
    expect(f16ToF32(0x7c00)).toBe(Infinity);
    expect(f16ToF32(0x7e00)).toBeNaN();
    const src = new Uint8Array(new Uint16Array([0x3c00, 0x3555, 0x0001]).buffer);
    const dst = new Float32Array(3);
    toF32(src, 'F16', dst);
    expect([...dst]).toEqual([1, Math.fround(0.333251953125), 2 ** -24]);
  });

  it('bf16 is the top half of an f32; f32ToBf16 rounds to nearest even', () => {
    const xs = [1, -2.5, 3.140625, 1e-3, 65280];
    const bits = new Uint16Array(xs.map(f32ToBf16));
    const dst = new Float32Array(xs.length);
    toF32(new Uint8Array(bits.buffer), 'BF16', dst);
    expect(dst[0]).toBe(1);
    expect(dst[1]).toBe(-2.5);
    expect(dst[2]).toBe(3.140625);
    expect(Math.abs(dst[3]! - 1e-3)).toBeLessThan(1e-3 / 128);
    expect(f32ToBf16(1 + 2 ** -8)).toBe(0x3f80); // a tie rounds to the even mantissa
    expect(f32ToBf16(1 + 3 * 2 ** -8)).toBe(0x3f82);
  });

  it('F32 is read little-endian whatever the alignment', () => {
    const buf = new Uint8Array(9);
    buf.set(f32Bytes([1.5, -7]), 1);
    const dst = new Float32Array(2);
    toF32(buf.subarray(1), 'F32', dst);
    expect([...dst]).toEqual([1.5, -7]);
    expect(() => toF32(new Uint8Array(3), 'F16', dst)).toThrow(RangeError);
  });
});
