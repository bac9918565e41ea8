/**
 * Prefix KV reuse: which tokens each KV-cache slot holds, and which free slot a new prompt
 * should take. A finished sequence's slot keeps its KV; a prompt that starts with the same
 * tokens takes that slot and prefills only the rest. Tokens are compared, never strings (a
 * chat template or retokenising can change the text's tokens across a turn boundary).
 */

export interface PrefixCacheStats {
  /** Requests that reused a kept prefix. */
  hits: number;
  /** Prompt tokens whose KV was reused instead of prefilled. */
  reusedTokens: number;
}

export class PrefixCache {
  /** Per slot: the token at each position whose KV the slot holds. */
  private readonly held: number[][];
  /** Free slots, least recently released first. */
  private readonly free: number[];
  readonly stats: PrefixCacheStats = { hits: 0, reusedTokens: 0 };

  constructor(slots: number) {
    this.held = Array.from({ length: slots }, () => []);
    this.free = Array.from({ length: slots }, (_, i) => i);
  }

  get freeSlots(): number {
    return this.free.length;
  }

  /**
   * Takes the free slot that holds the longest prefix of `prompt` (the least recently used
   * one when none does, or without `reuse`), and says how many of its positions can be kept:
   * at most all but the prompt's last token, whose logits the next token needs.
   */
  take(prompt: readonly number[], reuse: boolean): { slot: number; reused: number } {
    let best = 0;
    let bestLen = 0;
    if (reuse) {
      this.free.forEach((slot, i) => {
        const n = commonPrefix(this.held[slot]!, prompt, prompt.length - 1);
        if (n > bestLen) [best, bestLen] = [i, n];
      });
    }
    const slot = this.free.splice(best, 1)[0]!;
    if (bestLen > 0) {
      this.stats.hits++;
      this.stats.reusedTokens += bestLen;
    }
    return { slot, reused: bestLen };
  }

  release(slot: number): void {
    this.free.push(slot);
  }

  /** Records the rows of a step that ran: each slot now holds `token` at `position`. */
  wrote(rows: readonly { token: number; position: number; slot: number }[]): void {
    for (const r of rows) {
      const h = this.held[r.slot]!;
      // A gap (never expected) leaves positions unknown: hold nothing rather than guess.
      if (r.position > h.length) h.length = 0;
      else {
        h.length = r.position;
        h.push(r.token);
      }
    }
  }

  /** Forgets what every slot holds (after a failed step the ranks' caches may be gone). */
  clear(): void {
    for (const h of this.held) h.length = 0;
  }

  resetStats(): void {
    this.stats.hits = 0;
    this.stats.reusedTokens = 0;
  }
}

/** Length of the common prefix of `a` and `b`, at most `max`. */
function commonPrefix(a: readonly number[], b: readonly number[], max: number): number {
  const n = Math.min(a.length, b.length, max);
  let i = 0;
  while (i < n && a[i] === b[i]) i++;
  return i;
}
