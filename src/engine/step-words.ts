/**
 * The command words of one step in the control block: what the scheduler tells every rank.
 *   [0] m            rows in this step
 *   [1] nLogitRows   rows whose logits are wanted
 *   [2] kind         STEP_FORWARD (other kinds reserved)
 *   [4 ..)           tokens[maxRows], positions[maxRows], slots[maxRows], logitRows[maxRows]
 */
import type { StepInput } from '../../workers/backend.js';

export const STEP_FORWARD = 1;
const HEADER = 4;

export function commandWords(maxRows: number): number {
  return Math.max(64, HEADER + 4 * maxRows);
}

export interface StepRowsIn {
  tokens: ArrayLike<number>;
  positions: ArrayLike<number>;
  slots: ArrayLike<number>;
  logitRows: ArrayLike<number>;
}

/** Encodes a step into `words` (length `commandWords(maxRows)`); returns how many words are live. */
export function encodeStep(words: Int32Array, maxRows: number, s: StepRowsIn): number {
  const m = s.tokens.length;
  words[0] = m;
  words[1] = s.logitRows.length;
  words[2] = STEP_FORWARD;
  for (let r = 0; r < m; r++) {
    words[HEADER + r] = s.tokens[r]!;
    words[HEADER + maxRows + r] = s.positions[r]!;
    words[HEADER + 2 * maxRows + r] = s.slots[r]!;
  }
  for (let j = 0; j < s.logitRows.length; j++) words[HEADER + 3 * maxRows + j] = s.logitRows[j]!;
  return HEADER + 3 * maxRows + s.logitRows.length;
}

/** Decodes the words of a posted step (views into `words`; copy before the next step). */
export function decodeStep(words: Int32Array, maxRows: number): StepInput {
  const m = words[0]!;
  const nl = words[1]!;
  return {
    m,
    tokens: words.subarray(HEADER, HEADER + m),
    positions: words.subarray(HEADER + maxRows, HEADER + maxRows + m),
    slots: words.subarray(HEADER + 2 * maxRows, HEADER + 2 * maxRows + m),
    logitRows: words.subarray(HEADER + 3 * maxRows, HEADER + 3 * maxRows + nl),
  };
}
