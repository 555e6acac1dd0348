// The entry of the declarations' worker threads (aside.ts; its own entry of the bundle, scripts/bundle.js):
// it loads only the module of the work it is handed (format.ts's reading, contract.ts's diff), whose
// code, run in a worker handed its workerData, does the work and posts what it found. Loaded through the
// server's entry instead, a worker loaded the whole service (knex, the data layer) first: seconds under load.
import { workerData } from 'node:worker_threads';

if ((workerData as { readDeclaration?: boolean } | undefined)?.readDeclaration === true) await import('./format.ts');
else await import('./contract.ts');
