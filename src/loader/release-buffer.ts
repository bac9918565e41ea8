/**
 * Frees an ArrayBuffer's bytes now. Unreferenced, they wait for a major GC, which an idle worker
 * may never run, and Chromium 156 keeps them resident after `transfer(0)` too. Posted,
 * transferred, into a closed channel, the buffer is detached and its message dropped unread.
 */
export function releaseBuffer(buffer: ArrayBuffer): void {
  const { port1, port2 } = new MessageChannel();
  port1.postMessage(null, [buffer]);
  port1.close();
  port2.close();
}
