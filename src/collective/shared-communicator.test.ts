import { describe, expect, it } from 'vitest';
import { InvalidArgumentError } from '../errors.js';
import { createCollectiveBuffer } from './layout.js';
import { attachCommunicator } from './shared-communicator.js';

describe('SharedCommunicator', () => {
  it('one rank: allReduce and broadcast return the slot itself (the single-rank shortcut)', async () => {
    const comm = attachCommunicator(createCollectiveBuffer({ world: 1, slotFloats: 8 }), 0);
    comm.slot(8).set([1, 2, 3, 4, 5, 6, 7, 8]);
    const sum = await comm.allReduce(8);
    expect(Array.from(sum)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(sum.buffer).toBe(comm.slot(8).buffer);
    expect(Array.from(await comm.broadcast(3, 0))).toEqual([1, 2, 3]);
  });

  it('a slot longer than the buffer holds is an InvalidArgumentError, not a shorter view', () => {
    const comm = attachCommunicator(createCollectiveBuffer({ world: 2, slotFloats: 16 }), 1);
    expect(comm.slot(16)).toHaveLength(16);
    expect(() => comm.slot(17)).toThrow(InvalidArgumentError);
  });
});
