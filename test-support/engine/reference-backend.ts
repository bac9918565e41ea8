/**
 * The CPU oracle as a `StepBackend`: the same Scheduler and Engine surface over
 * `model/reference.ts` instead of shard workers. Tests drive the scheduler with it in Node,
 * and it is the yardstick the worker engine is compared against.
 */
import { createRunState, forward, type ReferenceModel, type RunState } from '../../src/model/reference.js';
import type { StepBackend, StepRow } from '../../src/engine/scheduler.js';

export class ReferenceBackend implements StepBackend {
  readonly maxRows: number;
  readonly contextLength: number;
  readonly maxSlots: number;
  /** One KV cache per slot. */
  private readonly states = new Map<number, RunState>();

  constructor(private readonly model: ReferenceModel, opts: { maxRows?: number; contextLength?: number; maxSlots?: number } = {}) {
    this.maxRows = opts.maxRows ?? 16;
    this.maxSlots = opts.maxSlots ?? 4;
    this.contextLength = Math.min(opts.contextLength ?? model.config.seqLen, model.config.seqLen);
  }

  async step(rows: StepRow[], logitsFor: number[]): Promise<Float32Array[]> {
    const out: Float32Array[] = [];
    rows.forEach((r, i) => {
      let s = this.states.get(r.slot);
      if (!s) this.states.set(r.slot, (s = createRunState(this.model.config)));
      const logits = forward(this.model, s, r.token, r.position);
      if (logitsFor.includes(i)) out[logitsFor.indexOf(i)] = logits.slice();
    });
    return out;
  }
}
