/** The error `p` rejects with, for a test to check; the test fails if `p` resolves instead. */
export async function rejectionOf(p: Promise<unknown>, expected: string): Promise<Error> {
  try {
    await p;
  } catch (e) {
    return e as Error;
  }
  throw new Error(`expected ${expected}`);
}
