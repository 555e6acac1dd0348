// The access log (LOG_REQUESTS=on; docs/operations.md, "The access log"): one JSON line per request with
// its id, method, route template, status, duration, bytes and account; never a key, a query value, a body.
import { Writable } from 'node:stream';
import { expect } from 'chai';
import { configFromEnv } from '../../src/config.ts';
import { createLogger } from '../../src/log.ts';
import { type BackendName, describeEachBackend } from '../support/backends.ts';
import { eventually } from '../support/changes.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

/** A server of `backend` with `logRequests`, logging at info to a list of lines. */
async function loggedServer(backend: BackendName, logRequests: boolean) {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      lines.push(chunk.toString());
      done();
    },
  });
  const server = await startTestServer({ logRequests }, { backend, log: createLogger('info', sink) });
  const logged = () =>
    lines
      .join('')
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as Record<string, unknown>);
  return { server, text: () => lines.join(''), requests: () => logged().filter((entry) => entry.msg === 'request') };
}

describe('access log configuration', () => {
  it('is off unless LOG_REQUESTS=on', () => {
    expect(configFromEnv({}).logRequests).to.equal(false);
    expect(configFromEnv({ LOG_REQUESTS: 'on' }).logRequests).to.equal(true);
    expect(configFromEnv({ LOG_REQUESTS: 'off' }).logRequests).to.equal(false);
    expect(() => configFromEnv({ LOG_REQUESTS: 'yes' })).to.throw(/LOG_REQUESTS must be on or off/);
  });
});

describeEachBackend('the access log', (backend) => {
  let logged: Awaited<ReturnType<typeof loggedServer>>;
  let server: TestServer;

  before(async () => {
    logged = await loggedServer(backend, true);
    server = logged.server;
  });
  after(() => server.stop());

  it('has one line per request: id, method, route template, operation, status, duration, bytes and account', async () => {
    const client = await server.client();
    const principal = await server.store.findPrincipal(client.key as string);
    await client.post('/v1/collections', { name: 'ledger' });
    await client.post('/v1/collections/ledger/rows', [{ text: 'confidential-body-value' }]);
    const before = logged.requests().length;
    const read = await client.get('/v1/collections/ledger/rows/1', { headers: { 'x-request-id': 'access-1' } });
    const head = await client.request('HEAD', '/v1/collections/ledger/rows/1', { headers: { 'x-request-id': 'access-2' } });
    expect(logged.requests().length - before).to.equal(2);
    const [line] = logged.requests().filter((entry) => entry.requestId === 'access-1');
    expect(line).to.deep.include({
      level: 30,
      requestId: 'access-1',
      method: 'GET',
      route: '/v1/collections/{collection_name}/rows/{row_id}',
      operation: 'getRow',
      status: 200,
      bytes: Number(read.headers.get('content-length')),
      accountId: principal?.accountId,
    });
    expect(line.durationMs).to.be.a('number').and.above(0);
    const [headLine] = logged.requests().filter((entry) => entry.requestId === 'access-2');
    expect(headLine).to.include({ method: 'HEAD', operation: 'headRow', status: head.status, bytes: 0 });
  });

  it('never carries a key, a query value, a path as sent or a body', async () => {
    const client = await server.client();
    await client.post('/v1/collections', { name: 'secretive' });
    await client.post('/v1/collections/secretive/rows', [{ text: 'confidential-body-value' }]);
    await client.get(`/v1/collections/secretive/rows?filter=${encodeURIComponent('{"text":"query-value-never-logged"}')}&limit=7`);
    await client.get('/v1/collections/secretive/rows?limit=not-a-number');
    await client.get('/v1/collections/secretive/rows?api_key=query-key-never-logged');
    // The changes take the key and the end user's token in the query (a browser's EventSource sets no header).
    const changes = await server.anonymous().get(`/v1/collections/secretive/changes?api_key=${client.key}`);
    expect(changes.status).to.equal(200);
    await server.anonymous().get(`/v1/collections/secretive/changes?api_key=${client.key}&access_token=query-token-never-logged`);
    await server.anonymous().get('/v1/collections', { headers: { 'x-api-key': 'rb_unknownKeyNeverLogged' } });
    await client.get('/no/such/route/secretive');
    const text = logged.text();
    for (const secret of [
      client.key as string,
      'rb_unknownKeyNeverLogged',
      'query-key-never-logged',
      'query-token-never-logged',
      'query-value-never-logged',
      'confidential-body-value',
      'not-a-number',
      'secretive',
      '/no/such',
    ]) {
      expect(text, secret).not.to.include(secret);
    }
    const unknown = logged.requests().find((entry) => entry.operation === 'none' && entry.status === 404);
    expect(unknown, 'an unknown route is logged without its path').to.include({ route: null });
  });

  it('notes a long poll that waited once it is answered: its status, bytes and the time it waited', async () => {
    const client = await server.client();
    await client.post('/v1/collections', { name: 'polled' });
    // The clock of the server's own duration, to the fraction of a millisecond: Date.now() cut to whole
    // milliseconds read 12 where the line said 12.172.
    const startedAt = performance.now();
    const poll = client.get('/v1/collections/polled/changes?wait=30', { headers: { 'x-request-id': 'access-poll' } });
    await eventually(() => server.feed.waitingPolls > 0, 'the poll to wait');
    const waitingAt = performance.now();
    expect(
      logged.requests().filter((entry) => entry.requestId === 'access-poll'),
      'not while it waits',
    ).to.deep.equal([]);
    const writtenAt = performance.now();
    expect((await client.post('/v1/collections/polled/rows', [{ n: 1 }])).status).to.equal(201);
    const answer = await poll;
    const waited = performance.now() - startedAt;
    expect(answer.status).to.equal(200);
    await eventually(() => logged.requests().some((entry) => entry.requestId === 'access-poll'), 'its line');
    const [line] = logged.requests().filter((entry) => entry.requestId === 'access-poll');
    expect(line).to.include({ operation: 'getChanges', status: 200, bytes: Number(answer.headers.get('content-length')) });
    expect(line.bytes).to.be.above(0);
    // From its first stage to its answer, written after the row's commit.
    expect(line.durationMs)
      .to.be.at.least(writtenAt - waitingAt)
      .and.at.most(waited);
  });

  it('is silent without LOG_REQUESTS', async () => {
    const quiet = await loggedServer(backend, false);
    try {
      const client = await quiet.server.client();
      await client.get('/v1/collections');
      await client.get('/v1/nowhere');
      expect(quiet.requests()).to.deep.equal([]);
    } finally {
      await quiet.server.stop();
    }
  });
});
