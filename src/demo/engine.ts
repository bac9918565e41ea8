/** The demo's engine: loaded for the chosen model and degree, reused until either changes, and shown per rank. */
import { createEngine, type Engine, type EngineStats, type LoadProgress } from '../index.js';
import { charts, el } from './dom.js';
import { formatBytes, formatCount, formatMs, parameterCount } from './format.js';
import { session } from './session.js';
import { currentSource, resolveTp, showPlacement } from './source.js';
import { setStatus } from './status.js';

function modelSummary(engine: Engine, label: string, loadMs: number): string {
  const c = engine.config;
  return `${label} · ${formatCount(parameterCount(c))} params · dim ${c.dim}, ${c.nLayers} layers, ${c.nHeads} heads, vocab ${c.vocabSize} · ` +
    `TP=${engine.tensorParallel} (${engine.tensorParallel} worker${engine.tensorParallel === 1 ? '' : 's'}) · loaded in ${formatMs(loadMs)}`;
}

/** The workers table: one row per rank, from `stats()`. */
export function renderRanks(stats: EngineStats | undefined): void {
  if (!stats || stats.ranks.length === 0) {
    const td = Object.assign(document.createElement('td'), { colSpan: 6, className: 'muted', textContent: 'No workers yet' });
    el.ranksBody.replaceChildren(document.createElement('tr'));
    el.ranksBody.firstElementChild!.append(td);
    return;
  }
  el.ranksBody.replaceChildren(
    ...stats.ranks.map((r) => {
      const tr = document.createElement('tr');
      const cached = session.current?.fromCache.get(r.rank);
      const first = document.createElement('td');
      const dot = document.createElement('span');
      dot.className = `dot${cached ? ' cached' : ''}`;
      dot.title = cached ? 'shard from the IndexedDB cache' : 'shard downloaded';
      first.append(dot, String(r.rank));
      first.title = r.adapter;
      const placed = stats.placement?.ranks[r.rank];
      const device = Object.assign(document.createElement('td'), {
        textContent: placed ? `${placed.adapter} · heads ${placed.heads[0]}–${placed.heads[1] - 1}` : r.adapter,
        title: placed ? `asked for: ${placed.spec}` : '',
      });
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

/** The engine for the chosen model and degree: the current one when neither changed. */
export async function ensureEngine(signal: AbortSignal): Promise<Engine> {
  const src = currentSource();
  const tp = resolveTp();
  const key = `${src.key}|tp=${tp}`;
  if (session.current?.key === key) return session.current.engine;
  if (session.current) {
    el.engineInfo.textContent = 'Releasing the previous engine…';
    await dropEngine();
  }

  setStatus('loading', 'Loading model');
  el.engineInfo.textContent = tp === 'auto' ? `Loading ${src.label}, one worker per adapter…` : `Loading ${src.label} over ${tp} worker${tp === 1 ? '' : 's'}…`;
  el.placementInfo.hidden = true;
  el.cacheStatus.dataset.cache = 'loading';
  el.cacheStatus.textContent = 'Shard cache: loading…';
  charts.resetLoad(tp === 'auto' ? 1 : tp);
  const fromCache = new Map<number, boolean>();
  const shardBytes = new Map<number, number>();
  const onProgress = (p: LoadProgress) => {
    charts.setLoad(p.rank, p.loadedBytes, p.totalBytes, p.fromCache);
    if (p.loadedBytes >= p.totalBytes) {
      fromCache.set(p.rank, p.fromCache);
      shardBytes.set(p.rank, p.totalBytes);
    }
  };

  const engine = await createEngine({ model: src.model, tokenizer: src.tokenizer, tensorParallel: tp, onProgress, signal });
  session.current = { key, engine, label: src.label, fromCache };
  const stats = await engine.stats();
  charts.setMemory(stats.ranks);
  renderRanks(stats);
  showWarnings(stats);
  showPlacement(stats);
  el.engineInfo.textContent = modelSummary(engine, src.label, stats.loadMs);
  const ranks = engine.tensorParallel;

  const hits = [...fromCache.values()].filter(Boolean).length;
  const downloaded = [...shardBytes.entries()].filter(([r]) => !fromCache.get(r)).reduce((a, [, b]) => a + b, 0);
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
