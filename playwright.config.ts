import { defineConfig } from '@playwright/test';

// The browser is launched by e2e/fixtures.ts through src/cli/browser.ts (system Chromium,
// WebGPU flags, COOP/COEP server), the same path the CLI and benchmarks use.
export default defineConfig({
  testDir: 'e2e',
  // The test models (stories260K-q8.bin derived when missing) and a Chromium, found once.
  globalSetup: './e2e/global-setup.ts',
  timeout: 300_000,
  // Two browsers at once: the second fills the time the first waits on GPU readbacks; on 2
  // cores a third finds no idle CPU left. Files run whole (the serial ones reuse loaded engines
  // from test to test). TP_E2E_WORKERS overrides.
  workers: Number(process.env.TP_E2E_WORKERS ?? 2),
  fullyParallel: false,
  retries: 0,
  reporter: process.env.CI ? [['list'], ['json', { outputFile: 'test-results/e2e.json' }]] : [['list']],
  outputDir: 'test-results/artifacts',
});
