/**
 * `@huggingface/gguf`'s reading of a GGUF header, in the shape of our reader's GgufHeader: the
 * oracle the tests hold src/model/formats/gguf-header.ts to. The library asks for its byte
 * ranges through a fetch, answered here from the bytes.
 */
import { gguf, type MetadataValue } from '@huggingface/gguf';
import type { GgufHeader } from '../../src/model/formats/gguf.js';

export async function libraryGgufHeader(bytes: Uint8Array): Promise<GgufHeader> {
  const fetch = (async (_url: RequestInfo | URL, init?: RequestInit) => {
    const m = /^bytes=(\d+)-(\d+)$/.exec(new Headers(init?.headers).get('Range') ?? '');
    if (!m) throw new Error('expected a Range request');
    const start = Number(m[1]);
    const end = Math.min(Number(m[2]), bytes.byteLength - 1);
    const body = start <= end ? bytes.slice(start, end + 1) : new Uint8Array(0);
    return new Response(body, { status: 206, headers: { 'Content-Range': `bytes ${start}-${end}/${bytes.byteLength}` } });
  }) as typeof globalThis.fetch;
  const parsed = await gguf('https://gguf.invalid/model.gguf', { fetch });
  const dataOffset = Number(parsed.tensorDataOffset);
  return {
    version: parsed.metadata.version,
    metadata: parsed.metadata as unknown as Record<string, MetadataValue>,
    dataOffset,
    tensors: parsed.tensorInfos.map((t) => ({ name: t.name, dims: t.shape.map(Number), type: t.dtype, offset: dataOffset + Number(t.offset) })),
  };
}
