import { defineConfig } from '@playwright/test';

// The browser is launched by e2e/fixtures.ts through src/cli/browser.ts (system Chromium,
// WebGPU flags, COOP/COEP server), the same path the CLI and benchmarks use.
export default defineConfig({
  testDir: 'e2e',
  timeout: 300_000,
  workers: 1,
  fullyParallel: false,
  retries: 0,
  reporter: process.env.CI ? [['list'], ['json', { outputFile: 'test-results/e2e.json' }]] : [['list']],
  outputDir: 'test-results/artifacts',
});
