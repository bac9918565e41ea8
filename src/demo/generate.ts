/** One generation: stream the text, then poll `stats()` for the step and throughput charts. */
import { InvalidArgumentError, type Engine, type EngineStats } from '../index.js';
import type { StepSegments } from './charts.js';
import { charts, el } from './dom.js';
import { formatRate } from './format.js';
import { dropEngine, ensureEngine, renderRanks, showWarnings } from './engine.js';
import { session, syncControls } from './session.js';
import { currentSource } from './source.js';
import { BROKEN, describe, hideError, missingModel, probe, setStatus, showError } from './status.js';

const POLL_MS = 500;

/** Per-rank running sums of the step breakdown, to turn `stats()` means into interval means. */
interface Sums {
  steps: number;
  compute: number;
  readback: number;
  allreduce: number;
  upload: number;
  scheduler: number;
}

function sumsOf(stats: EngineStats): Sums[] {
  return stats.ranks.map((r) => ({
    steps: r.steps,
    compute: r.breakdown.compute_ms * r.steps,
    readback: r.breakdown.readback_ms * r.steps,
    allreduce: r.breakdown.allreduce_ms * r.steps,
    upload: r.breakdown.upload_ms * r.steps,
    scheduler: r.breakdown.scheduler_ms * r.steps,
  }));
}

/** Mean step of each rank between two snapshots `wallMs` apart; idle = step time − the rest. */
function segments(now: Sums[], before: Sums[] | undefined, wallMs: number): StepSegments[] | undefined {
  const out: StepSegments[] = [];
  for (let r = 0; r < now.length; r++) {
    const a = now[r]!;
    const b = before?.[r] ?? { steps: 0, compute: 0, readback: 0, allreduce: 0, upload: 0, scheduler: 0 };
    const n = a.steps - b.steps;
    if (n <= 0) return undefined;
    const s = {
      compute: (a.compute - b.compute) / n,
      readback: (a.readback - b.readback) / n,
      allreduce: (a.allreduce - b.allreduce) / n,
      upload: (a.upload - b.upload) / n,
      scheduler: (a.scheduler - b.scheduler) / n,
    };
    const busy = s.compute + s.readback + s.allreduce + s.upload + s.scheduler;
    out.push({ ...s, idle: Math.max(0, wallMs / n - busy) });
  }
  return out;
}

/** Polls `stats()` every ~500 ms during decode and feeds the step and throughput charts. */
function startPolling(engine: Engine, t0: number, tokens: () => number) {
  let prev: Sums[] | undefined;
  let tPrev = t0;
  let tokPrev = tokens();
  let stopped = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let busy: Promise<void> = Promise.resolve();
  const tick = async () => {
    const stats = await engine.stats();
    const now = performance.now();
    const sums = sumsOf(stats);
    const seg = segments(sums, prev, now - tPrev);
    if (seg) charts.setSteps(seg);
    renderRanks(stats);
    const n = tokens();
    if (now > tPrev) charts.addThroughput((now - t0) / 1000, ((n - tokPrev) * 1000) / (now - tPrev));
    prev = sums;
    tPrev = now;
    tokPrev = n;
  };
  const schedule = () => {
    timer = setTimeout(() => {
      busy = tick().catch(() => {});
      void busy.then(() => {
        if (!stopped) schedule();
      });
    }, POLL_MS);
  };
  schedule();
  return {
    /** Stops polling and shows the mean over the whole decode (from t0 to `tEnd`). */
    async stop(tEnd: number): Promise<void> {
      stopped = true;
      clearTimeout(timer);
      await busy;
      // A fast decode (CPU ranks) may end before the first poll; a short tail after the last one would only be noise.
      if (tEnd > tPrev && (tPrev === t0 || tEnd - tPrev >= POLL_MS / 2)) charts.addThroughput((tEnd - t0) / 1000, ((tokens() - tokPrev) * 1000) / (tEnd - tPrev));
      try {
        const stats = await engine.stats();
        const seg = segments(sumsOf(stats), undefined, tEnd - t0);
        if (seg) charts.setSteps(seg);
        renderRanks(stats);
        showWarnings(stats);
      } catch {
        // The engine may be gone (page closing); the charts keep their last values.
      }
    },
  };
}

function readSettings(): { prompt: string; maxTokens: number; temperature: number } {
  const prompt = el.prompt.value;
  const maxTokens = Number(el.maxTokens.value);
  const temperature = Number(el.temperature.value);
  if (!prompt.trim()) throw new InvalidArgumentError('The prompt is empty', 'Type a prompt, e.g. "Once upon a time"');
  if (!Number.isInteger(maxTokens) || maxTokens < 1) throw new InvalidArgumentError(`Max tokens must be a whole number ≥ 1, got "${el.maxTokens.value}"`);
  if (el.temperature.value.trim() === '' || !(temperature >= 0)) throw new InvalidArgumentError(`Temperature must be a number ≥ 0, got "${el.temperature.value}"`, 'Use 0 for greedy decoding, about 0.8 for varied stories');
  return { prompt, maxTokens, temperature };
}

let textNode = document.createTextNode('');

/**
 * Streamed text and the token counter reach the page once an animation frame: a small model on
 * CPU ranks streams ~1000 tokens/s, and laying the page out per token took main-thread time that
 * sits between the engine's steps.
 */
const view = { text: '', tokens: '', tps: '', frame: 0 };

function flushOutput(): void {
  if (view.frame) cancelAnimationFrame(view.frame);
  view.frame = 0;
  if (view.text) {
    const o = el.output;
    const atBottom = o.scrollHeight - o.scrollTop - o.clientHeight < 24;
    textNode.appendData(view.text);
    view.text = '';
    if (atBottom) o.scrollTop = o.scrollHeight;
  }
  if (view.tokens) el.tokenCount.textContent = view.tokens;
  if (view.tps) el.tps.textContent = view.tps;
  view.tokens = view.tps = '';
}

function showLater(o: { text?: string; tokens?: number; tps?: string }): void {
  if (o.text) view.text += o.text;
  if (o.tokens !== undefined) view.tokens = String(o.tokens);
  if (o.tps) view.tps = o.tps;
  view.frame ||= requestAnimationFrame(flushOutput);
}

function resetOutput(prompt: string): void {
  if (view.frame) cancelAnimationFrame(view.frame);
  Object.assign(view, { text: '', tokens: '', tps: '', frame: 0 });
  el.outputPrompt.textContent = prompt;
  textNode = document.createTextNode('');
  el.outputText.replaceChildren(textNode);
  el.output.classList.remove('empty');
  el.tokenCount.textContent = '0';
  el.tps.textContent = '–';
  el.prefill.textContent = '–';
}

export async function generate(): Promise<void> {
  if (session.run || !session.environmentOk) return;
  hideError();
  let settings;
  try {
    settings = readSettings();
  } catch (e) {
    showError(describe(e));
    return;
  }
  const ac = new AbortController();
  session.run = ac;
  syncControls();
  resetOutput(settings.prompt);
  charts.resetThroughput();
  let poller: ReturnType<typeof startPolling> | undefined;
  let count = 0;
  let tLast = 0;
  try {
    const engine = await ensureEngine(ac.signal);
    setStatus('generating', 'Generating');
    await engine.resetStats();
    let tFirst = 0;
    for await (const chunk of engine.generate(settings.prompt, {
      maxTokens: settings.maxTokens, temperature: settings.temperature, topP: 0.9, signal: ac.signal,
    })) {
      if (chunk.text) showLater({ text: chunk.text });
      if (chunk.token >= 0) {
        count++;
        tLast = performance.now();
        showLater({ tokens: count });
        if (count === 1) {
          // Per-step timings are about decode: drop what prefill accumulated.
          await engine.resetStats();
          tFirst = performance.now();
          poller = startPolling(engine, tFirst, () => count);
        } else {
          showLater({ tps: formatRate(((count - 1) * 1000) / (tLast - tFirst)) });
        }
      }
      if (chunk.stats) {
        flushOutput();
        const s = chunk.stats;
        if (s.generatedTokens > 1) el.tps.textContent = formatRate(s.decodeTokensPerS);
        el.prefill.textContent = `${formatRate(s.prefillTokensPerS)} tok/s`;
        setStatus('done', s.finishReason === 'length' ? 'Done · max tokens' : 'Done · end of story');
      }
    }
  } catch (e) {
    const shown = describe(e);
    if (shown.code === 'ABORTED' || ac.signal.aborted) {
      setStatus('stopped', count ? `Stopped after ${count} tokens` : 'Stopped');
      if (!session.current) el.engineInfo.textContent = 'Loading was stopped: the model loads again on the next Generate.';
    } else {
      setStatus('error', 'Error');
      if (BROKEN.has(shown.code)) void dropEngine();
      if (!session.current) el.engineInfo.textContent = 'No engine loaded: the model loads again on the next Generate.';
      // A URL that is not there gets the how-to-get-a-model panel rather than a parse error.
      const src = (() => {
        try {
          return currentSource();
        } catch {
          return undefined;
        }
      })();
      if ((shown.code === 'MODEL_FORMAT' || shown.code === 'MODEL_FETCH') && typeof src?.model === 'string') {
        const p = await probe(src.model);
        if (p.state === 'missing') Object.assign(shown, missingModel(src.model, p.status));
      }
      showError(shown);
      if (el.cacheStatus.dataset.cache === 'loading') {
        el.cacheStatus.dataset.cache = '';
        el.cacheStatus.textContent = 'Shard cache: nothing loaded';
      }
    }
  } finally {
    flushOutput();
    await poller?.stop(tLast);
    session.run = undefined;
    syncControls();
  }
}
