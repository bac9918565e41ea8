/**
 * One rank of `bench allreduce`, in a real dedicated Web Worker: each message is one of the
 * benchmark's loops, or the ports of the postMessage baseline.
 */
import { serializeError } from '../../errors.js';
import { SharedGroup } from '../../collective/shared-group.js';
import type { AllReduceChoice } from '../../collective/all-reduce.js';
import type { CollectiveBuffer } from '../../collective/layout.js';
import { timeAllReduce, timeCopyFloor, timeMemcpy, timePostMessageAllReduce } from '../../collective/bench.js';

export type RankRequest =
  | { kind: 'bench'; sab: CollectiveBuffer; group: number; rank: number; spin?: number; floats: number; algorithm: AllReduceChoice; batch: number; samples: number; inPlace?: boolean }
  | { kind: 'copyfloor'; sab: CollectiveBuffer; group: number; rank: number; floats: number; batch: number; samples: number; inPlace: boolean }
  | { kind: 'memcpy'; floats: number; reps: number; samples: number }
  | { kind: 'ports'; ports: MessagePort[] }
  | { kind: 'postmessage'; sab: CollectiveBuffer; group: number; rank: number; floats: number; batch: number; samples: number };

let ports: MessagePort[] = [];
let comm: { group: number; comm: SharedGroup } | undefined;

/**
 * One communicator per group, kept across requests as a shard worker keeps it across steps
 * (every message brings a new SharedArrayBuffer object, so groups are told apart by id).
 */
function communicator(sab: CollectiveBuffer, group: number, rank: number, spin?: number): SharedGroup {
  if (!comm || comm.group !== group) comm = { group, comm: new SharedGroup(sab, rank) };
  if (spin !== undefined) comm.comm.spin = spin;
  return comm.comm;
}

async function handle(m: RankRequest): Promise<unknown> {
  switch (m.kind) {
    case 'bench':
      return timeAllReduce(communicator(m.sab, m.group, m.rank, m.spin), m.floats, m.algorithm, m.batch, m.samples, 2, m.inPlace);
    case 'copyfloor':
      return timeCopyFloor(communicator(m.sab, m.group, m.rank), m.floats, m.batch, m.samples, 2, m.inPlace);
    case 'memcpy':
      return timeMemcpy(m.floats, m.reps, m.samples);
    case 'ports':
      ports = m.ports;
      return null;
    case 'postmessage':
      return timePostMessageAllReduce(communicator(m.sab, m.group, m.rank), ports, m.floats, m.batch, m.samples);
  }
}

self.onmessage = (e: MessageEvent<RankRequest>) => {
  handle(e.data).then(
    (value) => self.postMessage({ ok: true, value }),
    (err: unknown) => self.postMessage({ ok: false, error: serializeError(err) }),
  );
};
