/**
 * A shard worker: one GPUDevice, one shard of every weight matrix, its part of every layer.
 * The main thread talks to it through Comlink for control only (init, load, stats, dispose);
 * steps arrive through the SharedArrayBuffer control block, and partial sums leave through the
 * collectives. Between steps it waits with Atomics.waitAsync, so its event loop stays free for
 * mapAsync, device.lost and Comlink; it blocks only inside a collective.
 *
 * In an engine with a rank in another tab (`ShardInit.messages`), shared memory cannot reach
 * every rank: steps come as Comlink calls (`step`) that return the rank's logits, and partial
 * sums travel over the message transport. A tab rank's worker serves those calls to the host
 * over BroadcastChannels (`serve`) and loads its own shard from the model (`loadFrom`).
 */
import * as Comlink from 'comlink';
import { installErrorTransfer } from '../src/engine/protocol.js';
import { createGpuContext, destroyGpuContext, type GpuContext, type ChosenKernels } from '../src/gpu/device.js';
import { attachCommunicator, ControlBlock, type CollectiveBuffer, STATUS_FAILED, STATUS_OK, STATUS_PARKED, type Communicator } from '../src/collective/index.js';
import { broadcastLinks, MessageCommunicator } from '../src/collective/message-transport.js';
import { channelEndpoint } from '../src/engine/tab-link.js';
import { loadShards } from '../src/engine/load-shards.js';
import { openSource } from '../src/loader/source.js';
import { decodeStep } from '../src/engine/step-words.js';
import { AbortedError, DeviceLostError, DisposedError, InvalidArgumentError, WebGpuTpError, serializeError, type SerializedError } from '../src/errors.js';
import type { ModelConfig } from '../src/model/config.js';
import { rankDims, type RankPlan } from '../src/parallel/plan.js';
import type { StepCommunicator, StepInput, StepTimes } from './backend.js';
import { forward } from './forward.js';
import { chooseRowSum, type RowSum } from './row-sum.js';
import { createGpuBackend, type GpuBackend, type RunState } from './gpu-backend.js';
import type { ShardWeights } from './gpu-weights.js';
import type { RankStats } from '../src/engine/types.js';
import { rankPrecision } from './precision.js';
import type { KernelProfiler } from '../src/gpu/profiler.js';
import { adapterName, type DeviceSpec } from '../src/gpu/adapter.js';
import type { Q8Activations } from '../src/gpu/matmul-q8.js';
import { cacheAccess } from '../src/gpu/kv-cache.js';
import { resolveKvCache, type KvCacheOption } from '../src/gpu/kv-format.js';

installErrorTransfer();

export interface ShardInit {
  rank: number;
  world: number;
  config: ModelConfig;
  plan: RankPlan;
  /** The collective buffer (control block + one slot per rank); absent with `messages`. */
  collective?: CollectiveBuffer;
  /** world regions of maxLogitRows·logitStride floats: each rank's logits rows; absent with `messages`. */
  logits?: SharedArrayBuffer;
  /** Steps by `step()` calls and collectives over this message-transport group, instead of shared memory. */
  messages?: { group: string };
  logitStride: number;
  maxRows: number;
  maxLogitRows: number;
  contextLength: number;
  slots: number;
  spin: number;
  timeoutMs: number;
  /** The adapter this rank asks for (the default one when absent). */
  device?: DeviceSpec;
  /** Time every kernel on the GPU (timestamp queries; each op gets its own pass). */
  profile?: boolean;
  /** Kernel variants measured earlier (by another rank or engine): skips tuning. */
  choices?: ChosenKernels;
  /** Inputs of Q8_0 matmuls: int8 per group (W8A8, runq.c) or f32 (weight-only). */
  activations?: Q8Activations;
  /** W8A8: runq.c's arithmetic bit for bit (see RunStateOptions.runqExact). */
  runqExact?: boolean;
  /** The KV cache's values; `auto` is f16 where this rank's device has `shader-f16`. */
  kvCache?: KvCacheOption;
}

export interface ShardInitResult {
  adapter: string;
  kernels: string;
  /** ms to get the device (and tune kernels). */
  initMs: number;
  choices: ChosenKernels;
}

export class ShardWorker {
  private init_?: ShardInit;
  private ctx?: GpuContext;
  private comm?: Communicator;
  private ctrl?: ControlBlock;
  private mcomm?: MessageCommunicator;
  private backend?: GpuBackend;
  private weights?: ShardWeights;
  private state?: RunState;
  /** How this rank combines the row-parallel partial sums, chosen at load. */
  private rowSum?: RowSum;
  private reducer?: StepCommunicator;
  private weightBytes = 0;
  private lastError: SerializedError | null = null;
  private times: StepTimes = { compute: 0, readback: 0, allreduce: 0, upload: 0, roundtrips: [] };
  private steps = 0;
  private lostReason: string | null = null;
  private stopped = false;
  private loopDone: Promise<void> = Promise.resolve();
  private warnings: string[] = [];
  private profiler?: KernelProfiler;

  async init(o: ShardInit): Promise<ShardInitResult> {
    this.init_ = o;
    const t0 = performance.now();
    this.ctx = await createGpuContext({ device: o.device, label: `rank${o.rank}`, choices: o.choices, tune: !o.choices });
    void this.ctx.lost.then((info) => {
      if (!this.stopped) this.lostReason = info.message || info.reason || 'unknown';
    });
    if (o.messages) this.mcomm = new MessageCommunicator(broadcastLinks(o.messages.group, o.rank, o.world), o.rank, o.world, { timeoutMs: o.timeoutMs });
    else if (o.collective) {
      this.comm = attachCommunicator(o.collective, o.rank, { spin: o.spin, timeoutMs: o.timeoutMs });
      this.ctrl = new ControlBlock(o.collective);
    } else throw new InvalidArgumentError('a shard worker needs a collective buffer or a message group');
    const a = this.ctx.adapterInfo;
    return {
      adapter: adapterName(a),
      kernels: `gemv=${this.ctx.choices.gemv} gemm=${this.ctx.choices.gemm} small=${this.ctx.choices.small}`,
      initMs: performance.now() - t0,
      choices: { gemm: this.ctx.choices.gemm, gemv: this.ctx.choices.gemv, small: this.ctx.choices.small },
    };
  }

  /** Uploads this rank's packed shard and builds the step's buffers and bound ops. */
  async load(packed: ArrayBuffer): Promise<{ weightBytes: number; workBytes: number; uploadMs: number; buildMs: number }> {
    const { ctx, init_: o } = this.need();
    const t0 = performance.now();
    const b = (this.backend = createGpuBackend(ctx));
    this.weights = b.createWeights(o.config, o.plan, packed);
    this.weightBytes = packed.byteLength;
    const t1 = performance.now();
    const activations = o.activations ?? 'f32';
    // runq.c's arithmetic: exact attention, and at world > 1 the ranks' sums chained in its order.
    const exact = !!o.runqExact && activations === 'int8';
    this.rowSum = chooseRowSum(o.rank, o.world, exact);
    this.state = b.createState(o.config, o.plan, this.weights, {
      maxM: o.maxRows, maxLogitRows: o.maxLogitRows, contextLength: o.contextLength, slots: o.slots, rows: this.rowSum.binding, activations, exact,
      kvCache: resolveKvCache(o.kvCache ?? 'auto', ctx.device.features.has('shader-f16'), exact), profile: !!o.profile,
    });
    this.profiler = this.state.profiler;
    if (o.profile && !this.profiler) this.warnings.push('profile: the adapter has no timestamp-query feature, so kernels are not timed');
    await ctx.device.queue.onSubmittedWorkDone();
    return { weightBytes: this.weightBytes, workBytes: this.workBytes(), uploadMs: t1 - t0, buildMs: performance.now() - t1 };
  }

  /** Starts the step loop; it runs until dispose. (Message mode has no loop: steps are calls.) */
  start(): void {
    if (this.mcomm) return;
    this.loopDone = this.loop();
  }

  private async loop(): Promise<void> {
    const { init_: o } = this.need();
    const ctrl = this.ctrl!;
    let last = ctrl.stepSeq;
    let epoch = ctrl.epoch;
    const d = rankDims(o.config, o.plan);
    const logitsAll = new Float32Array(o.logits!);
    while (!this.stopped) {
      let step;
      try {
        step = await ctrl.waitForStep(last);
      } catch (e) {
        if (e instanceof DisposedError) break;
        if (e instanceof AbortedError) {
          ctrl.park(o.rank);
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
        await this.runForward(input, into);
        ctrl.signalDone(o.rank, step.seq, STATUS_OK);
      } catch (e) {
        // A failed mapAsync or submit may be the first sign of a lost device: give its lost
        // promise a moment, so the error names the real cause.
        if (!(e instanceof WebGpuTpError) && this.lostReason === null) await Promise.race([this.ctx!.lost, new Promise((r) => setTimeout(r, 100))]);
        const err = this.lostReason !== null && !(e instanceof DeviceLostError) ? new DeviceLostError(o.rank, this.lostReason) : e;
        this.lastError = serializeError(err);
        // An aborted rank is out of every collective: it parks until the group is reset.
        ctrl.signalDone(o.rank, step.seq, err instanceof AbortedError ? STATUS_PARKED : STATUS_FAILED);
        if (err instanceof AbortedError) {
          const r = await ctrl.waitForReset(epoch).catch(() => null);
          if (!r) break;
          epoch = r.epoch;
          last = r.stepSeq;
        }
      }
    }
  }

  /** One step's forward pass and its timings; this rank's logits rows go into `into`. */
  private async runForward(input: StepInput, into: Float32Array): Promise<void> {
    const t0 = performance.now();
    // The totals of this step's start: a resetStats() arriving mid-step (a Comlink call between
    // the step's awaits) swaps in new totals, and this step's times go with the old ones,
    // uncounted, instead of its compute absorbing the old readback sums.
    const times = this.times;
    const before = times.readback + times.allreduce + times.upload;
    const red = (this.reducer ??= this.mcomm ? this.makeMessageReducer(this.mcomm) : this.makeReducer());
    await forward(this.backend!, this.state!, this.rowSum!, red, input, into, times);
    times.compute += performance.now() - t0 - (times.readback + times.allreduce + times.upload - before);
    if (times === this.times) this.steps++;
  }

  /**
   * Message mode: runs one step (its command words) and returns this rank's logits rows. A
   * failure rejects with the typed error; the group is then out of step (see `abortStep`).
   */
  async step(words: Int32Array): Promise<Float32Array> {
    const { ctx, init_: o } = this.need();
    try {
      if (this.lostReason !== null) throw new DeviceLostError(o.rank, this.lostReason);
      const input = decodeStep(words, o.maxRows);
      if (input.m < 1 || input.m > o.maxRows) throw new InvalidArgumentError(`step of ${input.m} rows, expected 1..${o.maxRows}`);
      const into = new Float32Array(input.logitRows.length * rankDims(o.config, o.plan).vocab);
      await this.runForward(input, into);
      return into;
    } catch (e) {
      if (!(e instanceof WebGpuTpError) && this.lostReason === null) await Promise.race([ctx.lost, new Promise((r) => setTimeout(r, 100))]);
      throw this.lostReason !== null && !(e instanceof DeviceLostError) ? new DeviceLostError(o.rank, this.lostReason) : e;
    }
  }

  /** Message mode: leaves the collective this rank may be waiting in; every later step fails. */
  abortStep(reason: string): void {
    this.mcomm?.abort(reason);
  }

  /**
   * A rank in another tab: loads its own shard from the model (a URL it fetches, or a Blob the
   * host posted), through the IndexedDB shard cache as the host would, and uploads it.
   */
  async loadFrom(model: string | Blob, cache: boolean): Promise<{ fromCache: boolean; weightBytes: number }> {
    const { init_: o } = this.need();
    const [shard] = await loadShards({ plan: { ranks: [o.plan] }, source: openSource(model), cache }, [0], this.warnings);
    await this.load(shard!.bytes.buffer as ArrayBuffer);
    return { fromCache: shard!.fromCache, weightBytes: this.weightBytes };
  }

  /**
   * A rank in another tab: answers the host's Comlink calls over the RPC channel pair (see
   * src/engine/tab-link.ts) as it answers its own page's.
   */
  serve(toWorker: string, toHost: string): void {
    Comlink.expose(this, channelEndpoint(toHost, toWorker));
  }

  /** Message mode: the all-reduce of a sync point over the message transport (no shared slot, so one buffer). */
  private makeMessageReducer(comm: MessageCommunicator): StepCommunicator {
    const { init_: o } = this.need();
    const buf = new Float32Array(o.maxRows * o.config.dim);
    return {
      rank: o.rank,
      world: o.world,
      slot: (n) => buf.subarray(0, n),
      allReduce: async (n) => {
        const v = buf.subarray(0, n);
        await comm.allReduce(v, 'auto', v);
        return v;
      },
      // A sum in which every other rank adds −0: x + (−0) is x to the bit (+0 and −0 included),
      // so the root's floats arrive exactly, with no second kind of message.
      broadcast: async (n, root) => {
        const v = buf.subarray(0, n);
        if (o.rank !== root) v.fill(-0);
        await comm.allReduce(v, 'auto', v);
        return v;
      },
    };
  }

  /**
   * The all-reduce of a sync point over this rank's collective slot. The sum must not land in
   * the shared slot: other ranks may still be reading it.
   */
  private makeReducer(): StepCommunicator {
    const { init_: o } = this.need();
    const comm = this.comm!;
    const sum = new Float32Array(o.maxRows * o.config.dim);
    return {
      rank: o.rank,
      world: o.world,
      slot: (n) => comm.slot().subarray(0, n),
      allReduce: async (n) => {
        const out = sum.subarray(0, n);
        comm.allReduce(comm.slot().subarray(0, n), 'auto', out);
        return out;
      },
      broadcast: async (n, root) => {
        if (root === comm.rank) {
          const mine = comm.slot().subarray(0, n);
          comm.broadcast(mine, root);
          return mine;
        }
        const out = sum.subarray(0, n);
        comm.broadcast(out, root);
        return out;
      },
    };
  }

  private workBytes(): number {
    return this.state?.workBytes ?? 0;
  }

  stats(): RankStats {
    const o = this.init_;
    const steps = Math.max(this.steps, 1);
    const rt = [...this.times.roundtrips].sort((a, b) => a - b);
    return {
      rank: o?.rank ?? -1,
      adapter: this.ctx ? this.ctx.adapterInfo.description || this.ctx.adapterInfo.architecture : '',
      weightBytes: this.weightBytes,
      workBytes: this.workBytes(),
      precision: {
        ...rankPrecision(this.ctx, this.weights),
        kvCache: this.state?.kv.dtype ?? 'f32',
        kvCacheKernels: this.ctx && this.state ? cacheAccess(this.ctx, this.state.kv) : 'f32',
      },
      steps: this.steps,
      breakdown: {
        compute_ms: this.times.compute / steps,
        readback_ms: this.times.readback / steps,
        allreduce_ms: this.times.allreduce / steps,
        upload_ms: this.times.upload / steps,
        scheduler_ms: 0,
      },
      allreduceRoundtripMs: rt.length ? rt[Math.floor(rt.length / 2)]! : 0,
      ...(this.profiler && {
        kernels: [...this.profiler.totals].map(([name, k]) => ({ name, calls: k.calls, gpuMs: k.ms })).sort((a, b) => b.gpuMs - a.gpuMs),
      }),
      warnings: [...this.warnings],
    };
  }

  resetStats(): void {
    this.times = { compute: 0, readback: 0, allreduce: 0, upload: 0, roundtrips: [] };
    this.steps = 0;
    this.profiler?.reset();
  }

  /** The error of the last failed step (status 1), for the main thread to rethrow typed. */
  takeError(): SerializedError | null {
    const e = this.lastError;
    this.lastError = null;
    return e;
  }

  /**
   * Test hook (fault injection, never called by the engine): destroys this rank's device, as
   * a GPU reset or a driver crash would lose it. The next step fails with `DeviceLostError`.
   */
  _destroyDeviceForTest(): void {
    this.ctx?.device.destroy();
  }

  async dispose(): Promise<void> {
    this.stopped = true;
    this.mcomm?.close();
    await Promise.race([this.loopDone.catch(() => {}), new Promise((r) => setTimeout(r, 1000))]);
    if (this.ctx) {
      if (this.state) this.backend?.destroyState(this.state);
      if (this.weights) this.backend?.destroyWeights(this.weights);
      destroyGpuContext(this.ctx);
    }
    this.state = undefined;
    this.profiler = undefined;
    this.weights = undefined;
    this.ctx = undefined;
  }

  private need() {
    if (!this.ctx || !this.init_) throw new InvalidArgumentError('the shard worker is not initialised');
    return { ctx: this.ctx, init_: this.init_ };
  }
}

Comlink.expose(new ShardWorker());
