/**
 * The test page: the one page the e2e specs drive in headless Chromium. It holds the CLI page's
 * entry points (src/cli/page/) and the tests' own beside them, on `window.tp`, so that Playwright
 * can call them with `page.evaluate(() => window.tp.kernels.testMatmul(...))`.
 */
import * as cliEngine from '../../src/cli/page/engine';
import * as cliTabs from '../../src/cli/page/tabs';
import * as engine from './engine';
import * as collective from './collective';
import * as tabs from './tabs';
import * as kernels from './kernels';
import * as q8 from './kernels-q8';
import * as q4 from './kernels-q4';
import * as q4engine from './engine-q4';
import * as q8m from './kernels-q8m';
import * as f16 from './kernels-f16';
import { generateOnDefault, onGpu } from './gpu-default';
import * as api from './api';
import * as qkNorm from './kernels-qk-norm';

const tp = {
  // Every entry that loads an engine from PageGenerateOptions runs it on WebGPU unless told otherwise (gpu-default.ts).
  engine: {
    ...cliEngine, ...engine, generateOnDefault,
    generate: onGpu(cliEngine.generate), timedConcurrent: onGpu(cliEngine.timedConcurrent), engineFor: onGpu(cliEngine.engineFor),
    load: onGpu(engine.load), generateConcurrent: onGpu(engine.generateConcurrent), generateWithFault: onGpu(engine.generateWithFault),
    runRequests: onGpu(engine.runRequests), cancelDuring: onGpu(engine.cancelDuring),
  },
  collective,
  tabs: { ...cliTabs, ...tabs },
  kernels,
  q8,
  q4,
  q4engine,
  q8m,
  f16,
  api,
  qkNorm,
};
export type TestPage = typeof tp;

declare global {
  interface Window {
    tp: TestPage;
    tpReady: boolean;
  }
}

window.tp = tp;
window.tpReady = true;
