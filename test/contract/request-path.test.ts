// A reader follows a request from the socket to the SQL and back in a handful of files: the path of
// the most involved one, PATCH of a row, is measured by what runs (request-path.ts) and kept short.
import { expect } from 'chai';
import { describeEachBackend } from '../support/backends.ts';
import { requestPath } from '../support/request-path.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

/**
 * The most files PATCH /v1/collections/{c}/rows/{id} may run through, on either backend: today 18 on
 * SQLite, 20 on PostgreSQL. Its preconditions (If-Match) are read in a file of their own,
 * http/conditions.ts, and its Idempotency-Key in two, http/idempotency.ts (the stage, which every write
 * passes) and db/idempotency.ts (which each write of PostgreSQL's calls in its transaction).
 */
const MAX_FILES = 20;

describeEachBackend('the path of a request through src/', (backend) => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer({}, { backend });
  });
  after(() => server?.stop());

  it(`PATCH of a row runs through at most ${MAX_FILES} files`, async () => {
    const client = await server.client();
    await client.post('/v1/collections', { name: 'notes' });
    await client.post('/v1/collections/notes/rows', [{ title: 'first' }]);
    let edits = 0;
    const files = await requestPath(async () => {
      const response = await client.patch('/v1/collections/notes/rows/1', { edits: ++edits });
      expect(response.status).to.equal(200);
    });
    const lines = [...files.values()].reduce((sum, count) => sum + count, 0);
    const listing = [...files].map(([file, count]) => `${file} (${count})`).join(', ');
    console.log(`      ${files.size} files, ${lines} lines: ${listing}`);
    expect(files.size, listing).to.be.at.most(MAX_FILES);
  });
});
