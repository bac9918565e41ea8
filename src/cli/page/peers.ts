/**
 * The page `bench peers` drives: one engine configuration per browser context (ours, wllama or
 * onnxruntime-web), loaded once and then run round after round. Entry points are on
 * `window.tpPeers`; errors come back as `{error}`, since Playwright would flatten them.
 */
import { serializeError, type SerializedError } from '../../errors.js';
import type { PeerLoaded, PeerRun, PeerRunRequest, PeerSpec } from './peers-types.js';
import type { PeerRunner } from './peers-runner.js';
import { loadOurs } from './peers-ours.js';
import { loadWllama } from './peers-wllama.js';
import { loadOrt } from './peers-ort.js';

let runner: PeerRunner | undefined;

async function load(spec: PeerSpec): Promise<PeerLoaded | { error: SerializedError }> {
  try {
    if (runner) throw new Error('this page already holds an engine: one configuration per context');
    const r = spec.engine === 'ours' ? await loadOurs(spec) : spec.engine === 'wllama' ? await loadWllama(spec) : await loadOrt(spec);
    runner = r;
    return { loadMs: r.loadMs, backend: r.backend };
  } catch (e) {
    return { error: serializeError(e) };
  }
}

async function run(req: PeerRunRequest): Promise<PeerRun | { error: SerializedError }> {
  try {
    if (!runner) throw new Error('load a configuration first');
    return await runner.run(req);
  } catch (e) {
    return { error: serializeError(e) };
  }
}

async function dispose(): Promise<void> {
  await runner?.dispose();
  runner = undefined;
}

Object.assign(window, { tpPeers: { load, run, dispose }, tpReady: true });
