/** Test-only: a pool of worker_threads ranks that run jobs (ops.ts) for the Node tests. */
import { Worker } from 'node:worker_threads';
import { reviveError, type SerializedError } from '../../src/errors.js';
import type { CollectiveBuffer } from '../../src/collective/layout.js';
import type { RankJob, RankResult } from './ops.js';

type Reply = { ready: true } | { ok: true; results: RankResult[] } | { ok: false; error: SerializedError };

/** Workers receive a new SharedArrayBuffer object per message, so groups are told apart by id. */
const groups = new WeakMap<CollectiveBuffer, number>();
let lastGroup = 0;
function groupId(sab: CollectiveBuffer): number {
  let id = groups.get(sab);
  if (id === undefined) groups.set(sab, (id = ++lastGroup));
  return id;
}

class Rank {
  private pending: { resolve(r: RankResult[]): void; reject(e: unknown): void } | undefined;
  readonly ready: Promise<void>;
  constructor(readonly worker: Worker) {
    let onReady!: () => void;
    this.ready = new Promise<void>((r) => (onReady = r));
    worker.on('message', (m: Reply) => {
      if ('ready' in m) return onReady();
      if (m.ok) this.settle()?.resolve(m.results);
      else this.settle()?.reject(reviveError(m.error));
    });
    worker.on('error', (e) => this.settle()?.reject(e));
    worker.on('exit', (code) => this.settle()?.reject(new Error(`rank worker exited (${code})`)));
  }
  private settle() {
    const p = this.pending;
    this.pending = undefined;
    return p;
  }
  run(job: RankJob): Promise<RankResult[]> {
    if (this.pending) throw new Error('one job at a time per rank');
    return new Promise((resolve, reject) => {
      this.pending = { resolve, reject };
      this.worker.postMessage({ ...job, group: groupId(job.sab) });
    });
  }
}

export class RankPool {
  private ranks: Rank[] = [];

  static async create(size: number): Promise<RankPool> {
    const pool = new RankPool();
    for (let r = 0; r < size; r++) pool.ranks.push(pool.spawn());
    await Promise.all(pool.ranks.map((r) => r.ready));
    return pool;
  }

  private spawn(): Rank {
    const entry = new URL('./rank.worker.ts', import.meta.url).href;
    return new Rank(new Worker(new URL('./boot.mjs', import.meta.url), { workerData: { entry } }));
  }

  get size(): number {
    return this.ranks.length;
  }

  /** Runs `job` on worker `i` (the job names the rank it plays). */
  run(i: number, job: RankJob): Promise<RankResult[]> {
    return this.ranks[i].run(job);
  }

  /** Runs one job per rank 0…world−1 of `sab` and resolves with every rank's results. */
  runAll(sab: CollectiveBuffer, world: number, ops: RankJob['ops'], opts?: RankJob['opts']): Promise<RankResult[][]> {
    return Promise.all(Array.from({ length: world }, (_, r) => this.run(r, { sab, rank: r, ops, opts })));
  }

  async terminate(i: number): Promise<void> {
    await this.ranks[i].worker.terminate();
  }

  /** Replaces worker `i` with a fresh one (a rebuilt rank). */
  async respawn(i: number): Promise<void> {
    await this.ranks[i].worker.terminate();
    this.ranks[i] = this.spawn();
    await this.ranks[i].ready;
  }

  async close(): Promise<void> {
    await Promise.all(this.ranks.map((r) => r.worker.terminate()));
  }
}
