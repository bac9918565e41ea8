import { describe, expect, it } from 'vitest';
import { decodeWindow, type StreamArrivals } from './decode-window.js';

/**
 * Streams as the scheduler delivers them: `steps[k]` is when step k's chunks reach the page, and
 * stream i takes a token in each step from `first[i]` to `last[i]`, its done chunk with the last.
 * Within a step, stream i's chunk comes `i` µs after the step's time (microtask order).
 */
function streams(steps: number[], first: number[], last: number[]): StreamArrivals[] {
  return first.map((f, i) => {
    const at = (k: number) => steps[k]! + i * 0.001;
    const tokens = steps.map((_, k) => k).filter((k) => k >= f && k <= last[i]!).map(at);
    return { tokens, done: at(last[i]!) + 0.0005 };
  });
}

describe('decodeWindow', () => {
  // Three streams prefilled a step apart, 5 tokens each, a step every 10 ms.
  const steps = [0, 10, 20, 30, 40, 50, 60, 70];
  const staggered = streams(steps, [1, 2, 3], [5, 6, 7]);

  it('runs from the step of the last stream\'s first token to the step of the first stream\'s last', () => {
    const w = decodeWindow(staggered);
    expect(w.everyStream).toBe(true);
    // Steps 4 and 5 are in it, 3 streams each; steps 6 and 7 run the batch down.
    expect(w.decodeTokens).toBe(6);
    expect(w.start).toBe(30.002);
    expect(w.end).toBe(50);
    expect(w.decodeMs).toBeCloseTo(19.998, 9);
  });

  it('counts the start step\'s tokens as before it whichever stream saw its chunk first', () => {
    // Stream 2's first token reaches the page before the others' tokens of that step.
    const reordered = staggered.map((s, i) => ({ ...s, tokens: s.tokens.map((t) => (t >= 30 && t < 31 ? 30 + (2 - i) * 0.001 : t)) }));
    const w = decodeWindow(reordered);
    expect(w.start).toBe(30);
    expect(w.decodeTokens).toBe(6);
  });

  it('holds the steps delivered between the start step and a late look at the counts', () => {
    // Step 4 came 1 ms after step 3; a timer after step 3 that fired after step 4's chunks saw
    // stream 0 at 4 tokens, not 3, and the old count gave 3 · (5 − 4) = 3 tokens in the 11 ms
    // from step 3 to step 5. The steps are 4 and 5: 6 tokens.
    const w = decodeWindow(streams([0, 10, 20, 30, 31, 41, 51, 61], [1, 2, 3], [5, 6, 7]));
    expect(w.decodeTokens).toBe(6);
    expect(w.decodeMs).toBeCloseTo(10.998, 9);
  });

  it('runs to the last token when no step has every stream decoding', () => {
    // Stream 0 ends (step 2) before stream 2's first token (step 3).
    const w = decodeWindow(streams(steps, [1, 2, 3], [2, 4, 5]));
    expect(w.everyStream).toBe(false);
    // Steps 4 and 5 after the start: stream 1's last token, then stream 2's two.
    expect(w.decodeTokens).toBe(3);
    expect(w.end).toBe(50.002);
  });

  it('ends at the last token of a stream stopped by a done chunk alone', () => {
    // Stream 0 stops (EOS) in step 5 without a token: the window is step 4.
    const eos = staggered.map((s, i) => (i === 0 ? { tokens: s.tokens.slice(0, -1), done: 50.0005 } : s));
    const w = decodeWindow(eos);
    expect(w.everyStream).toBe(true);
    expect(w.decodeTokens).toBe(3);
    expect(w.end).toBe(40);
  });

  it('is one stream\'s tokens after its first, over the time after its first', () => {
    const w = decodeWindow(streams(steps, [1], [6]));
    expect(w.decodeTokens).toBe(5);
    expect(w.decodeMs).toBe(50);
  });

  it('is empty when a stream has no token, or none has a second', () => {
    expect(decodeWindow([{ tokens: [1, 2] }, { tokens: [], done: 3 }]).decodeTokens).toBe(0);
    expect(decodeWindow(streams(steps, [1, 2], [1, 2])).decodeTokens).toBe(0);
    expect(decodeWindow([]).decodeTokens).toBe(0);
  });
});
