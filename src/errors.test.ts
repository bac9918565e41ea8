import { describe, it, expect } from 'vitest';
import { PlanError, CollectiveTimeoutError, serializeError, reviveError, WebGpuTpError } from './errors.js';

describe('typed errors', () => {
  it('carry a stable name, a code and the remedy in the message', () => {
    const e = new PlanError('tensorParallel must divide the 8 heads (got 3)', 'Use 1, 2, 4 or 8');
    expect(e.name).toBe('PlanError');
    expect(e.code).toBe('PLAN');
    expect(e).toBeInstanceOf(WebGpuTpError);
    expect(e.remedy).toBe('Use 1, 2, 4 or 8');
    expect(e.message).toBe('tensorParallel must divide the 8 heads (got 3). Use 1, 2, 4 or 8');
  });

  it('survive a trip across a worker boundary with their class, code and fields', () => {
    const e = new CollectiveTimeoutError('allReduce', 7, [1], 500, 0);
    const back = reviveError(structuredClone(serializeError(e))) as CollectiveTimeoutError;
    expect(back).toBeInstanceOf(CollectiveTimeoutError);
    expect(back.name).toBe('CollectiveTimeoutError');
    expect(back.code).toBe('COLLECTIVE_TIMEOUT');
    expect(back.missingRanks).toEqual([1]);
    expect(back.message).toBe(e.message);
    expect(back.remedy).toBe(e.remedy);
  });

  it('rebuild plain errors as plain errors', () => {
    const back = reviveError(serializeError(new TypeError('x')));
    expect(back.name).toBe('TypeError');
    expect(back.message).toBe('x');
  });
});
