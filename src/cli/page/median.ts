/** The upper median (the middle element, or the higher of the two middle ones) of benchmark samples. */
export function median(a: readonly number[]): number {
  const s = [...a].sort((x, y) => x - y);
  return s[s.length >> 1]!;
}
