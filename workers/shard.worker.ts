/**
 * A shard worker: one GPUDevice, one shard of every weight matrix, its part of every layer.
 * The main thread talks to it through Comlink for control only (init, load, stats, dispose);
 * steps arrive through the SharedArrayBuffer control block, and partial sums leave through the
 * collectives. Between steps it waits with Atomics.waitAsync, so its event loop stays free for
 * mapAsync, device.lost and Comlink; it blocks only inside a collective.
 */
import * as Comlink from 'comlink';
import { installErrorTransfer } from '../src/engine/protocol.js';
import { createGpuContext, destroyGpuContext, type GpuContext, type KernelChoices } from '../src/gpu/device.js';
import { attachCommunicator, ControlBlock, type Communicator } from '../src/collective/index.js';
import { decodeStep } from '../src/engine/step-words.js';
import { AbortedError, DeviceLostError, DisposedError, InvalidArgumentError, serializeError, type SerializedError } from '../src/errors.js';
import type { ModelConfig } from '../src/model/config.js';
import type { RankPlan } from '../src/parallel/plan.js';
import {
  createShardWeights, destroyShardWeights, createRunState, destroyRunState, forward, rankDims,
  type ShardWeights, type RunState, type StepTimes,
} from './rank.js';
import type { RankStats } from '../src/engine/types.js';
import type { Q8Activations } from '../src/gpu/matmul-q8.js';

installErrorTransfer();

export interface ShardInit {
  rank: number;
  world: number;
  config: ModelConfig;
  plan: RankPlan;
  /** The collective buffer (control block + one slot per rank). */
  collective: SharedArrayBuffer;
  /** world regions of maxLogitRows·logitStride floats: each rank's logits rows. */
  logits: SharedArrayBuffer;
  logitStride: number;
  maxRows: number;
  maxLogitRows: number;
  contextLength: number;
  slots: number;
  spin: number;
  timeoutMs: number;
  adapter?: GPURequestAdapterOptions;
  /** Kernel variants measured earlier (by another rank or engine): skips tuning. */
  choices?: Pick<KernelChoices, 'gemm' | 'gemv'>;
  /** Inputs of Q8_0 matmuls: int8 per group (W8A8, runq.c) or f32 (weight-only). */
  activations?: Q8Activations;
}

export interface ShardInitResult {
  adapter: string;
  kernels: string;
  /** ms to get the device (and tune kernels). */
  initMs: number;
  choices: Pick<KernelChoices, 'gemm' | 'gemv'>;
}

export class ShardWorker {
  private init_?: ShardInit;
  private ctx?: GpuContext;
  private comm?: Communicator;
  private ctrl?: ControlBlock;
  private weights?: ShardWeights;
  private state?: RunState;
  private weightBytes = 0;
  private lastError: SerializedError | null = null;
  private times: StepTimes = { compute: 0, readback: 0, allreduce: 0, upload: 0, roundtrips: [] };
  private steps = 0;
  private lostReason: string | null = null;
  private stopped = false;
  private loopDone: Promise<void> = Promise.resolve();
  private warnings: string[] = [];
  private reduced?: Float32Array;

  async init(o: ShardInit): Promise<ShardInitResult> {
    this.init_ = o;
    const t0 = performance.now();
    this.ctx = await createGpuContext({ adapter: o.adapter, label: `rank${o.rank}`, choices: o.choices, tune: !o.choices });
    void this.ctx.lost.then((info) => {
      if (!this.stopped) this.lostReason = info.message || info.reason || 'unknown';
    });
    this.comm = attachCommunicator(o.collective, o.rank, { spin: o.spin, timeoutMs: o.timeoutMs });
    this.ctrl = new ControlBlock(o.collective);
    const a = this.ctx.adapterInfo;
    return {
      adapter: [a.vendor, a.architecture, a.description].filter(Boolean).join(' / '),
      kernels: `gemv=${this.ctx.choices.gemv} gemm=${this.ctx.choices.gemm}`,
      initMs: performance.now() - t0,
      choices: { gemm: this.ctx.choices.gemm, gemv: this.ctx.choices.gemv },
    };
  }

  /** Uploads this rank's packed shard and builds the step's buffers and bound ops. */
  async load(packed: ArrayBuffer): Promise<{ weightBytes: number; workBytes: number; uploadMs: number; buildMs: number }> {
    const { ctx, init_: o } = this.need();
    const t0 = performance.now();
    this.weights = createShardWeights(ctx, o.config, o.plan, packed);
    this.weightBytes = packed.byteLength;
    const t1 = performance.now();
    this.state = createRunState(ctx, o.config, o.plan, this.weights, {
      maxM: o.maxRows, maxLogitRows: o.maxLogitRows, contextLength: o.contextLength, slots: o.slots, world: o.world, activations: o.activations,
    });
    await ctx.device.queue.onSubmittedWorkDone();
    return { weightBytes: this.weightBytes, workBytes: this.state.workBytes, uploadMs: t1 - t0, buildMs: performance.now() - t1 };
  }

  /** Starts the step loop; it runs until dispose. */
  start(): void {
    this.loopDone = this.loop();
  }

  private async loop(): Promise<void> {
    const { ctrl, init_: o } = this.need();
    let last = ctrl.stepSeq;
    let epoch = ctrl.epoch;
    const d = rankDims(o.config, o.plan);
    const logitsAll = new Float32Array(o.logits);
    while (!this.stopped) {
      let step;
      try {
        step = await ctrl.waitForStep(last);
      } catch (e) {
        if (e instanceof DisposedError) break;
        if (e instanceof AbortedError) {
          const r = await ctrl.waitForReset(epoch).catch(() => null);
          if (!r) break;
          epoch = r.epoch;
          last = r.stepSeq;
          continue;
        }
        throw e;
      }
      if (!step) continue;
      last = step.seq;
      try {
        if (this.lostReason !== null) throw new DeviceLostError(o.rank, this.lostReason);
        const input = decodeStep(step.words, o.maxRows);
        if (input.m < 1 || input.m > o.maxRows) throw new InvalidArgumentError(`step of ${input.m} rows, expected 1..${o.maxRows}`);
        const into = logitsAll.subarray(o.rank * o.maxLogitRows * o.logitStride, o.rank * o.maxLogitRows * o.logitStride + input.logitRows.length * d.vocab);
        const t0 = performance.now();
        const before = this.times.readback + this.times.allreduce + this.times.upload;
        await forward(this.ctx!, this.state!, d.dim, input, (_i, encoder, m) => this.syncPartial(encoder, m), into);
        this.times.compute += performance.now() - t0 - (this.times.readback + this.times.allreduce + this.times.upload - before);
        this.steps++;
        ctrl.signalDone(o.rank, step.seq, 0);
      } catch (e) {
        const err = this.lostReason !== null && !(e instanceof DeviceLostError) ? new DeviceLostError(o.rank, this.lostReason) : e;
        this.lastError = serializeError(err);
        ctrl.signalDone(o.rank, step.seq, 1);
        if (err instanceof AbortedError) {
          const r = await ctrl.waitForReset(epoch).catch(() => null);
          if (!r) break;
          epoch = r.epoch;
          last = r.stepSeq;
        }
      }
    }
  }

  /** Sync point: read the partial sum back, all-reduce it across ranks, upload the sum. */
  private async syncPartial(encoder: GPUCommandEncoder, m: number): Promise<void> {
    const { ctx, comm } = this.need();
    const s = this.state!;
    const n = m * this.init_!.config.dim;
    const slot = comm.slot().subarray(0, n);
    const ticket = s.readback.encodeCopy(encoder, s.partial, 0, n * 4);
    const t0 = performance.now();
    ctx.device.queue.submit([encoder.finish()]);
    await s.readback.read(ticket, { into: slot, key: `sync:${m}` });
    const t1 = performance.now();
    // The sum must not land in the shared slot: other ranks may still be reading it.
    const sum = (this.reduced ??= new Float32Array(s.maxM * this.init_!.config.dim)).subarray(0, n);
    comm.allReduce(slot, 'auto', sum);
    const t2 = performance.now();
    ctx.device.queue.writeBuffer(s.partial, 0, sum.buffer, sum.byteOffset, n * 4);
    const t3 = performance.now();
    this.times.readback += t1 - t0;
    this.times.allreduce += t2 - t1;
    this.times.upload += t3 - t2;
    if (this.times.roundtrips.length < 4096) this.times.roundtrips.push(t3 - t0);
  }

  stats(): RankStats {
    const o = this.init_;
    const steps = Math.max(this.steps, 1);
    const rt = [...this.times.roundtrips].sort((a, b) => a - b);
    return {
      rank: o?.rank ?? -1,
      adapter: this.ctx ? this.ctx.adapterInfo.description || this.ctx.adapterInfo.architecture : '',
      weightBytes: this.weightBytes,
      workBytes: this.state?.workBytes ?? 0,
      steps: this.steps,
      breakdown: {
        compute_ms: this.times.compute / steps,
        readback_ms: this.times.readback / steps,
        allreduce_ms: this.times.allreduce / steps,
        upload_ms: this.times.upload / steps,
        scheduler_ms: 0,
      },
      allreduceRoundtripMs: rt.length ? rt[Math.floor(rt.length / 2)]! : 0,
      warnings: [...this.warnings],
    };
  }

  resetStats(): void {
    this.times = { compute: 0, readback: 0, allreduce: 0, upload: 0, roundtrips: [] };
    this.steps = 0;
  }

  /** The error of the last failed step (status 1), for the main thread to rethrow typed. */
  takeError(): SerializedError | null {
    const e = this.lastError;
    this.lastError = null;
    return e;
  }

  async dispose(): Promise<void> {
    this.stopped = true;
    await Promise.race([this.loopDone.catch(() => {}), new Promise((r) => setTimeout(r, 1000))]);
    if (this.ctx) {
      if (this.state) destroyRunState(this.state, this.ctx);
      if (this.weights) destroyShardWeights(this.weights);
      destroyGpuContext(this.ctx);
    }
    this.state = undefined;
    this.weights = undefined;
    this.ctx = undefined;
  }

  private need() {
    if (!this.ctx || !this.comm || !this.ctrl || !this.init_) throw new InvalidArgumentError('the shard worker is not initialised');
    return { ctx: this.ctx, comm: this.comm, ctrl: this.ctrl, init_: this.init_ };
  }
}

Comlink.expose(new ShardWorker());
