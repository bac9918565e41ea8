/**
 * The wire between a host engine and the tabs that lend it a rank (same origin, so
 * BroadcastChannels reach across tabs and into their workers). Three kinds of channel:
 *
 * - the join channel `webgpu-tp/join/<id>`, shared by the host and every joining page:
 *   offers, the host's answer, heartbeats both ways, load/run state, and goodbyes (the
 *   messages are `JoinMessage` in src/protocol.ts);
 * - per tab rank, a pair of RPC channels between the host and that tab's shard worker, over
 *   which Comlink carries the same calls a local worker gets (`RankApi`: init, load, step…);
 * - the collective links of `src/collective/message-transport.ts` between all ranks.
 *
 *   joining page                         host (createEngine with tabs)
 *   offer {tab}            ─────────→    (the first `count` offers get the tab ranks)
 *                          ←─────────    accept {tab, session, rank, world}
 *   spawns its shard worker, which serves RPC on rpcChannels(session, rank)
 *   ready {tab, rank}      ─────────→    Comlink calls: init, loadFrom, step…
 *   tab-beat ⇄ host-beat, state {rank, state}, bye (pagehide / dispose)
 */
import type * as Comlink from 'comlink';

/** How often host and tab pages tell each other they are alive (ms). */
export const TAB_HEARTBEAT_MS = 250;

export function joinChannelName(id: string): string {
  return `webgpu-tp/join/${id}`;
}

/** The collective group of one engine's ranks (message transport). */
export function collectiveGroup(session: string): string {
  return `${session}/collective`;
}

/** The RPC channel names between the host and tab rank `rank`'s worker. */
export function rpcChannels(session: string, rank: number): { toWorker: string; toHost: string } {
  return { toWorker: `webgpu-tp/${session}/rpc/${rank}/down`, toHost: `webgpu-tp/${session}/rpc/${rank}/up` };
}

/**
 * A Comlink endpoint over two BroadcastChannels: posts on `send`, hears `receive`. Each name
 * has one listener and one sender, so it is a private pipe. Nothing is transferred (a channel
 * clones), so a transfer list is ignored.
 */
export function channelEndpoint(send: string, receive: string): Comlink.Endpoint & { close(): void } {
  const out = new BroadcastChannel(send);
  const inbound = new BroadcastChannel(receive);
  return {
    postMessage: (message: unknown) => out.postMessage(message),
    addEventListener: (type: string, listener: EventListenerOrEventListenerObject) => inbound.addEventListener(type, listener),
    removeEventListener: (type: string, listener: EventListenerOrEventListenerObject) => inbound.removeEventListener(type, listener),
    close() {
      out.close();
      inbound.close();
    },
  };
}

/** A random id for a session or a tab. */
export function randomId(): string {
  return typeof crypto !== 'undefined' && 'randomUUID' in crypto ? crypto.randomUUID() : `${Date.now().toString(36)}-${Math.random().toString(36).slice(2)}`;
}
