/** `?join=<id>`: the page as a rank tab that lends its device to a host engine. */
import { joinEngine, type TabJoinInfo } from '../index.js';
import { $ } from './dom.js';
import type { RunState } from './status.js';

/** What the join card says in each state, and the status colour it takes. */
const JOIN_TEXT: Record<TabJoinInfo['state'], { text: string; look: RunState }> = {
  waiting: { text: 'Waiting for the host', look: 'loading' },
  joined: { text: 'Joined', look: 'generating' },
  loading: { text: 'Loading its shard', look: 'loading' },
  running: { text: 'Running', look: 'done' },
  'host-gone': { text: 'Host gone', look: 'stopped' },
  failed: { text: 'Failed', look: 'error' },
  left: { text: 'Left', look: 'stopped' },
};

/**
 * `?join=<id>`: this tab offers its device as a rank to the host engine created with
 * `tabs: {id}` on this origin. The rank runs in a worker of this tab; the page shows its state.
 */
export function startJoin(id: string): void {
  const card = $('join-card');
  const state = $('join-state');
  const detail = $('join-detail');
  card.hidden = false;
  // A rank tab only lends its device: a Generate here would load a second engine beside it.
  document.querySelector<HTMLElement>('main.layout')!.hidden = true;
  const show = (i: TabJoinInfo) => {
    const t = JOIN_TEXT[i.state];
    const rank = i.rank !== undefined ? `rank ${i.rank} of ${i.world}` : '';
    state.textContent = i.state === 'joined' || i.state === 'running' || i.state === 'loading' ? `${t.text} · ${rank}` : t.text;
    state.dataset.state = t.look;
    document.body.dataset.join = i.state;
    if (i.rank !== undefined) document.body.dataset.joinRank = String(i.rank);
    detail.textContent =
      i.state === 'waiting' ? `Offering this tab's GPU to the engine "${id}" of this site. Keep the tab open (and, for speed, visible).`
      : i.state === 'host-gone' || i.state === 'failed' || i.state === 'left' ? `${i.reason ?? ''}. Reload to join again.`
      : `This tab runs ${rank} of the engine "${id}" in a worker with its own GPU device; closing it ends the host's request with an error.`;
  };
  joinEngine(id, { onState: show });
}
