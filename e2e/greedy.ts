/**
 * Greedy stories260K from BOS, as the oracle gives it (src/model/reference.ts, checked against
 * llama2.c's run.c), and the assertions that say a full 256-token run is llama2.c's documented
 * sample, shared by every spec that runs it on some kind of rank.
 */
import { readFileSync } from 'node:fs';
import { expect } from '@playwright/test';

/** The oracle's tokens, BOS first, and their text. */
export const greedy = JSON.parse(readFileSync(new URL('../test-support/fixtures/stories260K-greedy.json', import.meta.url), 'utf8')) as { tokens: number[]; text: string };

/** A 256-token greedy run from an empty prompt is the documented sample, token for token. */
export function expectDocumentedGreedy(r: { prompt_tokens: number[]; tokens: number[]; text: string }): void {
  expect(r.prompt_tokens).toEqual([1]);
  expect(r.tokens).toEqual(greedy.tokens.slice(1));
  expect(r.text.startsWith('Once upon a time, there was a little girl named Lily. She loved to play outside in the park. One day, she saw a big, red ball. She wanted to play with it, but it was too high.')).toBe(true);
  expect(r.text.endsWith('Her mom said, "Don\'t worry, Lily. We can help you.')).toBe(true);
}

/** A greedy run of `n` tokens from an empty prompt is the documented sample's first `n`, token for token. */
export function expectGreedyStart(r: { prompt_tokens: number[]; tokens: number[]; text: string }, n: number): void {
  expect(r.prompt_tokens).toEqual([1]);
  expect(r.tokens).toEqual(greedy.tokens.slice(1, n + 1));
  expect(greedy.text.startsWith(r.text)).toBe(true);
}
