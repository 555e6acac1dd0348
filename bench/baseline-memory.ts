// Baseline (a): the least a server can do for get-row. A bare node:http server holding every seeded row
// in memory, answering GET /v1/collections/bench/rows/{id} with the row as rowbase would (JSON, with
// its id). `node --import tsx bench/baseline-memory.ts <rows>`; prints one JSON line with its url.
import { createServer } from 'node:http';
import { listen } from './listen.ts';
import { collections, ownedRow } from './seed.ts';

const count = Number(process.argv[2]);
const rows = Array.from({ length: count }, (_, index) => ({ id: index + 1, ...ownedRow(index + 1) }));
const prefix = `/v1/collections/${collections.rows}/rows/`;

const server = createServer((request, response) => {
  const row = request.url?.startsWith(prefix) ? rows[Number(request.url.slice(prefix.length)) - 1] : undefined;
  if (request.method !== 'GET' || !row) {
    response.writeHead(404).end();
    return;
  }
  response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(row));
});

await listen(server, 'baseline-memory');
