/**
 * What the page's renderer holds, read by the test driver from /proc: the size and resident bytes
 * of each anonymous mapping of every renderer process Chromium started for this test worker. Only the
 * worker's own descendants count, so browsers of other test runs on the machine do not.
 */
import { readdirSync, readFileSync } from 'node:fs';

function parentOf(pid: number): number | undefined {
  try {
    // The command name may hold spaces and parentheses: the fields after its last ')' are fixed.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  } catch {
    return undefined; // exited meanwhile
  }
}

/** Renderer processes descending from this process. */
export function rendererPids(root = process.pid): number[] {
  const parents = new Map<number, number>();
  for (const name of readdirSync('/proc')) {
    const pid = Number(name);
    const ppid = Number.isInteger(pid) ? parentOf(pid) : undefined;
    if (ppid !== undefined) parents.set(pid, ppid);
  }
  const descends = (pid: number): boolean => {
    for (let p = parents.get(pid); p !== undefined && p > 1; p = parents.get(p)) if (p === root) return true;
    return false;
  };
  return [...parents.keys()].filter((pid) => {
    if (!descends(pid)) return false;
    try {
      // Chromium rewrites its title, so the arguments may be one space-separated string.
      return /(^|[\s\0])--type=renderer([\s\0]|$)/.test(readFileSync(`/proc/${pid}/cmdline`, 'utf8'));
    } catch {
      return false;
    }
  });
}

export interface Mapping {
  pid: number;
  /** Its first address. */
  start: number;
  size: number;
  /** Resident bytes. */
  rss: number;
}

/** Each anonymous mapping of process `pid`, from its smaps. */
export function anonymousMappings(pid: number): Mapping[] {
  const out: Mapping[] = [];
  let start = 0;
  let size = 0;
  let anonymous = false;
  for (const line of readFileSync(`/proc/${pid}/smaps`, 'utf8').split('\n')) {
    const head = /^([0-9a-f]+)-([0-9a-f]+) \S+ \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (head) {
      start = parseInt(head[1]!, 16);
      size = parseInt(head[2]!, 16) - start;
      anonymous = head[3] === '' || head[3]!.startsWith('[anon');
    } else if (anonymous && line.startsWith('Rss:')) out.push({ pid, start, size, rss: Number(line.split(/\s+/)[1]) * 1024 });
  }
  return out;
}

/** The renderers' anonymous mappings with at least `minRss` bytes resident. */
export function residentMappings(minRss: number): Mapping[] {
  return rendererPids().flatMap(anonymousMappings).filter((m) => m.rss >= minRss);
}

/** The mappings of `after` that `before` did not hold already, at the same place and no smaller. */
export function newMappings(before: Mapping[], after: Mapping[]): Mapping[] {
  return after.filter((m) => !before.some((b) => b.pid === m.pid && b.start === m.start && b.size === m.size && b.rss >= m.rss));
}

/**
 * The fewest bytes of any rank's packed shard at `tp` (an even vocabulary split): every shard
 * holds the whole embedding and its rank's classifier slice. A resident mapping this large after
 * load is a shard kept, not the page's own garbage (mappings of 23 MB seen at stories15M).
 */
export function shardFloor(shape: { vocabSize: number; dim: number }, tp: number): number {
  return (shape.vocabSize + Math.floor(shape.vocabSize / tp)) * shape.dim * 4;
}
