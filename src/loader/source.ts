/**
 * Where model bytes come from: a URL (streamed with fetch, resumed with HTTP Range after a
 * dropped connection), a File/Blob (sliced), or an ArrayBuffer already in memory. Each gives the
 * size, a prefix for the header, and one pass over the bytes in chunks.
 */
import { ModelFormatError, ModelFetchError, InvalidArgumentError, AbortedError } from '../errors.js';

export type ModelSource = string | URL | Blob | ArrayBuffer | Uint8Array;

export interface ByteSource {
  /** A name for messages and cache keys (the URL, the file name, or "buffer"). */
  readonly name: string;
  /** Total size in bytes. */
  size(): Promise<number>;
  /** The first `n` bytes (or fewer if the file is shorter). */
  head(n: number): Promise<Uint8Array>;
  /** Bytes [start, end) (fewer past the end): a small piece far into a file, such as a GGUF's rope_freqs. */
  range?(start: number, end: number): Promise<Uint8Array>;
  /** Every byte once, in order, in chunks. */
  chunks(signal?: AbortSignal): AsyncIterable<Uint8Array>;
  /** An identity for cache keys: e.g. URL + size + ETag + Last-Modified; undefined when none is cheap. */
  identity(): Promise<string | undefined>;
}

const CHUNK = 4 << 20;

export function openSource(src: ModelSource): ByteSource {
  if (typeof src === 'string' || src instanceof URL) return new UrlSource(String(src));
  if (typeof Blob !== 'undefined' && src instanceof Blob) return new BlobSource(src);
  if (src instanceof ArrayBuffer) return new BufferSource(new Uint8Array(src));
  if (src instanceof Uint8Array) return new BufferSource(src);
  throw new InvalidArgumentError('model must be a URL, a File/Blob or an ArrayBuffer');
}

class BufferSource implements ByteSource {
  readonly name = 'buffer';
  constructor(private readonly bytes: Uint8Array) {}
  async size() {
    return this.bytes.byteLength;
  }
  async head(n: number) {
    return this.bytes.subarray(0, n);
  }
  async range(start: number, end: number) {
    return this.bytes.subarray(start, end);
  }
  async *chunks() {
    for (let o = 0; o < this.bytes.byteLength; o += CHUNK) yield this.bytes.subarray(o, o + CHUNK);
  }
  async identity() {
    return undefined;
  }
}

class BlobSource implements ByteSource {
  readonly name: string;
  constructor(private readonly blob: Blob) {
    this.name = (blob as File).name ?? 'blob';
  }
  async size() {
    return this.blob.size;
  }
  async head(n: number) {
    return new Uint8Array(await this.blob.slice(0, n).arrayBuffer());
  }
  async range(start: number, end: number) {
    return new Uint8Array(await this.blob.slice(start, end).arrayBuffer());
  }
  async *chunks(signal?: AbortSignal) {
    for (let o = 0; o < this.blob.size; o += CHUNK) {
      if (signal?.aborted) throw new AbortedError('model load aborted');
      yield new Uint8Array(await this.blob.slice(o, o + CHUNK).arrayBuffer());
    }
  }
  async identity() {
    const f = this.blob as File;
    return f.name ? `file:${f.name}:${this.blob.size}:${f.lastModified ?? 0}` : undefined;
  }
}

const reason = (e: unknown) => (e instanceof Error ? e.message : String(e));

/** An HTTP error status of a model or tokenizer fetch. */
export function httpError(url: string, status: number): ModelFetchError {
  return new ModelFetchError(`fetching ${url} failed: HTTP ${status}`, 'Check the URL: the server answered with an error');
}

/**
 * fetch, its rejection typed: a network failure, or another origin without CORS (the browser does
 * not tell them apart), is a `ModelFetchError`; an aborted `signal`, an `AbortedError`.
 */
export async function fetchTyped(url: string, init: RequestInit = {}): Promise<Response> {
  try {
    return await fetch(url, init);
  } catch (e) {
    if (init.signal?.aborted) throw new AbortedError('model load aborted');
    throw new ModelFetchError(`fetching ${url} failed: ${reason(e)}`);
  }
}

/** `fetchTyped`, and an HTTP error status is a `ModelFetchError` too. */
export async function fetchOk(url: string, init: RequestInit = {}): Promise<Response> {
  const r = await fetchTyped(url, init);
  if (!r.ok) {
    await r.body?.cancel();
    throw httpError(url, r.status);
  }
  return r;
}

class UrlSource implements ByteSource {
  private meta?: Promise<{ size: number; etag?: string; lastModified?: string; ranges: boolean }>;
  constructor(readonly name: string) {}

  private info() {
    this.meta ??= (async () => {
      // A one-byte Range request gives the size (Content-Range) and whether ranges work.
      const r = await fetchOk(this.name, { headers: { Range: 'bytes=0-0' } });
      await r.body?.cancel();
      const cr = r.headers.get('Content-Range');
      // A 206 whose Content-Range the page cannot read (another origin that does not expose it):
      // its Content-Length is the one byte asked for, not the file's size.
      if (r.status === 206 && !cr) {
        throw new ModelFetchError(`${this.name}: the server answered a range request without a readable Content-Range`, 'Serve it with Access-Control-Expose-Headers: Content-Range (needed on another origin)');
      }
      const total = cr ? Number(cr.split('/')[1]) : Number(r.headers.get('Content-Length'));
      if (!Number.isFinite(total)) throw new ModelFormatError(`${this.name}: the server gave no size`, 'Serve the model with Content-Length or Range support');
      return { size: total, etag: r.headers.get('ETag') ?? undefined, lastModified: r.headers.get('Last-Modified') ?? undefined, ranges: r.status === 206 };
    })();
    return this.meta;
  }

  async size() {
    return (await this.info()).size;
  }

  async head(n: number) {
    return this.range(0, n);
  }
  async range(start: number, end: number) {
    const r = await fetchOk(this.name, { headers: { Range: `bytes=${start}-${end - 1}` } });
    const b = new Uint8Array(await r.arrayBuffer());
    // A server that ignores Range sends the whole file (200).
    return r.status === 206 ? b.subarray(0, end - start) : b.subarray(start, end);
  }

  /** Size, ETag and Last-Modified: a file replaced in place at the same URL gets new cache keys. */
  async identity() {
    const m = await this.info();
    return `url:${this.name}:${m.size}:${m.etag ?? ''}:${m.lastModified ?? ''}`;
  }

  /** Streams the body; after a dropped connection, resumes from the last byte with Range. */
  async *chunks(signal?: AbortSignal) {
    const { size, ranges } = await this.info();
    let offset = 0;
    let retries = 0;
    while (offset < size) {
      const headers: Record<string, string> = offset > 0 ? { Range: `bytes=${offset}-` } : {};
      let r: Response;
      try {
        r = await fetch(this.name, { headers, signal });
      } catch (e) {
        if (signal?.aborted) throw new AbortedError('model load aborted');
        if (++retries > 3) throw new ModelFetchError(`fetching ${this.name} failed after ${retries} tries: ${reason(e)}`);
        continue;
      }
      if (!r.ok || !r.body) throw httpError(this.name, r.status);
      if (offset > 0 && r.status !== 206) {
        if (!ranges) throw new ModelFormatError(`${this.name}: the download broke at byte ${offset} and the server does not support Range`, 'Retry the load');
      }
      const reader = r.body.getReader();
      try {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          offset += value.byteLength;
          yield value;
        }
      } catch (e) {
        if (signal?.aborted) throw new AbortedError('model load aborted');
        if (++retries > 3) throw e;
        continue; // resume from `offset`
      } finally {
        reader.releaseLock();
      }
      if (offset < size && ++retries > 3) {
        throw new ModelFormatError(`${this.name} ended at byte ${offset} of ${size}`, 'Retry the load; the file may be truncated on the server');
      }
    }
  }
}
