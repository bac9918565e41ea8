import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'workers/**/*.test.ts'],
    environment: 'node',
    // Worker threads that run file after file, each module imported once: half the CPU time of
    // a fresh fork per file, and CI runs these beside the browser tests on the same 2 cores.
    pool: 'threads',
    isolate: false,
    // stories260K-q8.bin derived from stories260K.bin when the models folder lacks it.
    globalSetup: ['e2e/test-models.ts'],
    setupFiles: ['test-support/typed-array-equality.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    reporters: process.env.CI ? ['default', ['json', { outputFile: 'test-results/unit.json' }]] : ['default'],
  },
});
