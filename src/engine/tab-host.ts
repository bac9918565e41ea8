/**
 * The host's side of ranks in other tabs: waits on the join channel for the tabs it needs
 * (giving each the next tab rank), then watches each one's heartbeats. A tab that says goodbye
 * (its page closed) or falls silent (frozen, or gone without a goodbye) makes its peer's `died`
 * reject with a typed error naming the rank. Wire format: src/engine/tab-link.ts.
 */
import type * as Comlink from 'comlink';
import { AbortedError, CollectiveTimeoutError, TabJoinTimeoutError, WorkerFailedError } from '../errors.js';
import { channelEndpoint, joinChannelName, randomId, rpcChannels, TAB_HEARTBEAT_MS } from './tab-link.js';
import type { JoinMessage } from '../protocol.js';

/**
 * What every error of a rank in another tab tells the user: the engine does not rebuild it
 * (ARCHITECTURE.md, decision 19).
 */
export const TAB_REMEDY = 'An engine with ranks in other tabs does not rebuild them: dispose() it and create a new one (and reopen the join tab)';

/** One joined tab, as the host talks to it. */
export interface TabPeer {
  rank: number;
  /** Comlink endpoint to that tab's shard worker. */
  endpoint: Comlink.Endpoint & { close(): void };
  /** Rejects when the tab says goodbye or stays silent for `silenceMs`. Never resolves. */
  died: Promise<never>;
  /** Tells the tab's page what its rank is doing (it shows it). */
  setState(state: 'loading' | 'running'): void;
}

export interface TabHost {
  session: string;
  peers: Map<number, TabPeer>;
  /** Says goodbye to every tab (they show "host gone") and stops listening. */
  close(reason: string): void;
}

export interface AcceptTabsOptions {
  id: string;
  /** The ranks to hand out, in the order tabs offer themselves. */
  ranks: number[];
  world: number;
  /** Longest wait for every tab to be ready (ms). */
  joinTimeoutMs: number;
  /** Longest silence of a joined tab before it counts as gone (ms); also its collectives' timeout. */
  silenceMs: number;
  signal?: AbortSignal;
}

/** Waits until a tab has joined for each of `ranks`; throws `TabJoinTimeoutError` if they do not all come in time. */
export async function acceptTabs(o: AcceptTabsOptions): Promise<TabHost> {
  const session = randomId();
  const ch = new BroadcastChannel(joinChannelName(o.id));
  const post = (m: JoinMessage) => ch.postMessage(m);
  const byTab = new Map<string, number>();
  const ready = new Set<number>();
  const lastHeard = new Map<number, number>();
  const deaths = new Map<number, { died: Promise<never>; kill(e: Error): void; dead: boolean }>();
  for (const r of o.ranks) {
    let kill!: (e: Error) => void;
    const died = new Promise<never>((_, reject) => (kill = reject));
    died.catch(() => {});
    const d = { died, dead: false, kill: (e: Error) => {
      if (d.dead) return;
      d.dead = true;
      kill(e);
    } };
    deaths.set(r, d);
  }
  let allReady!: () => void;
  const joined = new Promise<void>((ok) => (allReady = ok));

  ch.onmessage = (e: MessageEvent<JoinMessage>) => {
    const m = e.data;
    if (m.kind === 'offer') {
      let rank = byTab.get(m.tab);
      if (rank === undefined) {
        const taken = new Set(byTab.values());
        rank = o.ranks.find((r) => !taken.has(r));
        if (rank === undefined) return; // every tab rank is taken: the page keeps offering, for another host
        byTab.set(m.tab, rank);
      }
      post({ kind: 'accept', tab: m.tab, session, rank, world: o.world, timeoutMs: o.silenceMs });
      return;
    }
    if (!('session' in m) || m.session !== session || m.kind === 'host-beat' || m.kind === 'accept' || m.kind === 'state') return;
    if (m.rank === undefined || !deaths.has(m.rank)) return;
    lastHeard.set(m.rank, performance.now());
    if (m.kind === 'ready') {
      ready.add(m.rank);
      if (ready.size === o.ranks.length) allReady();
    } else if (m.kind === 'bye') {
      if (!ready.has(m.rank)) {
        // It left before it was ready: free its rank for another tab.
        for (const [t, r] of byTab) if (r === m.rank) byTab.delete(t);
        return;
      }
      deaths.get(m.rank)!.kill(new WorkerFailedError(m.rank, `its tab ${m.reason}`, TAB_REMEDY));
    }
  };
  const beat = setInterval(() => {
    post({ kind: 'host-beat', session });
    const now = performance.now();
    for (const r of ready) {
      if (now - lastHeard.get(r)! > o.silenceMs) {
        deaths.get(r)!.kill(new CollectiveTimeoutError('heartbeat', 0, [r], o.silenceMs, undefined, `Its tab is frozen or was closed. ${TAB_REMEDY}`));
      }
    }
  }, TAB_HEARTBEAT_MS);
  const endpoints: (Comlink.Endpoint & { close(): void })[] = [];
  const close = (reason: string) => {
    clearInterval(beat);
    post({ kind: 'bye', session, reason });
    ch.close();
    for (const ep of endpoints) ep.close();
  };

  let timer: ReturnType<typeof setTimeout> | undefined;
  let onAbort: (() => void) | undefined;
  try {
    await Promise.race([
      joined,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new TabJoinTimeoutError(o.id, o.ranks.length, ready.size, o.joinTimeoutMs)), o.joinTimeoutMs);
      }),
      new Promise<never>((_, reject) => {
        onAbort = () => reject(new AbortedError('model load aborted while waiting for rank tabs'));
        if (o.signal?.aborted) onAbort();
        o.signal?.addEventListener('abort', onAbort, { once: true });
      }),
    ]);
  } catch (e) {
    close('the engine was not created');
    throw e;
  } finally {
    clearTimeout(timer);
    if (onAbort) o.signal?.removeEventListener('abort', onAbort);
  }
  const peers = new Map<number, TabPeer>();
  for (const rank of o.ranks) {
    const names = rpcChannels(session, rank);
    const endpoint = channelEndpoint(names.toWorker, names.toHost);
    endpoints.push(endpoint);
    peers.set(rank, { rank, endpoint, died: deaths.get(rank)!.died, setState: (state) => post({ kind: 'state', session, rank, state }) });
  }
  return { session, peers, close };
}
