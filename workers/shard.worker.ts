/**
 * A shard worker: one device (a GPUDevice, or the WebAssembly SIMD kernels of a CPU rank, chosen
 * once at init: workers/rank-compute.ts), one shard of every weight matrix, its part of every layer.
 * The main thread talks to it through Comlink for control (the `RankApi` of src/protocol.ts);
 * steps arrive through the SharedArrayBuffer control block, and partial sums leave through the
 * communicator. Between steps it waits with Atomics.waitAsync, so its event loop stays free for
 * mapAsync, device.lost and Comlink; it blocks only inside a collective.
 *
 * In an engine with a rank in another tab (`ShardInit.messages`), shared memory cannot reach
 * every rank: steps come as Comlink calls (`step`) that return the rank's logits, and partial
 * sums travel over the message transport. Either way one step loop runs them (workers/transport.ts).
 * A tab rank's worker serves the host's calls over BroadcastChannels (`serve`) and loads its own
 * shard from the model (`loadFrom`).
 */
import * as Comlink from 'comlink';
import {
  decodeStep, installErrorTransfer, REPLY_BEST, stepReply, type RankApi, type ShardInit, type ShardInitResult, type StepInput,
} from '../src/protocol.js';
import type { Communicator } from '../src/collective/index.js';
import { channelEndpoint } from '../src/engine/tab-link.js';
import { loadShards } from '../src/engine/load-shards.js';
import { openSource } from '../src/loader/source.js';
import { DeviceLostError, InvalidArgumentError, WebGpuTpError, serializeError, type SerializedError } from '../src/errors.js';
import { rankDims } from '../src/parallel/plan.js';
import { isCpuSpec } from '../src/gpu/core/adapter.js';
import type { StepTimes } from './backend.js';
import { chooseRowSum } from './row-sum.js';
import { releaseBuffer } from '../src/loader/release-buffer.js';
import { openTransport, type RankTransport } from './transport.js';
import type { RankReport } from '../src/engine/types.js';
import { cpuCompute, gpuCompute, runsExact, type RankCompute } from './rank-compute.js';
import { cpuExactCompute } from './cpu-exact-compute.js';
import { BEST_FLOATS, sliceBests } from '../src/engine/vocab-argmax.js';

installErrorTransfer();

export class ShardWorker implements RankApi {
  private init_?: ShardInit;
  /** The device this rank computes on, WebGPU or CPU, chosen once at init. */
  private compute?: RankCompute;
  private comm?: Communicator;
  private transport?: RankTransport;
  private weightBytes = 0;
  private lastError: SerializedError | null = null;
  private times: StepTimes = { compute: 0, readback: 0, allreduce: 0, upload: 0, roundtrips: [] };
  private steps = 0;
  private lostReason: string | null = null;
  private stopped = false;
  private loopDone: Promise<void> = Promise.resolve();
  private warnings: string[] = [];
  /** A greedy step's logits rows, which stay on this rank. */
  private kept = new Float32Array(0);

  async init(o: ShardInit): Promise<ShardInitResult> {
    this.init_ = o;
    // A CPU rank gets no GPU context and tunes nothing.
    this.compute = isCpuSpec(o.device) ? (runsExact(o) ? cpuExactCompute(o) : cpuCompute(o)) : await gpuCompute(o);
    void this.compute.lost.then((reason) => {
      if (!this.stopped) this.lostReason = reason;
    });
    this.transport = openTransport(o, o.maxRows * o.config.dim);
    this.comm = this.transport.comm;
    return this.compute.info;
  }

  /** Uploads this rank's packed shard and builds the step's buffers and bound ops. */
  async load(packed: ArrayBuffer): Promise<{ weightBytes: number; workBytes: number; uploadMs: number; buildMs: number }> {
    const { compute, init_: o } = this.need();
    const t0 = performance.now();
    this.weightBytes = packed.byteLength;
    // How this rank combines the row-parallel partial sums, chosen once here.
    const uploadMs = await compute.load(o, packed, chooseRowSum(o.rank, o.world, runsExact(o)), this.warnings);
    // The weights now live in the rank's memory or GPU buffers, and an idle rank may never run
    // the GC that would free the shard: free it here. A rebuild reloads it from the cache.
    releaseBuffer(packed);
    return { weightBytes: this.weightBytes, workBytes: this.workBytes(), uploadMs, buildMs: performance.now() - t0 - uploadMs };
  }

  /** Starts the step loop; it runs until dispose. */
  start(): void {
    this.loopDone = this.loop();
  }

  /**
   * Every step, whichever way it came: run it, answer with this rank's logits, or with its
   * typed error. A failed mapAsync or submit may be the first sign of a lost device, so an
   * untyped error first gives the device's lost promise a moment, and the error names the real
   * cause.
   */
  private async loop(): Promise<void> {
    const { init_: o } = this.need();
    const d = rankDims(o.config, o.plan);
    const steps = this.transport!.steps;
    for (let step = await steps.next(); step; step = await steps.next()) {
      try {
        if (this.lostReason !== null) throw new DeviceLostError(o.rank, this.lostReason);
        const input = decodeStep(step.words, o.maxRows);
        if (input.m < 1 || input.m > o.maxRows) throw new InvalidArgumentError(`step of ${input.m} rows, expected 1..${o.maxRows}`);
        const nl = input.logitRows.length;
        // A greedy step's logits stay here: only each row's best (value, id) leaves the rank.
        const best = stepReply(step.words) === REPLY_BEST;
        if (best && this.kept.length < nl * d.vocab) this.kept = new Float32Array(nl * d.vocab);
        const logits = best ? this.kept.subarray(0, nl * d.vocab) : step.logits(nl * d.vocab);
        await this.runForward(input, logits);
        if (!best) step.done(logits);
        else {
          const out = step.logits(nl * BEST_FLOATS);
          sliceBests(logits, nl, d.vocab, o.plan.vocab[0], out);
          step.done(out);
        }
      } catch (e) {
        if (!(e instanceof WebGpuTpError) && this.lostReason === null) await Promise.race([this.compute!.lost, new Promise((r) => setTimeout(r, 100))]);
        const err = this.lostReason !== null && !(e instanceof DeviceLostError) ? new DeviceLostError(o.rank, this.lostReason) : e;
        this.lastError = serializeError(err);
        await step.failed(err);
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
    await this.compute!.forward(this.comm!, input, into, times);
    times.compute += performance.now() - t0 - (times.readback + times.allreduce + times.upload - before);
    if (times === this.times) this.steps++;
  }

  /** Message mode: runs one step (its command words) and returns this rank's logits rows; a failure rejects with the typed error. */
  step(words: Int32Array): Promise<Float32Array> {
    const steps = this.transport?.steps;
    if (!steps?.post) throw new InvalidArgumentError('steps come through the control block, not as calls, on this rank');
    return steps.post(words);
  }

  /** Message mode: leaves the collective this rank may be waiting in; every later step fails. */
  abortStep(reason: string): void {
    this.transport?.abort(reason);
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

  private workBytes(): number {
    return this.compute?.workBytes() ?? 0;
  }

  stats(): RankReport {
    const o = this.init_;
    const steps = Math.max(this.steps, 1);
    const rt = [...this.times.roundtrips].sort((a, b) => a - b);
    const profiler = this.compute?.profiler();
    return {
      rank: o?.rank ?? -1,
      adapter: this.compute?.adapter ?? '',
      weightBytes: this.weightBytes,
      workBytes: this.workBytes(),
      precision: this.compute?.precision() ?? { weights: 'f32', math: 'f32', f16Kernels: 'packed', kvCache: 'f32', kvCacheKernels: 'f32' },
      steps: this.steps,
      breakdown: {
        compute_ms: this.times.compute / steps,
        readback_ms: this.times.readback / steps,
        allreduce_ms: this.times.allreduce / steps,
        upload_ms: this.times.upload / steps,
        scheduler_ms: 0,
      },
      allreduceRoundtripMs: rt.length ? rt[Math.floor(rt.length / 2)]! : 0,
      ...(profiler && {
        kernels: [...profiler.totals].map(([name, k]) => ({ name, calls: k.calls, gpuMs: k.ms })).sort((a, b) => b.gpuMs - a.gpuMs),
      }),
      warnings: [...this.warnings],
    };
  }

  resetStats(): void {
    this.times = { compute: 0, readback: 0, allreduce: 0, upload: 0, roundtrips: [] };
    this.steps = 0;
    this.compute?.profiler()?.reset();
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
    if (isCpuSpec(this.init_?.device)) throw new InvalidArgumentError('a CPU rank has no device to lose', 'Fault a CPU rank by terminating its worker');
    this.compute?.destroyDevice();
  }

  async dispose(): Promise<void> {
    this.stopped = true;
    this.transport?.close();
    await Promise.race([this.loopDone.catch(() => {}), new Promise((r) => setTimeout(r, 1000))]);
    this.compute?.dispose();
    this.compute = undefined;
  }

  private need() {
    if (!this.compute || !this.init_) throw new InvalidArgumentError('the shard worker is not initialised');
    return { compute: this.compute, init_: this.init_ };
  }
}

Comlink.expose(new ShardWorker());
