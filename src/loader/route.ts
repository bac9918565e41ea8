/**
 * Routes the bytes of one model file to the ranks that need them, as they stream past: each
 * rank's slices are copied into that rank's own dense buffer, so memory stays near one chunk
 * plus the shards, and the file is read once whatever the TP degree.
 */

/** One run of bytes a rank needs: `length` bytes from `fileOffset` go to `dstOffset` in its shard. */
export interface ByteRun {
  fileOffset: number;
  length: number;
  dstOffset: number;
}

export interface RouteTarget {
  /** Runs sorted by fileOffset (the router sorts a copy if not). */
  runs: ByteRun[];
  /** The rank's packed shard; every run must fit inside it. */
  dst: Uint8Array;
}

/**
 * A push-style router: feed it consecutive chunks of the file; it copies each chunk's overlap
 * with every rank's runs. Runs may overlap, within a rank too (a tied classifier re-reads the embedding's rows).
 */
export class ByteRouter {
  private readonly targets: { runs: ByteRun[]; dst: Uint8Array; next: number; copied: number; needed: number }[];
  private position = 0;

  constructor(targets: RouteTarget[]) {
    this.targets = targets.map((t) => {
      const runs = [...t.runs].sort((a, b) => a.fileOffset - b.fileOffset);
      let needed = 0;
      for (const r of runs) {
        if (r.dstOffset + r.length > t.dst.byteLength) {
          throw new RangeError(`run to ${r.dstOffset}+${r.length} overflows a shard of ${t.dst.byteLength} bytes`);
        }
        needed += r.length;
      }
      return { runs, dst: t.dst, next: 0, copied: 0, needed };
    });
  }

  /** Bytes of the file consumed so far. */
  get offset(): number {
    return this.position;
  }

  /** Copies the parts of `chunk` (the file's bytes at the current offset) that ranks need. */
  push(chunk: Uint8Array): void {
    const start = this.position;
    const end = start + chunk.byteLength;
    for (const t of this.targets) {
      // Runs entirely before this chunk are done; start from the first that may overlap.
      while (t.next < t.runs.length && t.runs[t.next].fileOffset + t.runs[t.next].length <= start) t.next++;
      for (let i = t.next; i < t.runs.length; i++) {
        const r = t.runs[i];
        if (r.fileOffset >= end) break;
        const from = Math.max(start, r.fileOffset);
        const to = Math.min(end, r.fileOffset + r.length);
        // Runs may overlap (a tied classifier is a slice of the embedding), so one can end early.
        if (to <= from) continue;
        t.dst.set(chunk.subarray(from - start, to - start), r.dstOffset + (from - r.fileOffset));
        t.copied += to - from;
      }
    }
    this.position = end;
  }

  /** Bytes copied so far into target `i`, and how many it needs in all (for progress). */
  progress(i: number): { copied: number; needed: number } {
    const t = this.targets[i];
    return { copied: t.copied, needed: t.needed };
  }

  /** True once every run of every rank has been filled. */
  get complete(): boolean {
    return this.targets.every((t) => t.copied === t.needed);
  }
}
