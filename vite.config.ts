import { defineConfig, type Plugin } from 'vite';
import { existsSync, createReadStream, statSync } from 'node:fs';
import { resolve, join, normalize } from 'node:path';

/** Cross-origin isolation: without it there is no SharedArrayBuffer, so no collectives. */
const isolationHeaders = {
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Embedder-Policy': 'require-corp',
  'Cross-Origin-Resource-Policy': 'same-origin',
};

/**
 * Serves model files under /models/ from ../shared/models when it exists (the team's test
 * models, never copied into the repo), else from ./models/. Weights stay out of the build.
 */
function serveModels(): Plugin {
  const dirs = [resolve(__dirname, '../shared/models'), resolve(__dirname, 'models')];
  return {
    name: 'webgpu-tp-models',
    configureServer(server) {
      server.middlewares.use('/models/', (req, res, next) => {
        const name = normalize(decodeURIComponent((req.url ?? '/').split('?')[0])).replace(/^([/\\.])+/, '');
        const dir = dirs.find((d) => existsSync(join(d, name)));
        if (!dir || !name) return next();
        const path = join(dir, name);
        const size = statSync(path).size;
        res.setHeader('Content-Type', 'application/octet-stream');
        res.setHeader('Content-Length', String(size));
        res.setHeader('Accept-Ranges', 'bytes');
        createReadStream(path).pipe(res);
      });
    },
  };
}

export default defineConfig({
  plugins: [serveModels()],
  server: { headers: isolationHeaders, host: '127.0.0.1' },
  preview: { headers: isolationHeaders, host: '127.0.0.1' },
  worker: { format: 'es' },
  build: {
    outDir: 'dist/app',
    target: 'es2022',
    rollupOptions: {
      input: {
        index: resolve(__dirname, 'index.html'),
        harness: resolve(__dirname, 'harness.html'),
      },
    },
  },
});
