/**
 * One rank of the test page's collective checks, in a real dedicated Web Worker: each message is
 * a test job, run by the same `runJob` as the Node tests.
 */
import { serializeError } from '../../src/errors.js';
import { runJob, type RankJob } from '../collective/ops.js';

export type CheckRequest = { kind: 'job'; job: RankJob };

self.onmessage = (e: MessageEvent<CheckRequest>) => {
  runJob(e.data.job).then(
    (value) => self.postMessage({ ok: true, value }),
    (err: unknown) => self.postMessage({ ok: false, error: serializeError(err) }),
  );
};
