/**
 * The harness page: the one page that tests, benchmarks and the CLI drive in headless Chromium.
 * Each area puts its entry points in its own module; they are exposed on `window.tp` so that
 * Playwright can call them with `page.evaluate(() => window.tp.collective.xxx(...))`.
 */
import * as collective from './collective';
import * as kernels from './kernels';
import * as engine from './engine';
import * as tabs from './tabs';
import * as q8 from './kernels-q8';
import * as q4 from './kernels-q4';
import * as q4engine from './engine-q4';
import * as f16 from './kernels-f16';
import * as shards from './shards';

const tp = { collective, kernels, engine, tabs, q8, q4, q4engine, f16, shards };
export type Harness = typeof tp;

declare global {
  interface Window {
    tp: Harness;
    tpReady: boolean;
  }
}

window.tp = tp;
window.tpReady = true;
