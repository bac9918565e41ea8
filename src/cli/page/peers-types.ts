/**
 * Types of the peers page (src/cli/page/peers.ts), shared with `bench peers` on the Node side.
 * Pure types: importing this from Node pulls in no browser code.
 */
import type { DevicesOption } from '../../engine/placement.js';
import type { AxisSplit } from '../../parallel/axis-split.js';

/** One engine configuration, loaded once in its own browser context. */
export type PeerSpec =
  | { engine: 'ours'; model: string; tp: number; devices?: DevicesOption; int8Activations?: boolean; split?: readonly number[] | AxisSplit }
  | { engine: 'wllama'; model: string; threads: number; gpu: boolean; ctx: number }
  | { engine: 'onnxruntime-web'; model: string; threads: number; ep: 'wasm' | 'webgpu' };

/** One greedy decode from given prompt ids, EOS ignored, with each token's arrival time. */
export interface PeerRunRequest {
  prompt: number[];
  /** The same prompt as text, for a peer that takes no ids (wllama 3); it must encode to `prompt`. */
  text: string;
  maxTokens: number;
  /** Also return each step's two highest logits (costs a full-vocabulary sort in wllama). */
  top2: boolean;
  /**
   * ms of decoding (from the first token) after which the run stops at its next token, once it
   * has `minTokens` (the time budget of a slow configuration); without it the run takes all
   * `maxTokens`.
   */
  budgetMs?: number;
  minTokens?: number;
}

export interface PeerRun {
  /** Greedy tokens in order (wllama gives ids only with `top2`; otherwise an empty list). */
  tokens: number[];
  /** ms from the request to the first token (prefill and its sampling). */
  prefillMs: number;
  /** ms between consecutive tokens: entry i is token i + 1's step. */
  stepMs: number[];
  /** Prompt tokens by the peer's own count, where it tokenised `text` itself. */
  promptTokens?: number;
  /** What the peer could not give (e.g. its logits), said in a sentence. */
  note?: string;
  /** With `top2`: each step's [id, logit] of its two highest logits (log-probabilities for wllama: same differences). */
  top2?: [number, number][][];
}

/** What loading a spec gave: its time, and what it ran on (wllama may fall back from WebGPU). */
export interface PeerLoaded {
  loadMs: number;
  backend: string;
}
