// A reader follows a request from the socket to the SQL and back in a handful of files: the path of
// the most involved one, PATCH of a row, is measured by what runs (request-path.ts) and kept short.
import { expect } from 'chai';
import { describeEachBackend } from '../support/backends.ts';
import { requestPath } from '../support/request-path.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

/**
 * The most files PATCH /v1/collections/{c}/rows/{id} may run through, on either backend (SQLite's path
 * is the longer). Both cross the stages of app.ts and the answer they write (http/stages.ts), what the
 * request sends (http/request.ts: its body, its Idempotency-Key, which lets a write without one pass,
 * and If-Match), the operation (http/operations.ts), the meter, the handler, the store's edge with its
 * cache of keys (db/operations.ts), the rules of rows (db/rows.ts) and the collection's schema the row
 * is checked against (db/schemas.ts: its id as last seen, which the write's statement confirms; the
 * validator itself runs only for a collection with a schema). Then SQLite's rows.ts (the
 * operations and the writer's prepared statements), sql.ts and the writer's queue (db/batches.ts,
 * GroupedWrites); PostgreSQL's rows.ts (whose listener hears the NOTIFY of the change and leaves it to
 * this process's own) and statements.ts, with its SQL in sql.ts, made once at start, and db/indexes.ts
 * (keepingUnique, around the write). db/idempotency.ts runs only for a write sent with a key. And the
 * patch's own module (patches/): read.ts reads the body as a patch of its Content-Type (the handler),
 * and on PostgreSQL names the fields it changes (re-keying); apply.ts applies it to the row read in the
 * write's transaction (PostgreSQL always; SQLite when the patch is not set field by field in SQL).
 */
const MAX_FILES = 13;

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
