/**
 * Answers an HTTP request with a local file, byte ranges included (the model loader reads by
 * Range). Shared by the test harness's server (browser.ts) and the demo's dev server
 * (vite.config.ts), so both answer ranges alike; no browser code, so Vite's config can load it.
 */
import { createReadStream, existsSync, statSync } from 'node:fs';
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';

/** Whether `path` is a regular file (a directory cannot be streamed). */
export function isFile(path: string): boolean {
  return existsSync(path) && statSync(path).isFile();
}

/**
 * Sends the regular file at `path`: 200 with the whole file, or 206 with one `bytes=a-b`,
 * `bytes=a-` or `bytes=-n` range, or 416 for a range outside the file; a HEAD request gets the
 * headers only. `headers` go on every answer.
 */
export function sendFile(req: IncomingMessage, res: ServerResponse, path: string, headers: OutgoingHttpHeaders, type = 'application/octet-stream'): void {
  const size = statSync(path).size;
  const stream = (start?: number, end?: number) => {
    if (req.method === 'HEAD') return void res.end();
    createReadStream(path, { start, end })
      .on('error', (e) => res.destroy(e))
      .pipe(res);
  };
  const range = /^bytes=(\d*)-(\d*)$/.exec(req.headers.range ?? '');
  if (range) {
    const start = range[1] ? Number(range[1]) : size - Number(range[2]);
    const end = range[1] && range[2] ? Math.min(Number(range[2]), size - 1) : size - 1;
    if (start > end || start >= size) {
      res.writeHead(416, { ...headers, 'Content-Range': `bytes */${size}` }).end();
      return;
    }
    res.writeHead(206, {
      ...headers,
      'Content-Type': type,
      'Content-Length': String(end - start + 1),
      'Content-Range': `bytes ${start}-${end}/${size}`,
      'Accept-Ranges': 'bytes',
    });
    stream(start, end);
    return;
  }
  res.writeHead(200, { ...headers, 'Content-Type': type, 'Content-Length': String(size), 'Accept-Ranges': 'bytes' });
  stream();
}
