import { defineConfig } from 'vite';
import { resolve } from 'node:path';

/**
 * The embeddable SDK: `src/index.ts` as one self-contained ES module, `dist/lib/webgpu-tp.js`,
 * plus the grammar library behind structured output, `dist/lib/xgrammar-<hash>.js` (~1 MB),
 * which the engine imports only when a request has a `responseFormat`. Everything else is
 * bundled into the one file (comlink, idb-keyval, the WGSL sources and the shard worker, which
 * `src/engine/worker-group.ts` imports as `?worker&inline`), so it works from a bundler, from a
 * bundler's dev server with dependency pre-bundling, and from a plain `<script type="module">`
 * with no bundler at all. Declarations come from `tsconfig.lib.json`.
 */
export default defineConfig({
  publicDir: false,
  worker: { format: 'es' },
  build: {
    outDir: 'dist/lib',
    emptyOutDir: true,
    target: 'es2022',
    // No source maps: the inline worker's map would be a stray file its Blob URL cannot reach.
    // The output is not minified beyond renaming, so it stays readable.
    sourcemap: false,
    rollupOptions: {
      // Two chunks: the grammar library, and everything else in the entry, even what the engine
      // loads on demand (the calibration's GPU code). The grammar chunk imports a few bundler
      // helpers from the entry, which it exports beside the SDK's names (hence 'allow-extension').
      preserveEntrySignatures: 'allow-extension',
      output: {
        codeSplitting: {
          groups: [
            { name: 'xgrammar', test: /@mlc-ai[\\/]web-xgrammar[\\/]/ },
            { name: 'webgpu-tp', test: (id: string) => !/@mlc-ai[\\/]web-xgrammar[\\/]/.test(id) },
          ],
        },
      },
      // @huggingface/gguf re-exports @huggingface/tasks, whose modules do not declare themselves
      // free of side effects, so ~270 kB of model-card data would ride along unused.
      treeshake: { moduleSideEffects: (id: string) => !id.includes('@huggingface/tasks') },
    },
    lib: {
      entry: resolve(import.meta.dirname, 'src/index.ts'),
      formats: ['es'],
      fileName: () => 'webgpu-tp.js',
    },
  },
});
