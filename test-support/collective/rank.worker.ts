// A rank for the Node tests: a worker_threads worker that runs jobs (see ops.ts) one at a time.
import { parentPort } from 'node:worker_threads';
import { serializeError } from '../../src/errors.js';
import { runJob, type RankJob } from './ops.js';

const port = parentPort;
if (!port) throw new Error('rank.worker.ts must run in a worker thread');
port.on('message', (job: RankJob) => {
  runJob(job).then(
    (results) => port.postMessage({ ok: true, results }),
    (e: unknown) => port.postMessage({ ok: false, error: serializeError(e) }),
  );
});
port.postMessage({ ready: true });
