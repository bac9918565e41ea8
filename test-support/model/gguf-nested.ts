/**
 * A GGUF header with arrays of arrays (version 3, little-endian, no tensors), written by hand:
 * the library's writer cannot nest them. a.nested is [['x', 'yz'], [], ['🙂']], a.deep [[[1, 2]]] (uint16).
 */
import { GGUFValueType } from '@huggingface/gguf';

export function nestedArraysGguf(): Uint8Array {
  const enc = new TextEncoder();
  const parts: number[] = [];
  const u32 = (v: number) => parts.push(v & 0xff, (v >>> 8) & 0xff, (v >>> 16) & 0xff, v >>> 24);
  const u64 = (v: number) => (u32(v), u32(0));
  const str = (t: string) => (u64(enc.encode(t).length), parts.push(...enc.encode(t)));
  parts.push(...enc.encode('GGUF'));
  u32(3), u64(0), u64(2);
  str('a.nested'), u32(GGUFValueType.ARRAY), u32(GGUFValueType.ARRAY), u64(3);
  for (const inner of [['x', 'yz'], [], ['🙂']]) (u32(GGUFValueType.STRING), u64(inner.length), inner.forEach(str));
  str('a.deep'), u32(GGUFValueType.ARRAY), u32(GGUFValueType.ARRAY), u64(1), u32(GGUFValueType.ARRAY), u64(1), u32(GGUFValueType.UINT16), u64(2), parts.push(1, 0, 2, 0);
  return Uint8Array.from([...parts, ...new Array(32).fill(0)]);
}
