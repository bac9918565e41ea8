// Node workers cannot start from a .ts file, even with `--import tsx` in execArgv (Node 20:
// ERR_UNKNOWN_FILE_EXTENSION), so each test worker starts here and loads its entry through tsx.
import { workerData } from 'node:worker_threads';
import { tsImport } from 'tsx/esm/api';

await tsImport(workerData.entry, import.meta.url);
