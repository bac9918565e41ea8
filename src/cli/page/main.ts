/**
 * The CLI's page: what `webgpu-tp generate` and `bench` drive in headless Chromium through
 * src/cli/browser.ts. Its entry points are exposed on `window.tp` so that the Node side can call
 * them with `page.evaluate(() => window.tp.engine.generate(...))`.
 */
import * as engine from './engine';
import * as collective from './collective';
import * as tabs from './tabs';
import * as kernels from './kernels';
import * as shards from './shards';
import * as cpu from './cpu-bench';
import * as grammar from './grammar';

const tp = { engine, collective, tabs, kernels, shards, cpu, grammar };

// Not declared on Window: the test page declares its own `tp`; the Node side casts `window`.
Object.assign(window, { tp, tpReady: true });
