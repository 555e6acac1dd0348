// Subscriptions with `filter` (asyncapi.yaml, "Filtered subscriptions"), and the row before each update
// that every subscriber gets (`previous`): which messages a filtered subscriber receives, live and
// replayed, and the 400 an invalid filter gets before the upgrade, the same as the HTTP API's.
import { expect } from 'chai';
import { describeEachBackend } from '../support/backends.ts';
import type { Client } from '../support/client.ts';
import { FeedClient, type FeedMessage, type FeedRow, range, refusal, seqs } from '../support/feed.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

const OPEN = JSON.stringify({ status: 'open' });

/** A message without its time, which no test can know. */
const timeless = (message: FeedMessage) => {
  const { at, ...rest } = message as FeedMessage & { at?: string };
  return rest;
};

describeEachBackend('filtered subscriptions', (backend) => {
  let server: TestServer;
  let client: Client;
  let collections = 0;
  const collection = async (rows: Record<string, unknown>[] = []) => {
    const name = `c${++collections}`;
    await client.post('/v1/collections', { name });
    if (rows.length > 0) await client.post(`/v1/collections/${name}/rows`, rows);
    return name;
  };
  const open = (name: string, query: Record<string, string | number> = {}) =>
    FeedClient.open(server.url, client.key, { collection: name, ...query });
  const patch = (name: string, id: number, fields: Record<string, unknown>) =>
    client.patch<FeedRow>(`/v1/collections/${name}/rows/${id}`, fields);
  const row = async (name: string, id: number) => (await client.get<FeedRow>(`/v1/collections/${name}/rows/${id}`)).body;

  before(async () => {
    server = await startTestServer({}, { backend });
    client = await server.client();
  });
  after(() => server.stop());

  describe('live', () => {
    it('send an insert only when its row matches, so that seq has gaps where the others were', async () => {
      const name = await collection();
      const feed = await open(name, { filter: OPEN });
      const everything = await open(name);
      await client.post(`/v1/collections/${name}/rows`, [{ status: 'open' }, { status: 'closed' }, { n: 1 }, { status: 'open', n: 2 }]);
      await everything.seqReached(4);
      const messages = await feed.changesCount(2);
      expect(messages.map(timeless)).to.deep.equal([
        { type: 'insert', collection: name, seq: 1, row: { id: 1, status: 'open' } },
        { type: 'insert', collection: name, seq: 4, row: { id: 4, status: 'open', n: 2 } },
      ]);
      await Promise.all([feed.close(), everything.close()]);
    });

    it('send an update when the row matches before or after it, with matches false once it left, and none outside', async () => {
      const name = await collection([
        { status: 'open', n: 1 },
        { status: 'closed', n: 2 },
      ]);
      const feed = await open(name, { filter: OPEN });
      const everything = await open(name);
      await patch(name, 2, { status: 'open' }); // seq 3: enters
      await patch(name, 1, { n: 10 }); // seq 4: stays in
      await patch(name, 1, { status: 'closed' }); // seq 5: leaves
      await patch(name, 1, { n: 11 }); // seq 6: stays out
      await patch(name, 2, { n: 20 }); // seq 7: stays in
      await everything.seqReached(7);
      const messages = await feed.seqReached(7);
      expect(messages.map(timeless)).to.deep.equal([
        { type: 'update', collection: name, seq: 3, row: { id: 2, status: 'open', n: 2 }, previous: { id: 2, status: 'closed', n: 2 } },
        { type: 'update', collection: name, seq: 4, row: { id: 1, status: 'open', n: 10 }, previous: { id: 1, status: 'open', n: 1 } },
        {
          type: 'update',
          collection: name,
          seq: 5,
          row: { id: 1, status: 'closed', n: 10 },
          previous: { id: 1, status: 'open', n: 10 },
          matches: false,
        },
        { type: 'update', collection: name, seq: 7, row: { id: 2, status: 'open', n: 20 }, previous: { id: 2, status: 'open', n: 2 } },
      ]);
      // Unfiltered, the same changes come without `matches`, and the row that left is followed still.
      expect(everything.changes.map((message) => ('matches' in message ? message.matches : undefined))).to.deep.equal(
        Array(5).fill(undefined),
      );
      expect(seqs(everything.changes)).to.deep.equal(range(3, 7));
      await Promise.all([feed.close(), everything.close()]);
    });

    it('send a delete only of a row that matched', async () => {
      const name = await collection([{ status: 'open' }, { status: 'closed' }, { status: 'open' }]);
      const feed = await open(name, { filter: OPEN });
      const everything = await open(name);
      await client.delete(`/v1/collections/${name}/rows/2`);
      await client.delete(`/v1/collections/${name}/rows/3`);
      await everything.seqReached(5);
      expect((await feed.seqReached(5)).map(timeless)).to.deep.equal([
        { type: 'delete', collection: name, seq: 5, row: { id: 3, status: 'open' } },
      ]);
      await Promise.all([feed.close(), everything.close()]);
    });

    it('test nested fields, operators and $or as lists do, and keep to the chosen kinds', async () => {
      const name = await collection();
      const filter = JSON.stringify({ $or: [{ 'owner.name': { $prefix: 'a' } }, { tags: { $contains: 'x' } }] });
      const feed = await open(name, { filter, events: 'insert,delete' });
      const everything = await open(name);
      await client.post(`/v1/collections/${name}/rows`, [
        { owner: { name: 'ann' } },
        { owner: { name: 'bob' } },
        { owner: 'ann' },
        { tags: ['y', 'x'] },
        { tags: 'x' },
      ]);
      await patch(name, 1, { owner: { name: 'al' } });
      await client.delete(`/v1/collections/${name}/rows/4`);
      await client.delete(`/v1/collections/${name}/rows/5`);
      await everything.seqReached(8);
      expect((await feed.seqReached(7)).map((message) => [message.type, seqs([message])[0]])).to.deep.equal([
        ['insert', 1],
        ['insert', 4],
        ['delete', 7],
      ]);
      await Promise.all([feed.close(), everything.close()]);
    });
  });

  describe('previous', () => {
    it('is the whole row before the change on every update to an unfiltered subscriber, however the patch is made', async () => {
      const name = await collection([{ text: 'a', nested: { x: 1 } }]);
      const feed = await open(name);
      // Field by field; a name no JSON path spells; more fields than a statement sets by path.
      const patches = [
        { text: 'b' },
        { 'quo"te': 1, nested: { y: 2 } },
        Object.fromEntries(range(1, 20).map((n) => [`f${n}`, n])),
        { text: null },
      ];
      const before: FeedRow[] = [];
      const after: FeedRow[] = [];
      for (const fields of patches) {
        before.push(await row(name, 1));
        const patched = await patch(name, 1, fields);
        expect(patched.status, patched.text).to.equal(200);
        after.push(patched.body);
      }
      const messages = await feed.changesCount(patches.length);
      expect(messages.map((message) => message.type)).to.deep.equal(Array(patches.length).fill('update'));
      expect(messages.map((message) => ('row' in message ? message.row : undefined))).to.deep.equal(after);
      expect(messages.map((message) => ('previous' in message ? message.previous : undefined))).to.deep.equal(before);
      await feed.close();
    });

    it('is left out of an update stored without it, which a filtered subscriber gets as leaving when its row does not match', async () => {
      const name = await collection([{ status: 'open' }, { status: 'open' }, { status: 'closed' }]);
      await patch(name, 1, { status: 'closed' }); // seq 4
      await patch(name, 2, { n: 1 }); // seq 5
      await patch(name, 3, { n: 1 }); // seq 6
      // As the events of a version that kept no previous (before migration 0009_event_previous) are.
      const { id } = await server.store.knex('collections').where({ name }).first('id');
      await server.store.knex('events').where({ collection_id: id }).update({ previous: null });
      const feed = await open(name, { filter: OPEN, since: 3 });
      const everything = await open(name, { since: 3 });
      expect((await feed.changesCount(3)).map((message) => [seqs([message])[0], (message as { matches?: boolean }).matches])).to.deep.equal(
        [
          [4, false],
          [5, undefined],
          [6, false],
        ],
      );
      const unfiltered = await everything.changesCount(3);
      expect(unfiltered.some((message) => 'previous' in message || 'matches' in message)).to.equal(false);
      await Promise.all([feed.close(), everything.close()]);
    });
  });

  describe('resumed with since', () => {
    it('replays only what the filter lets through, as live, then goes on live', async () => {
      const name = await collection();
      const live = await open(name, { filter: OPEN });
      const everything = await open(name);
      await client.post(`/v1/collections/${name}/rows`, [{ status: 'open' }, { status: 'closed' }, { status: 'open' }]);
      await patch(name, 2, { status: 'open' });
      await patch(name, 1, { status: 'closed' });
      await patch(name, 1, { n: 1 });
      await client.delete(`/v1/collections/${name}/rows/3`);
      await client.delete(`/v1/collections/${name}/rows/1`);
      await everything.seqReached(8);
      const liveMessages = await live.seqReached(7);

      const resumed = await open(name, { filter: OPEN, since: 0 });
      expect(resumed.ready.seq).to.equal(8);
      await client.post(`/v1/collections/${name}/rows`, [{ status: 'open' }]);
      await everything.seqReached(9);
      await live.seqReached(9);
      const replayed = await resumed.seqReached(9);
      expect(replayed).to.deep.equal(live.changes);
      expect(seqs(liveMessages)).to.deep.equal([1, 3, 4, 5, 7]);
      const halfway = await open(name, { filter: OPEN, since: 4 });
      expect(await halfway.seqReached(9)).to.deep.equal(live.changes.slice(3));
      await Promise.all([live.close(), everything.close(), resumed.close(), halfway.close()]);
    });
  });

  describe('refuses before the upgrade, as GET …/rows refuses the same filter', () => {
    const cases: [string, string][] = [
      ['JSON that does not parse', '{"status":'],
      ['an array', '["status"]'],
      ['an unknown operator', '{"n":{"$gte":1,"$near":2}}'],
      ['an operand of the wrong type', '{"n":{"$in":3},"$or":[]}'],
      ['a bad path', '{"a..b":1}'],
      ['too many conditions', JSON.stringify(Object.fromEntries(range(1, 33).map((n) => [`f${n}`, n])))],
      ['a text over 4 KiB', JSON.stringify({ text: 'x'.repeat(4100) })],
    ];
    for (const [what, filter] of cases) {
      it(`400 validation_failed for ${what}, its errors pointing into the filter`, async () => {
        const name = await collection();
        const refused = await refusal(server.url, client.key, { collection: name, filter });
        const listed = await client.get<{ errors: unknown[] }>(`/v1/collections/${name}/rows?${new URLSearchParams({ filter })}`);
        expect(refused.status).to.equal(400);
        expect(refused.problem.code).to.equal('validation_failed');
        expect(listed.status).to.equal(400);
        expect(refused.problem.errors).to.deep.equal(listed.body.errors);
        for (const error of refused.problem.errors ?? []) expect(error).to.include({ in: 'query', name: 'filter' });
      });
    }

    it('400 with every error of the query at once, the filter among them', async () => {
      const name = await collection();
      const refused = await refusal(server.url, client.key, { collection: name, filter: 'x'.repeat(4097), events: 'upsert' });
      expect(refused.problem.errors?.map((error) => error.name).sort()).to.deep.equal(['events', 'filter']);
    });

    it('400 for an invalid filter even of a collection that does not exist: the query is checked first', async () => {
      const refused = await refusal(server.url, client.key, { collection: 'absent', filter: '{"$nope":1}' });
      expect(refused.status).to.equal(400);
      expect(refused.problem.errors).to.deep.equal([
        {
          in: 'query',
          name: 'filter',
          pointer: '/$nope',
          message: 'is not an operator of a filter: $and, $or, $not, $search, or a field path',
        },
      ]);
    });
  });
});
