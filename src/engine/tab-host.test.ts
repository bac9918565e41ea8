import { afterEach, describe, expect, it } from 'vitest';
import { acceptTabs, type TabHost } from './tab-host.js';
import { joinChannelName } from './tab-link.js';
import type { JoinMessage } from '../protocol.js';
import { CollectiveTimeoutError, TabJoinTimeoutError, WorkerFailedError } from '../errors.js';

let n = 0;
const open: (BroadcastChannel | TabHost)[] = [];
afterEach(() => {
  for (const c of open.splice(0)) (c instanceof BroadcastChannel ? c.close() : c.close('test over'));
});

/** A joining tab speaking the join protocol by hand (no worker): offers until accepted (as joinEngine does), then says ready and beats. */
function fakeTab(id: string, tab: string, opts: { ready?: boolean; beat?: boolean } = {}) {
  const ch = new BroadcastChannel(joinChannelName(id));
  open.push(ch);
  const got: JoinMessage[] = [];
  let accepted: Extract<JoinMessage, { kind: 'accept' }> | undefined;
  let timer: ReturnType<typeof setInterval> | undefined;
  ch.onmessage = (e: MessageEvent<JoinMessage>) => {
    got.push(e.data);
    if (e.data.kind === 'accept' && e.data.tab === tab && !accepted) {
      accepted = e.data;
      clearInterval(offers);
      if (opts.ready !== false) ch.postMessage({ kind: 'ready', session: e.data.session, rank: e.data.rank } satisfies JoinMessage);
      if (opts.beat !== false) {
        const { session, rank } = e.data;
        timer = setInterval(() => ch.postMessage({ kind: 'tab-beat', session, rank } satisfies JoinMessage), 50);
      }
    }
  };
  const offers = setInterval(() => ch.postMessage({ kind: 'offer', tab } satisfies JoinMessage), 50);
  return {
    got,
    accepted: () => accepted,
    bye(reason: string) {
      ch.postMessage({ kind: 'bye', session: accepted!.session, rank: accepted!.rank, reason } satisfies JoinMessage);
    },
    stop: () => {
      clearInterval(timer);
      clearInterval(offers);
    },
  };
}

const nextId = () => `tab-host-test-${process.pid}-${++n}`;

describe('acceptTabs', () => {
  it('gives the tab ranks to the tabs in the order they offer, and resolves once every one is ready', async () => {
    const id = nextId();
    const a = fakeTab(id, 'a');
    const b = fakeTab(id, 'b');
    const host = await acceptTabs({ id, ranks: [2, 3], world: 4, joinTimeoutMs: 5000, silenceMs: 5000 });
    open.push(host);
    expect([a.accepted()?.rank, b.accepted()?.rank].sort()).toEqual([2, 3]);
    expect(a.accepted()?.world).toBe(4);
    expect([...host.peers.keys()]).toEqual([2, 3]);
    a.stop();
    b.stop();
  });

  it('throws TabJoinTimeoutError saying how many joined and where to join, when too few tabs come', async () => {
    const id = nextId();
    const a = fakeTab(id, 'a');
    const err = await acceptTabs({ id, ranks: [1, 2], world: 3, joinTimeoutMs: 400, silenceMs: 5000 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TabJoinTimeoutError);
    expect((err as TabJoinTimeoutError).joined).toBe(1);
    expect((err as Error).message).toContain(`1 of 2 rank tabs joined "${id}"`);
    expect((err as TabJoinTimeoutError).remedy).toContain(`?join=${id}`);
    // The tab that had joined is told the host gave up.
    await new Promise((r) => setTimeout(r, 50));
    expect(a.got.some((m) => m.kind === 'bye' && m.rank === undefined)).toBe(true);
    a.stop();
  });

  it('a tab that leaves before it is ready frees its rank for the next one', async () => {
    const id = nextId();
    const pending = acceptTabs({ id, ranks: [1], world: 2, joinTimeoutMs: 5000, silenceMs: 5000 });
    const early = fakeTab(id, 'early', { ready: false, beat: false });
    await new Promise((r) => setTimeout(r, 200));
    expect(early.accepted()?.rank).toBe(1);
    early.bye('was closed');
    await new Promise((r) => setTimeout(r, 50));
    const late = fakeTab(id, 'late');
    const host = await pending;
    open.push(host);
    expect(late.accepted()?.rank).toBe(1);
    late.stop();
    early.stop();
  });

  it("a joined tab's goodbye rejects its peer's `died` with WorkerFailedError naming the rank", async () => {
    const id = nextId();
    const a = fakeTab(id, 'a');
    const host = await acceptTabs({ id, ranks: [1], world: 2, joinTimeoutMs: 5000, silenceMs: 5000 });
    open.push(host);
    a.bye('was closed');
    const e = await host.peers.get(1)!.died.catch((x: unknown) => x);
    expect(e).toBeInstanceOf(WorkerFailedError);
    expect((e as WorkerFailedError).rank).toBe(1);
    expect((e as Error).message).toContain('its tab was closed');
    a.stop();
  });

  it("a joined tab that falls silent rejects its peer's `died` with CollectiveTimeoutError naming the rank", async () => {
    const id = nextId();
    const a = fakeTab(id, 'a');
    const host = await acceptTabs({ id, ranks: [1], world: 2, joinTimeoutMs: 5000, silenceMs: 600 });
    open.push(host);
    a.stop();
    const e = await host.peers.get(1)!.died.catch((x: unknown) => x);
    expect(e).toBeInstanceOf(CollectiveTimeoutError);
    expect((e as CollectiveTimeoutError).missingRanks).toEqual([1]);
    expect((e as Error).message).toContain('frozen or was closed');
  });
});
