/**
 * The control protocol between the main thread and the shard workers. Comlink carries it
 * (init, load, stats, dispose); nothing per layer goes through messages — steps run over the
 * SharedArrayBuffer control block. Errors cross as `SerializedError` and are rebuilt with their
 * class and `code`, so `instanceof PlanError` works on the main thread.
 */
import * as Comlink from 'comlink';
import { serializeError, reviveError, type SerializedError } from '../errors.js';

let installed = false;

/** Replaces Comlink's error transfer so typed errors keep their class and code. Idempotent. */
export function installErrorTransfer(): void {
  if (installed) return;
  installed = true;
  const base = Comlink.transferHandlers.get('throw');
  if (!base) return;
  Comlink.transferHandlers.set('throw', {
    canHandle: base.canHandle,
    serialize(thrown: unknown) {
      return [serializeError((thrown as { value: unknown }).value), []];
    },
    deserialize(s: unknown): never {
      throw reviveError(s as SerializedError);
    },
  } as Comlink.TransferHandler<unknown, unknown>);
}
