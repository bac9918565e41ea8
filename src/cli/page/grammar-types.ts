/** Types of the page's grammar benchmark (src/cli/page/grammar.ts), shared with the Node side; pure types. */
import type { FinishReason } from '../../engine/types.js';

export interface PageGrammarRun {
  /** The generated ids. */
  tokens: number[];
  finishReason: FinishReason;
  decodeTokensPerS: number;
  /** Main-thread ms per step outside the backend (the mask is computed and applied there). */
  schedulerMs: number;
}

/** The replay: ms to build the vocabulary and compile the schema, then prepare + mask per token. */
export interface PageMaskCost {
  compileMs: number;
  perTokenMs: number[];
}
