// The bytes of request bodies worked on at once (src/http/body-budget.ts, BodyBudget; docs/operations.md, "Configuration"): past
// the budget, requests wait with their bodies read but not parsed, in the order they came, and every
// request gives its share back once answered, whatever it is answered.
import { gzipSync } from 'node:zlib';
import { expect } from 'chai';
import sqlite3 from 'sqlite3';
import { BodyBudget } from '../../src/http/body-budget.ts';
import type { Client } from '../support/client.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

/** Waits, a turn of the event loop at a time, until `condition` holds (mocha's timeout ends a wait that never does). */
async function until(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((resolve) => setTimeout(resolve, 1));
}

describe('request bodies worked on at once', () => {
  describe('BodyBudget', () => {
    it('lets bodies in at once while they fit', () => {
      const budget = new BodyBudget(100);
      expect(budget.take(60)).to.equal(undefined);
      expect(budget.take(40)).to.equal(undefined);
      expect(budget.usage).to.deep.equal({ held: 100, waiting: 0 });
    });

    it('lets waiting bodies in as others give back, in the order they came', async () => {
      const budget = new BodyBudget(100);
      budget.take(80);
      const order: string[] = [];
      void budget.take(50)?.then(() => order.push('second'));
      // Small enough to fit now, but it came after one that waits: it does not overtake it.
      void budget.take(10)?.then(() => order.push('third'));
      expect(budget.usage).to.deep.equal({ held: 80, waiting: 2 });
      budget.give(80);
      await Promise.resolve();
      expect(order).to.deep.equal(['second', 'third']);
      expect(budget.usage).to.deep.equal({ held: 60, waiting: 0 });
    });

    it('lets a body larger than the whole budget in alone', async () => {
      const budget = new BodyBudget(100);
      budget.take(1);
      let inside = false;
      void budget.take(500)?.then(() => {
        inside = true;
      });
      await Promise.resolve();
      expect(inside).to.equal(false);
      budget.give(1);
      await Promise.resolve();
      expect(inside).to.equal(true);
      expect(budget.usage).to.deep.equal({ held: 500, waiting: 0 });
      expect(budget.take(1)).to.be.instanceOf(Promise);
    });
  });

  describe('in the server (a budget of one byte: every body alone)', () => {
    let server: TestServer;
    let client: Client;

    before(async () => {
      server = await startTestServer({ maxBodyBytesAtOnce: 1 });
      client = await server.client();
      expect((await client.post('/v1/collections', { name: 'notes' })).status).to.equal(201);
    });
    after(() => server.stop());

    it('makes a body wait while another is worked on, and lets requests without one through', async () => {
      // A second connection holds SQLite's write lock: the first insert is let in, then waits for it
      // (the writer's busy_timeout, 5 s).
      const file = server.databaseUrl.slice('sqlite:'.length);
      const locker = new sqlite3.Database(file);
      await new Promise<void>((resolve, reject) => locker.exec('begin immediate', (error) => (error ? reject(error) : resolve())));
      try {
        const first = client.post('/v1/collections/notes/rows', [{ n: 1 }]);
        await until(() => server.bodies.usage.held > 0);
        const second = client.post('/v1/collections/notes/rows', [{ n: 2 }]);
        await until(() => server.bodies.usage.waiting === 1);
        // A page of rows: read on a read-only connection, beside the writer that waits.
        expect((await client.get('/v1/collections/notes/rows')).status).to.equal(200);
        expect(server.bodies.usage.waiting).to.equal(1);
        await new Promise<void>((resolve, reject) => locker.exec('commit', (error) => (error ? reject(error) : resolve())));
        const [a, b] = await Promise.all([first, second]);
        expect([a.status, b.status]).to.deep.equal([201, 201]);
        expect([a.body, b.body]).to.deep.equal([[{ id: 1, n: 1 }], [{ id: 2, n: 2 }]]);
      } finally {
        await new Promise<void>((resolve) => locker.close(() => resolve()));
      }
      expect(server.bodies.usage).to.deep.equal({ held: 0, waiting: 0 });
    });

    const deep = `[${'['.repeat(70)}${']'.repeat(70)}]`;
    const refusals: {
      name: string;
      method: string;
      path: string;
      body: string | Buffer;
      headers?: Record<string, string>;
      status: number;
    }[] = [
      { name: 'a body that is not JSON', method: 'POST', path: '/v1/collections/notes/rows', body: '[{', status: 400 },
      { name: 'a body nested too deep', method: 'POST', path: '/v1/collections/notes/rows', body: deep, status: 400 },
      {
        name: 'a body that is not UTF-8',
        method: 'POST',
        path: '/v1/collections/notes/rows',
        body: Buffer.from([0x5b, 0xff, 0x5d]),
        status: 400,
      },
      {
        name: 'a body that is not gzip as it says',
        method: 'POST',
        path: '/v1/collections/notes/rows',
        body: '[]',
        headers: { 'content-encoding': 'gzip' },
        status: 400,
      },
      { name: 'a row that carries an id', method: 'POST', path: '/v1/collections/notes/rows', body: '[{"id":1}]', status: 400 },
      { name: 'an insert into no collection', method: 'POST', path: '/v1/collections/none/rows', body: '[{"n":1}]', status: 404 },
      { name: 'a patch of no row', method: 'PATCH', path: '/v1/collections/notes/rows/999', body: '{"n":1}', status: 404 },
      {
        name: 'a body over the size limit',
        method: 'POST',
        path: '/v1/collections/notes/rows',
        body: `[${'1,'.repeat(600_000)}1]`,
        status: 413,
      },
      // A Content-Type that is read apart, refused and answered.
      {
        name: 'an insert into no collection, with a Content-Type read apart',
        method: 'POST',
        path: '/v1/collections/none/rows',
        body: '[{"n":1}]',
        headers: { 'content-type': 'Application/JSON' },
        status: 404,
      },
      {
        name: 'an insert on Koa’s path',
        method: 'POST',
        path: '/v1/collections/notes/rows',
        body: '[{"n":3}]',
        headers: { 'content-type': 'Application/JSON' },
        status: 201,
      },
      {
        name: 'a gzipped insert',
        method: 'POST',
        path: '/v1/collections/notes/rows',
        body: gzipSync('[{"n":4}]'),
        headers: { 'content-encoding': 'gzip' },
        status: 201,
      },
    ];
    for (const { name, method, path, body, headers, status } of refusals) {
      it(`gives its share back after ${name} (${status})`, async () => {
        const response = await client.request(method, path, { raw: body, headers: { 'content-type': 'application/json', ...headers } });
        expect(response.status).to.equal(status);
        expect(server.bodies.usage).to.deep.equal({ held: 0, waiting: 0 });
      });
    }
  });
});
