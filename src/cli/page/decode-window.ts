/**
 * The decode window of concurrent streams, read off when each token reached the page: from
 * the step that gives the last stream its first token to the step that gives the first stream
 * to finish its last one.
 */

/** One stream as its consumer saw it: each token's arrival time (ms, in order) and its done chunk's. */
export interface StreamArrivals {
  tokens: readonly number[];
  done?: number;
}

export interface DecodeWindow {
  /** Arrival times of the window's first step (excluded) and last step (included), ms. */
  start: number;
  end: number;
  decodeMs: number;
  /** Tokens of the steps after `start` up to `end`, all streams together. */
  decodeTokens: number;
  /** Whether some step had every stream decoding; if not, the window runs to the last token. */
  everyStream: boolean;
}

/**
 * Every stream decodes in every step of the window, so it holds `streams.length` tokens a step,
 * and its steps are the tokens that the first stream to finish took after the start step. That
 * stream's count at the start step comes from arrival times: a step's chunks reach every stream
 * in one turn of the event loop, microseconds apart, and the last stream's first and second
 * tokens are a whole step apart, so its tokens by the start step are those that came before the
 * midpoint of those two. (A count taken a timer after the start step also holds the steps
 * delivered before the timer fired: the window then had the start step's time but fewer steps.)
 */
export function decodeWindow(streams: readonly StreamArrivals[]): DecodeWindow {
  const none: DecodeWindow = { start: 0, end: 0, decodeMs: 0, decodeTokens: 0, everyStream: false };
  if (streams.length === 0 || streams.some((s) => s.tokens.length === 0)) return none;
  const last = argBest(streams, (s) => s.tokens[0]!, (a, b) => a > b);
  const start = last.tokens[0]!;
  // With a single token the last stream ends at the start step, and so does the window.
  const boundary = last.tokens.length > 1 ? (start + last.tokens[1]!) / 2 : Infinity;
  const by = (s: StreamArrivals, t: number) => s.tokens.filter((a) => a < t).length;
  const first = argBest(streams, (s) => s.done ?? Infinity, (a, b) => a < b);
  const steps = first.tokens.length - by(first, boundary);
  if (steps > 0) {
    const end = first.tokens[first.tokens.length - 1]!;
    return { start, end, decodeMs: end - start, decodeTokens: streams.length * steps, everyStream: true };
  }
  // No step had every stream decoding: each stream's tokens after the start step, to the last one.
  const end = Math.max(...streams.map((s) => s.tokens[s.tokens.length - 1]!));
  const decodeTokens = Number.isFinite(boundary) ? streams.reduce((n, s) => n + s.tokens.length - by(s, boundary), 0) : 0;
  return { start, end, decodeMs: end - start, decodeTokens, everyStream: false };
}

/** The stream whose `key` is `better` than every other's (the first such). */
function argBest(streams: readonly StreamArrivals[], key: (s: StreamArrivals) => number, better: (a: number, b: number) => boolean): StreamArrivals {
  let best = streams[0]!;
  for (const s of streams) if (better(key(s), key(best))) best = s;
  return best;
}
