/** A command line the CLI cannot run: main.ts prints its message with the usage and exits with 2. */
export class UsageError extends Error {}
