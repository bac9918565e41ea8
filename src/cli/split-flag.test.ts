import { describe, expect, it } from 'vitest';
import { parseSplitFlag } from './split-flag.js';
import { UsageError } from './usage-error.js';

describe('--split', () => {
  it('a plain list is shares of every axis; a named list is one axis, the others even', () => {
    expect(parseSplitFlag('0.6667,0.3333')).toEqual([0.6667, 0.3333]);
    expect(parseSplitFlag('2,1,1')).toEqual([2, 1, 1]);
    expect(parseSplitFlag('heads=2,1')).toEqual({ heads: [2, 1] });
    expect(parseSplitFlag('heads=8,4,vocab=1,1')).toEqual({ heads: [8, 4], vocab: [1, 1] });
    expect(parseSplitFlag('hidden=1,3, vocab = 3,1')).toEqual({ hidden: [1, 3], vocab: [3, 1] });
  });

  it('refuses what it cannot read, naming the axes', () => {
    const bad = (v: string, m: RegExp) => expect(() => parseSplitFlag(v), v).toThrow(m);
    bad('kvHeads=1,1', /no axis "kvHeads"; the axes are heads, hidden, vocab/);
    bad('heads=2,1,heads=1,1', /names heads twice/);
    bad('heads=2,1,vocab=1,1,1', /every axis has one share per rank/);
    bad('2,1,vocab=1,1', /not both/);
    bad('heads=2,0', /a share is a number > 0; got "0"/);
    bad('heads=', /a share is a number > 0; got ""/);
    bad('0.5,x', /got "x"/);
    bad('-1,2', /got "-1"/);
    expect(() => parseSplitFlag('heads=x')).toThrow(UsageError);
  });
});
