// A process of its own for request-path.ts: a test server on the database whose URL is its first
// argument (of the backend named second, made and dropped by the test), a collection with one row, and
// the files of src/ a PATCH of that row runs through, printed as JSON ([file, lines] pairs). V8's precise
// coverage, which the walk takes through node:inspector, once aborted the process that took it (a
// CHECK of V8's, in CI): here that fails the one test that asked, not the run of every suite.

import { expect } from 'chai';
import type { BackendName } from './backends.ts';
import { requestPath } from './request-path.ts';
import { startTestServer } from './server.ts';

const [url, backend] = process.argv.slice(2) as [string, BackendName];
const server = await startTestServer({}, { backend, database: { url, drop: async () => {} } });
try {
  const client = await server.client();
  await client.post('/v1/collections', { name: 'notes' });
  await client.post('/v1/collections/notes/rows', [{ title: 'first' }]);
  let edits = 0;
  const files = await requestPath(async () => {
    const response = await client.patch('/v1/collections/notes/rows/1', { edits: ++edits });
    expect(response.status).to.equal(200);
  });
  process.stdout.write(JSON.stringify([...files]));
} finally {
  await server.stop();
}
