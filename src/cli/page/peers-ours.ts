/** The engine itself as a `bench peers` runner: the same protocol as the peers, through the public engine. */
import { createEngine, type Engine } from '../../engine/engine.js';
import type { PeerLoaded, PeerRun, PeerRunRequest, PeerSpec } from './peers-types.js';
import type { PeerRunner } from './peers-runner.js';
import { timedTokens } from './peers-runner.js';

export async function loadOurs(spec: Extract<PeerSpec, { engine: 'ours' }>): Promise<PeerRunner & PeerLoaded> {
  const t0 = performance.now();
  const engine: Engine = await createEngine({
    model: spec.model, tensorParallel: spec.tp, devices: spec.devices, int8Activations: spec.int8Activations, split: spec.split,
    // every configuration loads from the server: no shard cache on either side
    cache: false, maxBatch: 1, timeoutMs: 600_000,
  });
  const loadMs = performance.now() - t0;
  const stats = await engine.stats();
  return {
    loadMs,
    backend: `${stats.ranks[0]?.backend ?? '?'} ranks (${stats.ranks[0]?.adapter ?? '?'})`,
    async run(r: PeerRunRequest): Promise<PeerRun> {
      // no prefix KV reuse: every run prefills the whole prompt, as the peers' runs do (wllama's cache_prompt: false)
      const stream = engine.generateTokens(r.prompt, { maxTokens: r.maxTokens, temperature: 0, ignoreEos: true, cachePrompt: false });
      return timedTokens(async function* () {
        for await (const c of stream) if (c.token >= 0) yield c.token;
      }(), r);
    },
    dispose: () => engine.dispose(),
  };
}
