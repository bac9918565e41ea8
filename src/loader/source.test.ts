import { describe, it, expect, afterEach } from 'vitest';
import { createServer, type Server } from 'node:http';
import { openSource } from './source.js';
import { ModelFetchError, ModelFormatError } from '../errors.js';

const file = new Uint8Array(300_000).map((_, i) => (i * 13 + 5) & 255);
let server: Server | undefined;

afterEach(() => new Promise<void>((ok) => (server ? server.close(() => ok()) : ok())));

/** A server that drops the connection after `cut` bytes of every full-body response. */
async function serve(opts: {
  cut?: number; ranges?: boolean; headers?: Record<string, string>; status?: number; hideContentRange?: boolean;
}): Promise<{ url: string; log: (string | undefined)[] }> {
  const log: (string | undefined)[] = [];
  server = createServer((req, res) => {
    const range = req.headers.range;
    log.push(range);
    if (opts.status) {
      res.writeHead(opts.status).end('no');
      return;
    }
    const m = /^bytes=(\d+)-(\d*)$/.exec(range ?? '');
    if (m && opts.ranges !== false) {
      const start = Number(m[1]);
      const end = m[2] ? Number(m[2]) : file.length - 1;
      // hideContentRange: what a page sees from another origin that does not expose the header.
      const cr = opts.hideContentRange ? {} : { 'Content-Range': `bytes ${start}-${end}/${file.length}` };
      res.writeHead(206, { ...opts.headers, ...cr, 'Content-Length': String(end - start + 1) });
      res.end(file.subarray(start, end + 1));
      return;
    }
    res.writeHead(200, { ...opts.headers, 'Content-Length': String(file.length) });
    if (opts.cut !== undefined) {
      res.write(file.subarray(0, opts.cut), () => setTimeout(() => res.destroy(), 20));
    } else res.end(file);
  });
  await new Promise<void>((ok) => server!.listen(0, '127.0.0.1', () => ok()));
  const a = server.address() as { port: number };
  return { url: `http://127.0.0.1:${a.port}/m.bin`, log };
}

async function readAll(url: string): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  for await (const c of openSource(url).chunks()) parts.push(c);
  const out = new Uint8Array(parts.reduce((a, p) => a + p.length, 0));
  let o = 0;
  for (const p of parts) (out.set(p, o), (o += p.length));
  return out;
}

describe('URL model source', () => {
  it('gives the size from a one-byte Range probe and streams the whole file', async () => {
    const { url } = await serve({});
    expect(await openSource(url).size()).toBe(file.length);
    expect(await readAll(url)).toEqual(file);
  });

  it('resumes a dropped download with an HTTP Range request from the last byte received', async () => {
    const { url, log } = await serve({ cut: 100_000 });
    expect(await readAll(url)).toEqual(file);
    const resumed = log.filter((r) => r && r !== 'bytes=0-0');
    expect(resumed.length).toBe(1);
    expect(Number(/bytes=(\d+)-/.exec(resumed[0]!)![1])).toBeGreaterThan(0);
  });

  it('fails with a typed error when the server cannot resume', async () => {
    const { url } = await serve({ cut: 100_000, ranges: false });
    await expect(readAll(url)).rejects.toThrow(ModelFormatError);
  });

  it('gives a file replaced at the same URL and size a new cache identity (ETag, else Last-Modified)', async () => {
    // One server whose headers change between probes, as when the file is replaced in place.
    const headers: Record<string, string> = {};
    const { url } = await serve({ headers });
    const ids: (string | undefined)[] = [];
    for (const h of [
      { 'Last-Modified': 'Sun, 29 Nov 2026 10:00:00 GMT' },
      { 'Last-Modified': 'Sun, 29 Nov 2026 11:00:00 GMT' },
      { ETag: '"a"', 'Last-Modified': 'Sun, 29 Nov 2026 11:00:00 GMT' },
      { ETag: '"b"', 'Last-Modified': 'Sun, 29 Nov 2026 11:00:00 GMT' },
    ]) {
      for (const k of Object.keys(headers)) delete headers[k];
      Object.assign(headers, h);
      ids.push(await openSource(url).identity());
    }
    expect(ids.every((id) => id?.startsWith(`url:${url}:300000:`))).toBe(true);
    expect(new Set(ids).size).toBe(4);
  });

  it('types an unreachable server, an HTTP error and an unreadable Content-Range as MODEL_FETCH, with the remedy', async () => {
    const { url } = await serve({});
    await new Promise<void>((ok) => server!.close(() => ok()));
    server = undefined;
    const down = await openSource(url).size().catch((e: unknown) => e);
    expect(down).toBeInstanceOf(ModelFetchError);
    expect((down as ModelFetchError).code).toBe('MODEL_FETCH');
    expect((down as ModelFetchError).remedy).toContain('Access-Control-Allow-Origin');

    const missing = await serve({ status: 404 });
    const e404 = await openSource(missing.url).size().catch((e: unknown) => e);
    expect(e404).toBeInstanceOf(ModelFetchError);
    expect((e404 as Error).message).toContain('HTTP 404');
    await new Promise<void>((ok) => server!.close(() => ok()));

    const hidden = await serve({ hideContentRange: true });
    const eRange = await openSource(hidden.url).size().catch((e: unknown) => e);
    expect(eRange).toBeInstanceOf(ModelFetchError);
    expect((eRange as ModelFetchError).remedy).toContain('Access-Control-Expose-Headers: Content-Range');
  });
});
