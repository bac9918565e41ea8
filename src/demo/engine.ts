/** The demo's engine: loaded for the chosen model, devices and degree, reused until one changes, and shown per rank. */
import { createEngine, type Engine, type EngineOptions, type EngineStats, type LoadProgress } from '../index.js';
import { backendLabel, backendSummary, devicesFor, rankBackend, type Backend } from './devices.js';
import { charts, el } from './dom.js';
import { formatBytes, formatCount, formatMs, parameterCount } from './format.js';
import { session } from './session.js';
import { currentSource, resolveDevices, resolveTp, showPlacement } from './source.js';
import { setStatus } from './status.js';

function modelSummary(engine: Engine, label: string, loadMs: number, backends: Backend[]): string {
  const c = engine.config;
  const n = engine.tensorParallel;
  return `${label} · ${formatCount(parameterCount(c))} params · dim ${c.dim}, ${c.nLayers} layers, ${c.nHeads} heads, vocab ${c.vocabSize} · ` +
    `TP=${n} (${backendSummary(backends)} rank${n === 1 ? '' : 's'}) · loaded in ${formatMs(loadMs)}`;
}

/** The rank count the options ask for, when they give it; `auto` settles it only once placed. */
function askedRanks(o: Pick<EngineOptions, 'devices' | 'tensorParallel'>): number | undefined {
  if (Array.isArray(o.devices)) return o.devices.length;
  if (typeof o.devices === 'number') return o.devices;
  return typeof o.tensorParallel === 'number' ? o.tensorParallel : undefined;
}

/** The device column: what computes (WebAssembly SIMD, or the GPU adapter's name) and the rank's query heads. */
function deviceCell(backend: Backend, adapter: string, heads: string, spec: string | undefined): HTMLTableCellElement {
  const { device } = backendLabel(backend, adapter);
  return Object.assign(document.createElement('td'), {
    className: 'device',
    textContent: [device, heads].filter(Boolean).join(' · '),
    title: [backend === 'cpu' ? 'CPU rank: WebAssembly SIMD on its own worker thread' : `GPU rank: ${adapter}`, spec && `asked for: ${spec}`].filter(Boolean).join('\n'),
  });
}

/** Why the ranks run where they do, under the table: the placement's reason. */
function showReasons(stats: EngineStats | undefined): void {
  const why = stats?.placement?.reason;
  el.ranksWhy.hidden = !why;
  el.ranksWhy.textContent = why ? `Why: ${why}` : '';
}

/** The workers table: one row per rank, from `stats()`, each marked CPU or GPU. */
export function renderRanks(stats: EngineStats | undefined): void {
  showReasons(stats);
  if (!stats || stats.ranks.length === 0) {
    const td = Object.assign(document.createElement('td'), { colSpan: 6, className: 'muted', textContent: 'No workers yet' });
    el.ranksBody.replaceChildren(document.createElement('tr'));
    el.ranksBody.firstElementChild!.append(td);
    return;
  }
  el.ranksBody.replaceChildren(
    ...stats.ranks.map((r) => {
      const tr = document.createElement('tr');
      const cached = r.shard.fromCache;
      const first = document.createElement('td');
      const dot = document.createElement('span');
      dot.className = `dot${cached ? ' cached' : ''}`;
      dot.title = cached ? 'shard from the IndexedDB cache' : 'shard downloaded';
      const backend = rankBackend(stats, r.rank);
      tr.dataset.backend = backend;
      const kind = Object.assign(document.createElement('span'), { className: `kind kind-${backend}`, textContent: backendLabel(backend, r.adapter).kind });
      first.append(dot, String(r.rank), kind);
      first.title = r.adapter;
      const placed = stats.placement?.ranks[r.rank];
      const heads = placed ? `heads ${placed.heads[0]}–${placed.heads[1] - 1}` : '';
      const device = deviceCell(backend, placed?.adapter || r.adapter, heads, placed?.spec);
      const cells = [
        formatBytes(r.weightBytes),
        formatBytes(r.workBytes),
        r.allreduceRoundtripMs > 0 ? `${r.allreduceRoundtripMs.toFixed(2)} ms` : stats.ranks.length === 1 ? 'none' : '–',
        String(r.steps),
      ].map((text) => Object.assign(document.createElement('td'), { textContent: text }));
      tr.append(first, device, ...cells);
      return tr;
    }),
  );
}

export function showWarnings(stats: EngineStats): void {
  el.warnings.textContent = stats.warnings.length ? `⚠ ${stats.warnings[0]}${stats.warnings.length > 1 ? ` (+${stats.warnings.length - 1})` : ''}` : '';
  el.warnings.title = stats.warnings.join('\n');
}

/** The engine for the chosen model, devices and degree: the current one when none changed. */
export async function ensureEngine(signal: AbortSignal): Promise<Engine> {
  await session.checked;
  const src = currentSource();
  const choice = resolveDevices();
  const placement = devicesFor(choice, resolveTp());
  const key = `${src.key}|${JSON.stringify(placement)}`;
  if (session.current?.key === key) return session.current.engine;
  if (session.current) {
    el.engineInfo.textContent = 'Releasing the previous engine…';
    await dropEngine();
  }

  setStatus('loading', 'Loading model');
  const asked = askedRanks(placement);
  const kind = placement.devices === 'cpu' ? 'CPU rank' : Array.isArray(placement.devices) ? 'rank' : 'GPU rank';
  el.engineInfo.textContent = asked === undefined ? `Loading ${src.label}, one rank per adapter…` : `Loading ${src.label} over ${asked} ${kind}${asked === 1 ? '' : 's'}…`;
  el.placementInfo.hidden = true;
  el.cacheStatus.dataset.cache = 'loading';
  el.cacheStatus.textContent = 'Shard cache: loading…';
  charts.resetLoad(asked ?? 1);
  const onProgress = (p: LoadProgress) => charts.setLoad(p.rank, p.world, p.loadedBytes, p.totalBytes, p.fromCache);

  const engine = await createEngine({ model: src.model, tokenizer: src.tokenizer, ...placement, onProgress, signal });
  const stats = await engine.stats();
  session.current = { key, engine, label: src.label };
  const backends = stats.ranks.map((r) => rankBackend(stats, r.rank));
  // The engine's own ranks: under "auto" the last load drawn may be a candidate's that lost.
  charts.setLoaded(stats.ranks.map((r) => r.shard));
  charts.setBackends(backends);
  charts.setMemory(stats.ranks);
  renderRanks(stats);
  showWarnings(stats);
  showPlacement(stats);
  el.engineInfo.textContent = modelSummary(engine, src.label, stats.loadMs, backends);

  const ranks = stats.ranks.length;
  const hits = stats.ranks.filter((r) => r.shard.fromCache).length;
  const downloaded = stats.ranks.filter((r) => !r.shard.fromCache).reduce((a, r) => a + r.shard.bytes, 0);
  const cacheOff = stats.warnings.some((w) => w.includes('cache'));
  if (hits === ranks) {
    el.cacheStatus.dataset.cache = 'hit';
    el.cacheStatus.textContent = `Shard cache: ${hits}/${ranks} cache hits: every shard came from IndexedDB, no weight download`;
  } else {
    el.cacheStatus.dataset.cache = 'miss';
    el.cacheStatus.textContent = `Shard cache: ${hits}/${ranks} cache hits, ${formatBytes(downloaded)} downloaded${cacheOff ? ' (cache unavailable)' : ' and cached for next time'}`;
  }
  return engine;
}

/** Forgets the current engine and frees it: the next Generate loads a new one. */
export function dropEngine(): Promise<void> {
  const old = session.current?.engine;
  session.current = undefined;
  renderRanks(undefined);
  return old?.dispose() ?? Promise.resolve();
}
