/**
 * The joining side of ranks in other tabs: `joinEngine(id)` offers this tab's device to the
 * host engine created with `tabs: {id, ...}` (same origin). Once accepted, it starts a shard
 * worker of its own (the same worker a local rank runs, with its own adapter and device) and lets
 * the host drive it over BroadcastChannels; the page only relays liveness: heartbeats, and a
 * goodbye on pagehide so the other ranks fail at once instead of after the timeout.
 */
import * as Comlink from 'comlink';
import { installErrorTransfer, type JoinMessage, type RankApi, type TabRankState } from '../protocol.js';
import { broadcastLinks } from '../collective/message-transport.js';
import {
  collectiveGroup, joinChannelName, randomId, rpcChannels, TAB_HEARTBEAT_MS,
} from './tab-link.js';
// The same inline shard worker the host's local ranks run (see worker-group.ts).
import ShardWorkerCtor from '../../workers/shard.worker.ts?worker&inline';

installErrorTransfer();

export interface TabJoinInfo {
  state: TabRankState;
  /** This tab's rank and the engine's rank count, once joined. */
  rank?: number;
  world?: number;
  /** Why the host is gone or the rank failed. */
  reason?: string;
}

export interface JoinOptions {
  /** Called on every state change: waiting → joined → loading → running, then host-gone or failed. */
  onState?: (info: TabJoinInfo) => void;
}

export interface TabJoin {
  /** The current state. */
  info(): TabJoinInfo;
  /** Leaves: the host's request fails with a typed error naming this rank, and the worker stops. */
  leave(): void;
}

/**
 * Offers this tab's device as a rank to the host engine that waits on `id` (see
 * `EngineOptions.tabs`). Keeps offering until a host accepts; one host, one session: after the
 * host is gone the tab stays `host-gone` (reload the page to join again).
 */
export function joinEngine(id: string, opts: JoinOptions = {}): TabJoin {
  const tab = randomId();
  const ch = new BroadcastChannel(joinChannelName(id));
  const post = (m: JoinMessage) => ch.postMessage(m);
  let info: TabJoinInfo = { state: 'waiting' };
  let session: string | undefined;
  let worker: Worker | undefined;
  let silenceMs = 30_000;
  let lastHost = performance.now();
  let ended = false;
  const set = (next: Partial<TabJoinInfo>) => {
    info = { ...info, ...next };
    opts.onState?.(info);
  };
  const timer = setInterval(() => {
    if (session === undefined) post({ kind: 'offer', tab });
    else {
      post({ kind: 'tab-beat', session, rank: info.rank! });
      if (performance.now() - lastHost > silenceMs) end('host-gone', `the host sent nothing for ${silenceMs} ms (its tab is frozen or closed)`);
    }
    // A waiting tab repeats its offer on the same beat: a host may start after it.
  }, TAB_HEARTBEAT_MS);

  /** Stops the worker and the channels; tells the host and the other ranks when this tab is the one leaving. */
  function end(state: TabRankState, reason: string, tellOthers = false): void {
    if (ended) return;
    ended = true;
    clearInterval(timer);
    if (tellOthers && session !== undefined && info.rank !== undefined) {
      post({ kind: 'bye', session, rank: info.rank, reason });
      // The collective peers hear it too, so a step waiting for this rank fails now, not at the timeout.
      const links = broadcastLinks(collectiveGroup(session), info.rank, info.world!);
      for (let j = 0; j < info.world!; j++) if (j !== info.rank) links.send(j, { kind: 'bye' });
      links.close();
    }
    ch.close();
    worker?.terminate();
    removeEventListener('pagehide', onPageHide);
    set({ state, reason });
  }
  const onPageHide = () => end('host-gone', 'was closed', true);
  addEventListener('pagehide', onPageHide);

  ch.onmessage = async (e: MessageEvent<JoinMessage>) => {
    const m = e.data;
    if (ended) return;
    if (m.kind === 'accept' && m.tab === tab && session === undefined) {
      session = m.session;
      silenceMs = m.timeoutMs;
      lastHost = performance.now();
      set({ state: 'joined', rank: m.rank, world: m.world });
      worker = new ShardWorkerCtor({ name: `webgpu-tp tab rank ${m.rank}` });
      worker.addEventListener('error', (ev) => end('failed', `its worker failed: ${ev.message || 'uncaught error'}`, true));
      const api = Comlink.wrap<RankApi>(worker);
      const names = rpcChannels(m.session, m.rank);
      try {
        await api.serve(names.toWorker, names.toHost);
      } catch (err) {
        end('failed', `its worker did not start: ${(err as Error).message}`, true);
        return;
      }
      if (!ended) post({ kind: 'ready', session: m.session, rank: m.rank });
      return;
    }
    if (!('session' in m) || m.session !== session) return;
    if (m.kind === 'host-beat') lastHost = performance.now();
    else if (m.kind === 'state' && m.rank === info.rank) {
      lastHost = performance.now();
      set({ state: m.state });
    } else if (m.kind === 'bye' && m.rank === undefined) end('host-gone', m.reason);
  };
  post({ kind: 'offer', tab });
  opts.onState?.(info);
  return { info: () => info, leave: () => end('left', 'this tab left', true) };
}
