/**
 * wllama (llama.cpp in WebAssembly, llama-server's completion path) as a `bench peers` runner:
 * the same GGUF as the engine, greedy, EOS ignored. wllama 3 takes a prompt as text only, so
 * llama.cpp tokenises it with the GGUF's vocabulary; its prompt token count is returned for the
 * caller to check against ours. Its module and wasm come from node_modules, served at
 * /peers/wllama/ (never a CDN).
 */
import type { Wllama as WllamaClass, WllamaLogger } from '@wllama/wllama';
import type { PeerLoaded, PeerRun, PeerRunRequest, PeerSpec } from './peers-types.js';
import { timedTokens, type PeerRunner } from './peers-runner.js';

export const WLLAMA_BASE = '/peers/wllama/';

/** One streamed chunk as llama-server sends it with `logprobs` (ids and the top log-probabilities). */
interface Chunk {
  choices: { logprobs?: { content?: { id: number; logprob: number; top_logprobs?: { id: number; logprob: number }[] }[] } | null }[];
  timings?: { predicted_n: number; prompt_n: number };
  /** llama-server's return_tokens: this chunk's token ids. */
  tokens?: number[];
}

export async function loadWllama(spec: Extract<PeerSpec, { engine: 'wllama' }>): Promise<PeerRunner & PeerLoaded> {
  const t0 = performance.now();
  const { Wllama } = (await import(/* @vite-ignore */ `${WLLAMA_BASE}index.js`)) as { Wllama: typeof WllamaClass };
  const log: string[] = [];
  const keep = (...a: unknown[]) => void log.push(a.map(String).join(' '));
  const logger: WllamaLogger = { debug: keep, log: keep, warn: keep, error: keep };
  const w = new Wllama({ default: `${WLLAMA_BASE}wasm/wllama.wasm` }, { logger, allowOffline: true });
  w.setCompat(null); // Chromium needs no compat build, which would come from a CDN
  const blob = await (await fetch(spec.model)).blob();
  await w.loadModel([blob], {
    n_threads: spec.threads, n_ctx: spec.ctx, n_batch: 512, n_parallel: 1, seed: 1,
    n_gpu_layers: spec.gpu ? 999 : 0,
  });
  const loadMs = performance.now() - t0;
  /** One streamed completion; with `withProbs`, each step's id and top-2 log-probabilities. */
  const complete = async (r: PeerRunRequest, withProbs: boolean): Promise<PeerRun> => {
    const ids: number[] = [];
    let promptTokens: number | undefined;
    const tops: [number, number][][] = [];
    const abort = new AbortController();
    const stream = (await w.createCompletion({
      prompt: r.text,
      max_tokens: r.maxTokens, temperature: 0, stream: true,
      abortSignal: abort.signal,
      ...({ ignore_eos: true, cache_prompt: false, timings_per_token: true, return_tokens: true, ...(withProbs && { logprobs: 2 }) } as object),
    })) as AsyncIterable<Chunk>;
    // A chunk can carry several tokens (llama-server holds back incomplete UTF-8): count them by
    // predicted_n, so that each token gets its share of the chunk's gap.
    async function* tokens(): AsyncGenerator<number> {
      let seen = 0;
      const it = stream[Symbol.asyncIterator]();
      let ended = false;
      try {
        for (let step = await it.next(); !(ended = !!step.done); step = await it.next()) {
          const c = step.value;
          const probs = c.choices[0]?.logprobs?.content ?? [];
          for (const p of probs) {
            ids.push(p.id);
            tops.push((p.top_logprobs ?? []).slice(0, 2).map((t) => [t.id, t.logprob]));
          }
          if (!probs.length) ids.push(...(c.tokens ?? []));
          promptTokens = c.timings?.prompt_n ?? promptTokens;
          const n = c.timings?.predicted_n ?? seen + 1;
          for (; seen < n; seen++) yield seen;
        }
      } finally {
        // stopped by the budget: cancel the request, and wait until wllama has freed its slot
        if (!ended) {
          abort.abort();
          try {
            while (!(await it.next()).done);
          } catch {
            // the abort itself
          }
        }
      }
    }
    let run: PeerRun;
    try {
      run = await timedTokens(tokens(), r);
    } catch (e) {
      // llama.cpp says why in its log, not in the error
      throw new Error(`${e instanceof Error ? e.message : String(e)}; wllama's log ends: ${log.slice(-6).join(' | ')}`);
    }
    run.stepMs = spread(run.stepMs);
    // llama.cpp's count includes the BOS it adds
    return { ...run, tokens: ids, ...(promptTokens !== undefined && { promptTokens }), ...(withProbs && { top2: tops }) };
  };
  const offload = log.map((l) => /offloaded (\d+)\/(\d+) layers to GPU/.exec(l)).find(Boolean);
  const onGpu = spec.gpu && offload && Number(offload[1]) > 0;
  if (spec.gpu && !onGpu) {
    await w.exit();
    const said = log.filter((l) => /gpu|offload|backend/i.test(l)).slice(-4).join(' | ');
    throw new Error(`wllama did not offload to WebGPU (${offload ? offload[0] : 'no offload line in its log'}; its log: ${said || 'nothing on GPUs'})`);
  }
  return {
    loadMs,
    backend: onGpu ? `webgpu (${offload![0]})` : `wasm, ${w.isMultithread() ? `${w.getNumThreads()} threads` : '1 thread'}`,
    async run(r: PeerRunRequest): Promise<PeerRun> {
      if (!r.top2) return complete(r, false);
      try {
        return await complete(r, true);
      } catch (e) {
        // llama-server's logprobs cannot encode a token that is a lone UTF-8 byte; the ids then
        // come from return_tokens, if this build sends them, and the margins are lost
        const run = await complete(r, false);
        return { ...run, note: `wllama's logprobs failed (${(e instanceof Error ? e.message : String(e)).split(';')[0]}; ${log.find((l) => l.includes('json.exception')) ?? ''})` };
      }
    },
    dispose: () => w.exit(),
  };
}

/**
 * Tokens that arrived in one chunk have gaps of ~0 after the first; give each the run's share of
 * the gap before them, so a held-back chunk does not pass for fast steps.
 */
function spread(steps: number[]): number[] {
  const out = [...steps];
  for (let i = 0; i < out.length;) {
    let j = i + 1;
    while (j < out.length && out[j]! < 0.05) j++;
    const share = out.slice(i, j).reduce((a, b) => a + b, 0) / (j - i);
    out.fill(share, i, j);
    i = j;
  }
  return out;
}
