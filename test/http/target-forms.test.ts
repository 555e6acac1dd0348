// A request target in origin form (`/v1/…`, as nearly every client writes it) and in absolute form
// (`http://host/v1/…`, RFC 9112 §3.2.2) is answered alike, byte for byte. Every exchange here is made
// twice, each time by an account of its own holding the same collection in the same state. Only what
// differs by the clock, by the database's global counters or by account is masked (see `masked`).
import { once } from 'node:events';
import { connect } from 'node:net';
import { gzipSync } from 'node:zlib';
import { expect } from 'chai';
import type { Client } from '../support/client.ts';
import { checkResponse } from '../support/contract.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

interface Exchange {
  name: string;
  method: string;
  /** Origin-form; `{}` in it is the collection's name. */
  target: string;
  headers?: string[];
  body?: string | Buffer;
  /** Status the exchange must answer; a wrong one means the case tests something else. */
  status: number;
}

const json = ['Content-Type: application/json'];

/** In order: each may depend on the ones before (the collection, its rows). */
const exchanges: Exchange[] = [
  { name: 'create a collection', method: 'POST', target: '/v1/collections', headers: json, body: '{"name":"notes"}', status: 201 },
  {
    name: 'insert rows',
    method: 'POST',
    target: '/v1/collections/notes/rows',
    headers: json,
    body: '[{"score":1,"name":"a"},{"score":2,"name":"b"},{"score":3}]',
    status: 201,
  },
  {
    name: 'insert a gzipped batch',
    method: 'POST',
    target: '/v1/collections/notes/rows',
    headers: [...json, 'Content-Encoding: gzip'],
    body: gzipSync('[{"score":4}]'),
    status: 201,
  },
  { name: 'read a row', method: 'GET', target: '/v1/collections/notes/rows/1', status: 200 },
  { name: 'list a page in order', method: 'GET', target: '/v1/collections/notes/rows?order_by=score&order=desc&limit=2', status: 200 },
  { name: 'list a page with offset', method: 'GET', target: '/v1/collections/notes/rows?offset=1', status: 200 },
  {
    name: 'patch a row',
    method: 'PATCH',
    target: '/v1/collections/notes/rows/2',
    headers: json,
    body: '{"score":20,"name":null}',
    status: 200,
  },
  { name: 'delete a row', method: 'DELETE', target: '/v1/collections/notes/rows/3', status: 204 },
  { name: 'list the collections', method: 'GET', target: '/v1/collections', status: 200 },
  { name: 'read the usage', method: 'GET', target: '/v1/usage', status: 200 },
  { name: 'a row that is not there', method: 'GET', target: '/v1/collections/notes/rows/999', status: 404 },
  { name: 'a collection that is not there', method: 'GET', target: '/v1/collections/none/rows/1', status: 404 },
  { name: 'a row id that is no integer', method: 'GET', target: '/v1/collections/notes/rows/1e3', status: 400 },
  { name: 'a limit in loose digits', method: 'GET', target: '/v1/collections/notes/rows?limit=01', status: 400 },
  { name: 'an unknown query parameter', method: 'GET', target: '/v1/collections/notes/rows?bogus=1&limit=2', status: 400 },
  { name: 'a body that is not JSON', method: 'POST', target: '/v1/collections/notes/rows', headers: json, body: '[{"a":', status: 400 },
  { name: 'a body of the wrong shape', method: 'PATCH', target: '/v1/collections/notes/rows/1', headers: json, body: '[1]', status: 400 },
  {
    name: 'a body nested too deep',
    method: 'POST',
    target: '/v1/collections/notes/rows',
    headers: json,
    body: `[${'{"a":'.repeat(100)}1${'}'.repeat(100)}]`,
    status: 400,
  },
  {
    name: 'an encoding not read',
    method: 'POST',
    target: '/v1/collections/notes/rows',
    headers: [...json, 'Content-Encoding: zstd'],
    body: '[]',
    status: 415,
  },
  { name: 'a patch with no body', method: 'PATCH', target: '/v1/collections/notes/rows/1', status: 400 },
  {
    name: 'an id the service assigns',
    method: 'POST',
    target: '/v1/collections/notes/rows',
    headers: json,
    body: '[{"id":5}]',
    status: 400,
  },
  { name: 'a duplicate collection', method: 'POST', target: '/v1/collections', headers: json, body: '{"name":"notes"}', status: 409 },
  { name: 'no key', method: 'GET', target: '/v1/collections/notes/rows/1', headers: ['x-api-key:'], status: 401 },
  { name: 'an unknown key', method: 'GET', target: '/v1/collections', headers: ['x-api-key: rb_nothing'], status: 401 },
  { name: 'a method the path does not have', method: 'PUT', target: '/v1/collections/notes/rows/1', status: 405 },
  { name: 'a path there is none of', method: 'GET', target: '/v1/nothing', status: 404 },
  { name: 'HEAD of a row', method: 'HEAD', target: '/v1/collections/notes/rows/1', status: 200 },
  {
    name: 'another spelling of JSON',
    method: 'PATCH',
    target: '/v1/collections/notes/rows/1',
    headers: ['Content-Type: application/json; charset="utf-8"'],
    body: '{"score":10}',
    status: 200,
  },
  {
    name: 'a Content-Type that is not JSON',
    method: 'POST',
    target: '/v1/collections/notes/rows',
    headers: ['Content-Type: text/plain'],
    body: '[]',
    status: 415,
  },
];

describe('request targets', () => {
  let server: TestServer;
  let viaOrigin: Client;
  let viaAbsolute: Client;

  before(async () => {
    server = await startTestServer();
    // Names of one length: /v1/usage answers the name, so its Content-Length counts it.
    viaOrigin = await server.client('origin-target');
    viaAbsolute = await server.client('absolute-form');
  });
  after(() => server.stop());

  it('answers every exchange in origin form as in absolute form, byte for byte', async () => {
    const host = new URL(server.url).host;
    for (const exchange of exchanges) {
      const origin = await exchangeOf(server.url, exchange, `Host: ${host}`, exchange.target, viaOrigin.key as string);
      const absolute = await exchangeOf(
        server.url,
        exchange,
        `Host: ${host}`,
        `http://${host}${exchange.target}`,
        viaAbsolute.key as string,
      );
      expect(origin.status, `${exchange.name}: ${origin.raw}`).to.equal(exchange.status);
      expect(masked(origin.raw), exchange.name).to.equal(masked(absolute.raw));
      checkResponse({ method: exchange.method, path: exchange.target.split('?')[0], ...origin.response });
    }
  });

  it('refuses a request without Host', async () => {
    const { status } = await exchangeOf(
      server.url,
      { name: '', method: 'GET', target: '', status: 400 },
      '',
      '/v1/collections',
      viaOrigin.key as string,
    );
    expect(status).to.equal(400);
  });
});

interface Exchanged {
  status: number;
  /** The whole response as received, head and body. */
  raw: string;
  response: { status: number; headers: Headers; text: string };
}

/** Writes the exchange's request on a connection of its own (which it closes) and reads the whole response. */
async function exchangeOf(url: string, exchange: Exchange, host: string, target: string, key: string): Promise<Exchanged> {
  const { hostname, port } = new URL(url);
  const socket = connect(Number(port), hostname);
  await once(socket, 'connect');
  const body = exchange.body === undefined ? Buffer.alloc(0) : Buffer.from(exchange.body);
  const headers = [
    ...(host ? [host] : []),
    'Connection: close',
    // One request id for every exchange: each answer names its own (X-Request-Id, a problem's instance).
    'X-Request-Id: target-forms',
    ...(exchange.headers?.some((line) => /^x-api-key:/i.test(line)) ? [] : [`x-api-key: ${key}`]),
    ...(exchange.headers ?? []),
    ...(body.length > 0 ? [`Content-Length: ${body.length}`] : []),
  ];
  // Written, not ended: a client that half-closes its side is taken by Node for one that went away.
  socket.write(Buffer.concat([Buffer.from(`${exchange.method} ${target} HTTP/1.1\r\n${headers.join('\r\n')}\r\n\r\n`), body]));
  const chunks: Buffer[] = [];
  for await (const chunk of socket) chunks.push(chunk as Buffer);
  const raw = Buffer.concat(chunks).toString('utf8');
  const [head, text = ''] = raw.split('\r\n\r\n', 2);
  const [statusLine, ...lines] = head.split('\r\n');
  const status = Number(statusLine.split(' ')[1]);
  const parsed = new Headers(
    lines.map((line): [string, string] => [line.slice(0, line.indexOf(':')), line.slice(line.indexOf(':') + 1).trim()]),
  );
  return { status, raw, response: { status, headers: parsed, text } };
}

/**
 * The response with what differs by the clock, by global counters or by account masked: Date,
 * RateLimit-Reset, Rowbase-Seq, timestamps, the account's name in /v1/usage, and the seal of a
 * cursor in a Link (it binds the cursor to the account).
 */
const masked = (raw: string) =>
  raw
    .replace(/^(Date|RateLimit-Reset|Rowbase-Seq): .*$/gim, '$1: …')
    // A row's version names its collection by its internal id, which differs between the two databases.
    .replace(/^ETag: "\d+\./gim, 'ETag: "….')
    .replace(/(after=[A-Za-z0-9_-]*\.)[A-Za-z0-9_-]+/g, '$1…')
    .replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z/g, '…')
    .replace(/"account":"[^"]*"/, '"account":…');
