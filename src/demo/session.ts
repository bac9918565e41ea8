/** What the demo's modules share: the loaded engine, the run in progress, and whether this browser can run at all. */
import type { Engine } from '../index.js';
import { el } from './dom.js';

export const session: {
  /** The engine for the model and degree last asked for, and which of its shards came from the cache. */
  current?: { key: string; engine: Engine; label: string; fromCache: Map<number, boolean> };
  /** The generation in progress (loading included). */
  run?: AbortController;
  environmentOk: boolean;
} = { environmentOk: true };

export function syncControls(): void {
  const busy = !!session.run;
  el.generate.disabled = busy || !session.environmentOk;
  el.stop.disabled = !busy;
  el.tp.disabled = busy;
  for (const t of el.tabs) t.disabled = busy;
  el.modelUrl.disabled = busy;
  el.tokenizerUrl.disabled = busy;
  el.hfUrl.disabled = busy;
  el.files.disabled = busy;
}
