// Baseline (d), for get-row and list on PostgreSQL: a bare node:http server reading the database that
// rowbase on PostgreSQL was seeded into, through the same `pg` driver and a pool of as many connections
// as rowbase's (postgresPoolMax). Each read is one named statement, so parsed and planned once per
// connection. No keys, metering, validation or Koa: the least the driver and the server can do.
//
//   node --import tsx bench/baseline-pg-read.ts <database url>
//
// GET /v1/collections/bench/rows/{id}: the row as rowbase answers it, its id first.
// GET /v1/collections/bench/rows?limit=…&offset=…: a page ordered by score, highest first, read through the
//   sort index rowbase made on score when the bench seeded it, its rows' JSON joined in the database as
//   rowbase's page is. It reads only the keys that have a score: every seeded row has one.
import { createServer, type ServerResponse } from 'node:http';
import pg from 'pg';
import { postgresPoolMax } from '../src/config.ts';
import { listen } from './listen.ts';
import { collections } from './seed.ts';

const [url] = process.argv.slice(2);
const pool = new pg.Pool({ connectionString: url, max: postgresPoolMax(url) });

const found = await pool.query<{ id: string; account_id: string; sorted: string }>(
  'select id, account_id, sorted from collections where name = $1',
  [collections.rows],
);
if (found.rows.length !== 1) throw new Error(`no one collection ${collections.rows} in ${url}`);
const collection = found.rows[0];
const slot = (JSON.parse(collection.sorted) as string[]).indexOf('score');
if (slot < 0) throw new Error(`collection ${collections.rows} has no sort index on score: seed it first`);

const getRow = {
  name: 'baseline-get-row',
  text: `select data from rows
    where collection_id = (select id from collections where account_id = $1 and name = $2) and id = $3`,
};
/** sort_keys: one key a row and indexed field, `(rank, num, str, row_id)` in the field's order; rank 5 is a missing value. */
const page = {
  name: 'baseline-page',
  text: `select string_agg('{"id":' || id || case data when '{}' then '}' else ',' || substr(data, 2) end, ','
      order by k.rank desc, k.num desc, k.str desc, k.row_id desc) as json
    from (select rank, num, str, row_id from sort_keys where collection_id = $1 and slot = $2 and rank < 5
      order by rank desc, num desc, str desc, row_id desc limit $3 offset $4) k
    cross join lateral (select id, data from rows where collection_id = $1 and id = k.row_id offset 0) r`,
};

const rowPrefix = `/v1/collections/${collections.rows}/rows/`;
const pagePrefix = `/v1/collections/${collections.rows}/rows?`;

const server = createServer((request, response) => {
  const path = request.url ?? '';
  if (request.method !== 'GET') response.writeHead(405).end();
  else if (path.startsWith(rowPrefix)) readRow(Number(path.slice(rowPrefix.length)), response);
  else if (path.startsWith(pagePrefix)) readPage(new URLSearchParams(path.slice(pagePrefix.length)), response);
  else response.writeHead(404).end();
});

function readRow(id: number, response: ServerResponse): void {
  if (!Number.isSafeInteger(id)) {
    response.writeHead(404).end();
    return;
  }
  pool.query<{ data: string }>({ ...getRow, values: [collection.account_id, collections.rows, id] }).then(
    ({ rows: [row] }) => {
      if (!row) response.writeHead(404).end();
      else json(response, row.data === '{}' ? `{"id":${id}}` : `{"id":${id},${row.data.slice(1)}`);
    },
    () => response.writeHead(500).end(),
  );
}

function readPage(query: URLSearchParams, response: ServerResponse): void {
  const values = [collection.id, slot, Number(query.get('limit') ?? 50), Number(query.get('offset') ?? 0)];
  pool.query<{ json: string | null }>({ ...page, values }).then(
    ({ rows: [row] }) => json(response, `[${row.json ?? ''}]`),
    () => response.writeHead(500).end(),
  );
}

const json = (response: ServerResponse, body: string) => response.writeHead(200, { 'content-type': 'application/json' }).end(body);

await listen(server, 'baseline-pg-read', () => pool.end());
