// The files of src/ a request runs through, from the socket to the SQL and back: the path of the most
// involved one, PATCH of a row, read off what runs (request-path.ts) and printed for
// docs/development.md ("The request path"). No count of them is asserted: a file merged to shorten the
// path hides a seam, and which module may import which is the architecture's rule, not a number.
import { expect } from 'chai';
import { describeEachBackend } from '../support/backends.ts';
import { requestPath } from '../support/request-path.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

/**
 * A PATCH of a row crosses the stages of app.ts (http/) and the router
 * (http/operations.ts), the meter, its handler (handlers/rows.ts), the patch's own module (patches/:
 * read.ts reads the body as a patch of its Content-Type; apply.ts applies it where the dialect does not
 * set it field by field in SQL), the store's edge and the rules of rows in db/, then the dialect's own
 * files and its SQL. The walk finds them whatever they are; the test checks only that it found the
 * handler, so that the listing it prints is the request's.
 */
describeEachBackend('the path of a request through src/', (backend) => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer({}, { backend });
  });
  after(() => server?.stop());

  it('lists the files a PATCH of a row runs through', async () => {
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
    expect([...files.keys()], listing).to.include('handlers/rows.ts');
  });
});
