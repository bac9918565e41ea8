import { describe, expect, it } from 'vitest';
import { InvalidArgumentError } from '../errors.js';
import { LINE_WORDS, chunkBounds, createCollectiveBuffer, readLayout, summationOrder } from './layout.js';
import { ringOwnedChunk, ringSchedule } from './ring-schedule.js';
import { firstBitDifference, randomFloats, referenceSum } from '../../test-support/collective/data.js';

describe('layout', () => {
  it('keeps slots 128-byte aligned and every rank’s flags on its own line', () => {
    const l = readLayout(createCollectiveBuffer({ world: 3, slotFloats: 1001 }));
    expect(l.dataOffset % 128).toBe(0);
    expect((l.slotStride * 4) % 128).toBe(0);
    expect(l.slotStride).toBeGreaterThanOrEqual(1001);
    expect((l.doneBase * 4) % 128).toBe(0);
    expect((l.progressBase * 4) % 128).toBe(0);
    expect(l.progressBase - l.doneBase).toBe(3 * LINE_WORDS);
    expect(l.commandWords).toBe(64);
  });

  it('rejects bad sizes with what it expected', () => {
    expect(() => createCollectiveBuffer({ world: 0, slotFloats: 8 })).toThrow(InvalidArgumentError);
    expect(() => createCollectiveBuffer({ world: 2, slotFloats: -1 })).toThrow(/slotFloats/);
    expect(() => createCollectiveBuffer({ world: 2, slotFloats: 8, commandWords: 16 })).toThrow(/≥ 64/);
    expect(() => readLayout(new SharedArrayBuffer(256))).toThrow(InvalidArgumentError);
  });
});

describe('chunkBounds', () => {
  it.each([[1, 1], [1, 4], [3, 4], [2048, 3], [65537, 8], [100, 3]])('len %i over %i ranks: whole lines covering [0, len)', (len, world) => {
    const b = chunkBounds(len, world);
    expect(b).toHaveLength(world + 1);
    expect(b[0]).toBe(0);
    expect(b[world]).toBe(len);
    for (let c = 0; c < world; c++) {
      expect(b[c + 1]).toBeGreaterThanOrEqual(b[c]);
      if (b[c + 1] < len) expect(b[c + 1] % 32).toBe(0);
    }
    const sizes = b.slice(1).map((x, c) => Math.ceil(x / 32) - Math.ceil(b[c] / 32));
    expect(Math.max(...sizes) - Math.min(...sizes)).toBeLessThanOrEqual(1);
  });
});

describe('ringSchedule', () => {
  /** Runs the schedule as a message-passing ring would, one synchronous round per step. */
  function simulate(inputs: Float32Array[]): Float32Array[] {
    const world = inputs.length;
    const bounds = chunkBounds(inputs[0].length, world);
    const bufs = inputs.map((x) => Float32Array.from(x));
    const schedules = bufs.map((_, r) => ringSchedule(r, world));
    for (let k = 0; k < 2 * (world - 1); k++) {
      const sent = bufs.map((buf, r) => {
        const c = schedules[r][k].send;
        return buf.slice(bounds[c], bounds[c + 1]);
      });
      bufs.forEach((buf, r) => {
        const step = schedules[r][k];
        const got = sent[(r + world - 1) % world];
        expect(schedules[(r + world - 1) % world][k].send).toBe(step.recv);
        for (let i = 0; i < got.length; i++) {
          const at = bounds[step.recv] + i;
          buf[at] = step.phase === 'reduce-scatter' ? got[i] + buf[at] : got[i];
        }
      });
    }
    return bufs;
  }

  it.each([2, 3, 4, 5, 8])('over messages with %i ranks gives the documented-order sum on every rank', (world) => {
    const inputs = Array.from({ length: world }, (_, r) => randomFloats(1000, 3, r));
    const expected = referenceSum(inputs);
    for (const buf of simulate(inputs)) expect(firstBitDifference(buf, expected)).toBe(-1);
  });

  it('has 2(N−1) steps and leaves rank r owning chunk r+1', () => {
    expect(ringSchedule(0, 4)).toHaveLength(6);
    expect(ringSchedule(2, 4)[2]).toEqual({ phase: 'reduce-scatter', step: 2, send: 0, recv: 3 });
    expect(ringOwnedChunk(3, 4)).toBe(0);
    expect(summationOrder(2, 4)).toEqual([2, 3, 0, 1]);
  });
});
