/**
 * onnxruntime-web as a `bench peers` runner: the ONNX export of the f32 weights
 * (src/export/onnx.ts), one session step per token with the KV cache fed back, greedy argmax on
 * the logits. ORT's own files come from node_modules, served at /peers/ort/ (never a CDN).
 */
import type * as Ort from 'onnxruntime-web';
import { onnxNames } from '../../export/onnx-names.js';
import type { PeerLoaded, PeerRun, PeerRunRequest, PeerSpec } from './peers-types.js';
import { timedTokens, top2, type PeerRunner } from './peers-runner.js';

export const ORT_BASE = '/peers/ort/';

export async function loadOrt(spec: Extract<PeerSpec, { engine: 'onnxruntime-web' }>): Promise<PeerRunner & PeerLoaded> {
  const t0 = performance.now();
  // The wasm-only bundle for the wasm provider (what a CPU user would import), the WebGPU one for WebGPU.
  const bundle = spec.ep === 'webgpu' ? 'ort.webgpu.min.mjs' : 'ort.wasm.min.mjs';
  const ort = (await import(/* @vite-ignore */ `${ORT_BASE}${bundle}`)) as typeof Ort;
  ort.env.wasm.wasmPaths = ORT_BASE;
  ort.env.wasm.numThreads = spec.threads;
  const bytes = new Uint8Array(await (await fetch(spec.model)).arrayBuffer());
  const session = await ort.InferenceSession.create(bytes, {
    executionProviders: [spec.ep],
    graphOptimizationLevel: 'all',
    // on WebGPU the KV cache stays on the device between steps; only the logits are read back
    ...(spec.ep === 'webgpu' && { preferredOutputLocation: 'gpu-buffer' as const }),
  });
  const loadMs = performance.now() - t0;
  const layers = session.inputNames.filter((n) => n.endsWith('.key')).length;
  const kvShape = inputShape(session, onnxNames.pastKey(0));
  return {
    loadMs,
    backend: `${spec.ep}${spec.ep === 'wasm' ? `, ${spec.threads} thread${spec.threads > 1 ? 's' : ''}` : ''}`,
    async run(r: PeerRunRequest): Promise<PeerRun> {
      const tops: [number, number][][] = [];
      async function* steps(): AsyncGenerator<number> {
        const empty = () => new ort.Tensor('float32', new Float32Array(0), [1, kvShape.heads, 0, kvShape.headSize]);
        let past: Ort.Tensor[] = Array.from({ length: 2 * layers }, empty);
        let feed = r.prompt;
        let pos = 0;
        try {
          for (let i = 0; i < r.maxTokens; i++) {
            const feeds: Record<string, Ort.Tensor> = {
              [onnxNames.inputIds]: new ort.Tensor('int64', BigInt64Array.from(feed, BigInt), [1, feed.length]),
              [onnxNames.positionIds]: new ort.Tensor('int64', BigInt64Array.from(feed, (_, j) => BigInt(pos + j)), [1, feed.length]),
            };
            for (let l = 0; l < layers; l++) {
              feeds[onnxNames.pastKey(l)] = past[2 * l]!;
              feeds[onnxNames.pastValue(l)] = past[2 * l + 1]!;
            }
            const out = await session.run(feeds);
            for (const t of past) t.dispose();
            past = Array.from({ length: layers }, (_, l) => [out[onnxNames.presentKey(l)]!, out[onnxNames.presentValue(l)]!]).flat();
            const logitsTensor = out[onnxNames.logits]!;
            const logits = (await logitsTensor.getData()) as Float32Array;
            logitsTensor.dispose();
            const best = top2(logits);
            if (r.top2) tops.push(best);
            pos += feed.length;
            feed = [best[0][0]];
            yield best[0][0];
          }
        } finally {
          // also when the budget stops the run early
          for (const t of past) t.dispose();
        }
      }
      const run = await timedTokens(steps(), r);
      return r.top2 ? { ...run, top2: tops } : run;
    },
    dispose: () => session.release(),
  };
}

function inputShape(session: Ort.InferenceSession, name: string): { heads: number; headSize: number } {
  const meta = session.inputMetadata.find((m) => m.name === name);
  const shape = meta && 'shape' in meta ? meta.shape : [];
  return { heads: Number(shape[1]), headSize: Number(shape[3]) };
}

