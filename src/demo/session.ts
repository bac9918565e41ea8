/** What the demo's modules share: the loaded engine, the run in progress, and what this browser can run on. */
import type { Engine } from '../index.js';
import type { GpuKind } from './devices.js';
import { el } from './dom.js';

export const session: {
  /** The engine for the model, devices and degree last asked for. */
  current?: { key: string; engine: Engine; label: string };
  /** The generation in progress (loading included). */
  run?: AbortController;
  /** Cross-origin isolated: every engine needs it (the all-reduce is over SharedArrayBuffer). */
  environmentOk: boolean;
  /** What the best WebGPU adapter is, and its name; `auto` picks the kind of rank from it. */
  gpu: GpuKind;
  adapterName: string;
  /** Settles when the environment check is done: `auto` must not decide before it. */
  checked: Promise<void>;
} = { environmentOk: true, gpu: 'none', adapterName: '', checked: Promise.resolve() };

export function syncControls(): void {
  const busy = !!session.run;
  el.generate.disabled = busy || !session.environmentOk;
  el.stop.disabled = !busy;
  el.tp.disabled = busy;
  el.devices.disabled = busy;
  for (const t of el.tabs) t.disabled = busy;
  el.modelUrl.disabled = busy;
  el.tokenizerUrl.disabled = busy;
  el.hfUrl.disabled = busy;
  el.files.disabled = busy;
}
