// The files of src/ a request runs through, from the socket to the SQL and back: the path of the most
// involved one, PATCH of a row, read off what runs (request-path.ts) and printed for
// docs/development.md ("The request path"). No count of them is asserted: a file merged to shorten the
// path hides a seam, and which module may import which is the architecture's rule, not a number.
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { createDatabase, describeEachBackend, type TestDatabase } from '../support/backends.ts';

const run = promisify(execFile);
const child = fileURLToPath(new URL('../support/request-path-child.ts', import.meta.url));

/**
 * A PATCH of a row crosses the stages of app.ts (http/) and the router
 * (http/operations.ts), the meter, its handler (handlers/rows.ts), the patch's own module (patches/:
 * read.ts reads the body as a patch of its Content-Type; apply.ts applies it where the dialect does not
 * set it field by field in SQL), the store's edge and the rules of rows in db/, then the dialect's own
 * files and its SQL. The walk finds them whatever they are; the test checks only that it found the
 * handler, so that the listing it prints is the request's. The server and the walk run in a process of
 * their own (request-path-child.ts), V8's bytecode kept (`--no-flush-bytecode`) while the coverage is
 * taken.
 */
describeEachBackend('the path of a request through src/', (backend) => {
  let database: TestDatabase;
  before(async () => {
    database = await createDatabase(backend, { migrated: true });
  });
  after(() => database?.drop());

  it('lists the files a PATCH of a row runs through', async () => {
    const { stdout } = await run(process.execPath, ['--import', 'tsx', '--no-flush-bytecode', child, database.url, backend], {
      maxBuffer: 1 << 20,
    });
    const files = new Map<string, number>(JSON.parse(stdout));
    const lines = [...files.values()].reduce((sum, count) => sum + count, 0);
    const listing = [...files].map(([file, count]) => `${file} (${count})`).join(', ');
    console.log(`      ${files.size} files, ${lines} lines: ${listing}`);
    expect([...files.keys()], listing).to.include('handlers/rows.ts');
  });
});
