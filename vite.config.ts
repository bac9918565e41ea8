import { defineConfig, type Plugin } from 'vite';
import { resolve, join, normalize, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isFile, sendFile } from './src/cli/send-file.js';

const root = dirname(fileURLToPath(import.meta.url));

/** Cross-origin isolation: without it there is no SharedArrayBuffer, so no collectives. */
const isolationHeaders = {
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Embedder-Policy': 'require-corp',
  'Cross-Origin-Resource-Policy': 'same-origin',
};

/**
 * Serves model files under /models/ from WEBGPU_TP_MODELS if set, ../shared/models (the team's
 * test models, never copied into the repo), or ./models/, the first that has the file. Weights
 * stay out of the build.
 */
function serveModels(): Plugin {
  const env = process.env.WEBGPU_TP_MODELS;
  const dirs = [...(env ? [resolve(root, env)] : []), resolve(root, '../shared/models'), resolve(root, 'models')];
  return {
    name: 'webgpu-tp-models',
    configureServer(server) {
      server.middlewares.use('/models/', (req, res) => {
        let name: string;
        try {
          name = normalize(decodeURIComponent((req.url ?? '/').split('?')[0]!)).replace(/^([/\\.])+/, '');
        } catch {
          res.statusCode = 400;
          res.end('malformed URL escape');
          return;
        }
        const dir = name ? dirs.find((d) => isFile(join(d, name))) : undefined;
        if (!dir) {
          // A real 404 (a directory included): the SPA fallback would answer with index.html and status 200.
          res.statusCode = 404;
          res.end('model not found: put it in ./models/ (see README)');
          return;
        }
        sendFile(req, res, join(dir, name), {});
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
      // The demo, the page the CLI drives, and the test page the e2e specs drive (served from the
      // same build so that both pages load the same engine; the lib build ships neither).
      input: {
        index: resolve(root, 'index.html'),
        cli: resolve(root, 'src/cli/page/index.html'),
        peers: resolve(root, 'src/cli/page/peers.html'),
        test: resolve(root, 'test-support/page/index.html'),
      },
      // As in vite.lib.config.ts: @huggingface/gguf's re-exports of @huggingface/tasks are unused.
      treeshake: { moduleSideEffects: (id: string) => !id.includes('@huggingface/tasks') },
    },
  },
});
