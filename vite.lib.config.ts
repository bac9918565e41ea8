import { defineConfig } from 'vite';
import { resolve } from 'node:path';

/**
 * The embeddable SDK: `src/index.ts` as one self-contained ES module, `dist/lib/webgpu-tp.js`.
 * Everything is bundled in (comlink, idb-keyval, the WGSL sources and the shard worker, which
 * `src/engine/worker-group.ts` imports as `?worker&inline`), so the file works from a bundler,
 * from a bundler's dev server with dependency pre-bundling, and from a plain
 * `<script type="module">` with no bundler at all. Declarations come from `tsconfig.lib.json`.
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
    // One file even where the engine loads a module on demand (the calibration's GPU code).
    rollupOptions: {
      output: { codeSplitting: false },
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
