// The feed held to a collection's rules (asyncapi.yaml, "Rules"; docs/access.md, "The feed"): with a
// publishable key, each end user receives exactly the changes of the rows their read rule grants them,
// never a field hidden from them, a row given away as the leave message, replays by the same rule; the
// upgrade is refused as the HTTP API refuses a read; the socket lives as long as the token and the rules
// that admitted it.
import { expect } from 'chai';
import WebSocket from 'ws';
import { openStore } from '../../src/db/open-store.ts';
import { describeEachBackend } from '../support/backends.ts';
import type { Client } from '../support/client.ts';
import { appKey, EndUser, tokenOf } from '../support/end-users.ts';
import { applyToView, FeedClient, type FeedMessage, type FeedRow, feedUrl, type OpenOptions, refusal, refusalOf } from '../support/feed.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

const mine = { owner: { $auth: 'sub' } };
const RULES = { read: mine, create: mine, update: mine, delete: mine, fields: { internal: { read: false, write: false } } };

type Change = Extract<FeedMessage, { type: 'insert' | 'update' | 'delete' }>;

/** The change messages among `messages`. */
const changesOf = (messages: FeedMessage[]) => messages.filter((message): message is Change => 'row' in message);
/** A change without its time, which no test can know. */
const timeless = ({ at: _, ...change }: Change) => change;
/** A row without the field the rules hide. */
const withoutInternal = ({ internal: _, ...row }: FeedRow): FeedRow => row;

/**
 * What a user who owns the rows of `owner` should get of the changes an unbound subscriber got: the
 * changes of their rows (an update of a row they owned before or after it), without the hidden field.
 */
function expectedFor(owner: string, everything: Change[]): Change[] {
  return everything.flatMap((message): Change[] => {
    const ownsAfter = message.row.owner === owner;
    if (message.type !== 'update') return ownsAfter ? [{ ...message, row: withoutInternal(message.row) }] : [];
    const ownedBefore = message.previous?.owner === owner;
    if (!ownsAfter && !ownedBefore) return [];
    const shown: Change = { ...message, row: ownsAfter ? withoutInternal(message.row) : { id: message.row.id } };
    if (message.previous) shown.previous = ownedBefore ? withoutInternal(message.previous) : { id: message.previous.id };
    if (!ownsAfter) shown.matches = false;
    return [shown];
  });
}

describeEachBackend('the feed held to rules', (backend) => {
  let server: TestServer;
  let admin: Client;
  let key: string;
  let adaToken: string;
  let bobToken: string;
  let collections = 0;

  /** A collection with `rules` (default RULES; null: none) and `rows`; its name. */
  async function collection(rows: Record<string, unknown>[] = [], rules: object | null = RULES): Promise<string> {
    const name = `notes${++collections}`;
    expect((await admin.post('/v1/collections', { name })).status).to.equal(201);
    if (rules) expect((await admin.put(`/v1/collections/${name}/rules`, rules)).status).to.equal(200);
    if (rows.length > 0) expect((await admin.post(`/v1/collections/${name}/rows`, rows)).status).to.equal(201);
    return name;
  }
  /** A feed of `name` with the publishable key and `token` in access_token (none: anonymous). */
  const subscribe = (name: string, token?: string, query: Record<string, string | number> = {}, options: OpenOptions = {}) =>
    FeedClient.open(server.url, key, { collection: name, access_token: token, ...query }, options);
  const lastSeq = (messages: FeedMessage[]) => Math.max(0, ...changesOf(messages).map((message) => message.seq));

  before(async () => {
    server = await startTestServer({}, { backend });
    admin = await server.client();
    key = await appKey(admin);
    adaToken = await tokenOf('ada');
    bobToken = await tokenOf('bob');
  });
  after(() => server.stop());

  describe('two users on one collection', () => {
    it('each receive exactly the changes of their own rows, inserted, updated and deleted, never the hidden field', async () => {
      const name = await collection();
      const everything = await FeedClient.open(server.url, admin.key, { collection: name });
      const [ada, bob] = await Promise.all([subscribe(name, adaToken), subscribe(name, bobToken)]);
      const users = { ada: new EndUser(server.url, key, adaToken), bob: new EndUser(server.url, key, bobToken) };
      // Their own writes and the admin's, interleaved.
      const seeded = Array.from({ length: 8 }, (_, n) => ({ owner: n % 2 === 0 ? 'ada' : 'bob', n, internal: `secret ${n}` }));
      const made = await admin.post<FeedRow[]>(`/v1/collections/${name}/rows`, seeded);
      await Promise.all([
        users.ada.post(`/v1/collections/${name}/rows`, [{ owner: 'ada', n: 100 }]),
        users.bob.post(`/v1/collections/${name}/rows`, [{ owner: 'bob', n: 200 }]),
      ]);
      for (const row of made.body)
        await admin.patch(`/v1/collections/${name}/rows/${row.id}`, { n: (row.n as number) + 10, internal: 'changed' });
      await users.ada.patch(`/v1/collections/${name}/rows/${made.body[0].id}`, { n: -1 });
      await users.bob.delete(`/v1/collections/${name}/rows/${made.body[1].id}`);
      await admin.delete(`/v1/collections/${name}/rows/${made.body[2].id}`);
      const total = 8 + 2 + 8 + 1 + 1 + 1;
      const all = changesOf(await everything.seqReached(total));
      for (const [feed, owner] of [
        [ada, 'ada'],
        [bob, 'bob'],
      ] as const) {
        const expected = expectedFor(owner, all);
        const got = changesOf(await feed.seqReached(lastSeq(expected)));
        expect(got).to.deep.equal(expected);
        expect(got.map((message) => message.type)).to.include.members(['insert', 'update', 'delete']);
        for (const message of got) {
          expect(message.row).not.to.have.property('internal');
          if (message.type === 'update') expect(message.previous).not.to.have.property('internal');
        }
        // Applied as asyncapi.yaml says, the messages hold exactly the rows the user reads over HTTP.
        const view = new Map<number, FeedRow>();
        for (const message of got) applyToView(view, message);
        const read = await users[owner].get<FeedRow[]>(`/v1/collections/${name}/rows`);
        expect([...view.values()].sort((a, b) => a.id - b.id)).to.deep.equal(read.body);
      }
      await Promise.all([ada, bob, everything].map((feed) => feed.close()));
    });

    it('sends a row given away as the leave message to its old owner and an update to its new one, each shown by id where they may not read it', async () => {
      const name = await collection([
        { owner: 'ada', text: 'first', internal: 'x' },
        { owner: 'ada', text: 'second', internal: 'y' },
      ]);
      const [ada, bob] = await Promise.all([subscribe(name, adaToken), subscribe(name, bobToken)]);
      await admin.patch(`/v1/collections/${name}/rows/1`, { owner: 'bob', text: 'given' });
      await admin.patch(`/v1/collections/${name}/rows/1`, { text: 'given again' });
      await admin.patch(`/v1/collections/${name}/rows/2`, { text: 'kept' });
      const [leave, kept] = changesOf(await ada.seqReached(5));
      expect(timeless(leave)).to.deep.equal({
        type: 'update',
        collection: name,
        seq: 3,
        row: { id: 1 },
        previous: { id: 1, owner: 'ada', text: 'first' },
        matches: false,
      });
      expect(kept).to.deep.include({ seq: 5, row: { id: 2, owner: 'ada', text: 'kept' } });
      const [given, after] = changesOf(await bob.seqReached(4));
      expect(timeless(given)).to.deep.equal({
        type: 'update',
        collection: name,
        seq: 3,
        row: { id: 1, owner: 'bob', text: 'given' },
        previous: { id: 1 },
      });
      expect(after).to.deep.include({ seq: 4, row: { id: 1, owner: 'bob', text: 'given again' } });
      expect(changesOf(bob.messages).map((message) => message.seq)).to.deep.equal([3, 4]);
      await Promise.all([ada.close(), bob.close()]);
    });

    it('masks a field whose read rule holds on some rows only, row by row', async () => {
      const name = await collection([], { read: true, fields: { email: { read: mine } } });
      const [ada, bob] = await Promise.all([subscribe(name, adaToken), subscribe(name, bobToken)]);
      await admin.post(`/v1/collections/${name}/rows`, [
        { owner: 'ada', email: 'ada@example.com' },
        { owner: 'bob', email: 'bob@example.com' },
      ]);
      await admin.patch(`/v1/collections/${name}/rows/1`, { owner: 'bob' });
      const rowsOf = async (feed: FeedClient) =>
        changesOf(await feed.seqReached(3)).map((message) => ({
          type: message.type,
          row: message.row,
          previous: message.type === 'update' ? message.previous : undefined,
        }));
      expect(await rowsOf(ada)).to.deep.equal([
        { type: 'insert', row: { id: 1, owner: 'ada', email: 'ada@example.com' }, previous: undefined },
        { type: 'insert', row: { id: 2, owner: 'bob' }, previous: undefined },
        { type: 'update', row: { id: 1, owner: 'bob' }, previous: { id: 1, owner: 'ada', email: 'ada@example.com' } },
      ]);
      expect(await rowsOf(bob)).to.deep.equal([
        { type: 'insert', row: { id: 1, owner: 'ada' }, previous: undefined },
        { type: 'insert', row: { id: 2, owner: 'bob', email: 'bob@example.com' }, previous: undefined },
        { type: 'update', row: { id: 1, owner: 'bob', email: 'ada@example.com' }, previous: { id: 1, owner: 'ada' } },
      ]);
      await Promise.all([ada.close(), bob.close()]);
    });

    it('replays with since by the same rule, exactly as the changes came live', async () => {
      const name = await collection([
        { owner: 'ada', n: 1, internal: 'a' },
        { owner: 'bob', n: 2, internal: 'b' },
      ]);
      const live = await subscribe(name, adaToken);
      await admin.patch(`/v1/collections/${name}/rows/1`, { owner: 'bob' });
      await admin.patch(`/v1/collections/${name}/rows/2`, { owner: 'ada' });
      await admin.delete(`/v1/collections/${name}/rows/2`);
      await admin.post(`/v1/collections/${name}/rows`, [{ owner: 'bob' }, { owner: 'ada', internal: 'c' }]);
      const seen = changesOf(await live.seqReached(7));
      const replayed = await subscribe(name, adaToken, { since: 0 });
      expect(changesOf(await replayed.seqReached(7))).to.deep.equal([
        { type: 'insert', collection: name, seq: 1, at: changesOf(replayed.messages)[0].at, row: { id: 1, owner: 'ada', n: 1 } },
        ...seen,
      ]);
      await Promise.all([live.close(), replayed.close()]);
    });
  });

  describe('an anonymous caller', () => {
    it('receives what the rules grant without a token, and is refused a rule naming a claim, 403 saying so', async () => {
      const name = await collection([], { read: { public: true }, fields: { internal: { read: 'authenticated' } } });
      const anonymous = await subscribe(name);
      const ada = await subscribe(name, adaToken);
      const owned = await collection([], RULES);
      const nobody = await refusal(server.url, key, { collection: owned });
      expect(nobody.status).to.equal(403);
      expect(nobody.problem.detail).to.include('read: denied to anonymous callers: it names the claim sub, and the caller has no token');
      await admin.post(`/v1/collections/${name}/rows`, [
        { public: true, internal: 'i' },
        { public: false, internal: 'j' },
        { public: true, internal: 'k' },
      ]);
      const rows = async (feed: FeedClient) => changesOf(await feed.seqReached(3)).map((message) => message.row);
      expect(await rows(anonymous)).to.deep.equal([
        { id: 1, public: true },
        { id: 3, public: true },
      ]);
      expect(await rows(ada)).to.deep.equal([
        { id: 1, public: true, internal: 'i' },
        { id: 3, public: true, internal: 'k' },
      ]);
      await Promise.all([anonymous, ada].map((feed) => feed.close()));
    });
  });

  describe('the upgrade', () => {
    it('takes the token in Authorization beside the key in x-api-key, and a page of one of the key’s origins', async () => {
      const name = await collection([{ owner: 'ada' }, { owner: 'bob' }]);
      const viaHeaders = await FeedClient.open(
        server.url,
        undefined,
        { collection: name, since: 0 },
        { headers: { 'x-api-key': key, authorization: `Bearer ${adaToken}` } },
      );
      const fromPage = await subscribe(name, bobToken, { since: 0 }, { headers: { origin: 'https://app.example' } });
      expect(changesOf(await viaHeaders.seqReached(1)).map((message) => message.row.owner)).to.deep.equal(['ada']);
      expect(changesOf(await fromPage.seqReached(2)).map((message) => message.row.owner)).to.deep.equal(['bob']);
      await Promise.all([viaHeaders.close(), fromPage.close()]);
    });

    const usage = async () => (await admin.get<{ used: number }>('/v1/usage')).body.used;

    it('refuses a token that does not verify with 401 invalid_token, and a page of another origin with 403 origin_not_allowed, neither counted', async () => {
      const name = await collection();
      const refusals = [
        await refusal(server.url, key, { collection: name, access_token: 'not.a.jwt' }),
        await refusal(server.url, key, { collection: name, access_token: await tokenOf('ada', { audience: 'another app' }) }),
        await refusal(server.url, key, { collection: name, access_token: await tokenOf('ada', { seconds: -120 }) }),
        await refusal(
          server.url,
          key,
          { collection: name, access_token: adaToken },
          { headers: { 'x-api-key': key, authorization: `Bearer ${bobToken}` } },
        ),
      ];
      const before = await usage();
      for (const refused of refusals) {
        expect(refused.status).to.equal(401);
        expect(refused.problem.code).to.equal('invalid_token');
        expect(refused.headers['www-authenticate']).to.equal('Bearer realm="rowbase", error="invalid_token"');
      }
      expect(refusals.map((refused) => refused.problem.detail)).to.deep.equal([
        'The token is no JWT.',
        'The token is for another audience.',
        'The token has expired.',
        'The token in access_token differs from the one in Authorization.',
      ]);
      const origin = await refusal(
        server.url,
        key,
        { collection: name, access_token: adaToken },
        { headers: { origin: 'https://evil.example' } },
      );
      expect(origin.status).to.equal(403);
      expect(origin.problem.code).to.equal('origin_not_allowed');
      await refusal(server.url, key, { collection: name, access_token: 'not.a.jwt' });
      expect(await usage(), 'neither is counted').to.equal(before + 1);
    });

    it('refuses access_token given twice with 401, even the same token, and beside a secret key with 400', async () => {
      const name = await collection();
      const twice = await refusalOf(
        new WebSocket(`${feedUrl(server.url, key, { collection: name, access_token: adaToken })}&access_token=${adaToken}`),
      );
      expect(twice.status).to.equal(401);
      expect(twice.problem).to.deep.include({ code: 'invalid_token', detail: 'access_token is given more than once.' });
      const secret = await refusal(server.url, admin.key, { collection: name, access_token: adaToken });
      expect(secret.status).to.equal(400);
      expect(secret.problem.errors).to.deep.equal([
        { in: 'query', name: 'access_token', message: 'is taken only beside a publishable key' },
      ]);
    });

    it('refuses with 403, counted, where the rules grant no read at all and a filter naming a hidden field', async () => {
      const name = await collection();
      const closed = await collection([], null);
      const members = await collection([], { read: 'authenticated' });
      const before = await usage();
      const noRules = await refusal(server.url, key, { collection: closed, access_token: adaToken });
      expect(noRules.status).to.equal(403);
      expect(noRules.problem.code).to.equal('forbidden');
      expect(noRules.problem.detail).to.include('read: false');
      const anonymous = await refusal(server.url, key, { collection: members });
      expect(anonymous.status).to.equal(403);
      expect(anonymous.problem.detail).to.include('read');
      const hidden = await refusal(server.url, key, {
        collection: name,
        access_token: adaToken,
        filter: JSON.stringify({ internal: 'x' }),
      });
      expect(hidden.status).to.equal(403);
      expect(hidden.problem.detail).to.include('internal');
      expect(hidden.problem.errors).to.deep.equal([{ in: 'query', name: 'filter', message: 'names field internal, which the rules hide' }]);
      expect(await usage()).to.equal(before + 3 + 1);
    });
  });

  describe('while subscribed', () => {
    it('closes the socket with 4401 token expired once the token is refused as expired: its exp and the 60 s of skew', async () => {
      const name = await collection();
      // Past its exp, but within the skew: accepted, and refused some 3 s from now.
      const token = await tokenOf('ada', { seconds: -57 });
      const refusedAt = (JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString()).exp + 60) * 1000;
      const feed = await subscribe(name, token);
      await admin.post(`/v1/collections/${name}/rows`, [{ owner: 'ada' }]);
      expect((await feed.changesCount(1)).length).to.equal(1);
      const closed = await feed.closing(6000);
      const closedAt = Date.now();
      expect(closed).to.deep.equal({ code: 4401, reason: 'token expired' });
      expect(closedAt).to.be.at.least(refusedAt);
      expect(closedAt - refusedAt).to.be.below(1000);
      const again = await refusal(server.url, key, { collection: name, access_token: token });
      expect(again.problem.detail).to.equal('The token has expired.');
    });

    it('takes rules changed on this instance at once, and on another within a second', async () => {
      const name = await collection();
      const ada = await subscribe(name, adaToken);
      /** Writes a row of bob's and then one of ada's, and answers whether ada was sent bob's. */
      const seesBob = async () => {
        const made = await admin.post<FeedRow[]>(`/v1/collections/${name}/rows`, [{ owner: 'bob' }, { owner: 'ada' }]);
        const [bobs, adas] = made.body.map((row) => row.id);
        await ada.until(() => changesOf(ada.messages).some((message) => message.row.id === adas), `row ${adas}`);
        return changesOf(ada.messages).some((message) => message.row.id === bobs);
      };
      expect(await seesBob()).to.equal(false);
      expect((await admin.put(`/v1/collections/${name}/rules`, { ...RULES, read: true })).status).to.equal(200);
      expect(await seesBob(), 'at once on this instance').to.equal(true);

      expect((await admin.put(`/v1/collections/${name}/rules`, RULES)).status).to.equal(200);
      expect(await seesBob()).to.equal(false);
      const principal = await server.store.findPrincipal(key);
      const other = await openStore(server.databaseUrl);
      try {
        await other.putRules(principal?.accountId as number, name, { ...RULES, read: true });
        const changedAt = Date.now();
        while (!(await seesBob())) expect(Date.now() - changedAt, 'within a second').to.be.below(1000);
      } finally {
        await other.close();
      }
      await ada.close();
    });

    it('closes with 4403 rules changed once the rules refuse the subscription, and the next upgrade is refused 403', async () => {
      const name = await collection();
      const filtered = await subscribe(name, adaToken, { filter: JSON.stringify({ kind: 'a' }) });
      const plain = await subscribe(name, adaToken);
      expect((await admin.put(`/v1/collections/${name}/rules`, { ...RULES, fields: { kind: { read: false } } })).status).to.equal(200);
      await admin.post(`/v1/collections/${name}/rows`, [{ owner: 'ada', kind: 'a' }]);
      expect(await filtered.closing()).to.deep.equal({ code: 4403, reason: 'rules changed' });
      expect(changesOf(await plain.changesCount(1))[0].row).to.deep.equal({ id: 1, owner: 'ada' });
      expect(filtered.changes).to.deep.equal([]);
      expect((await admin.delete(`/v1/collections/${name}/rules`)).status).to.equal(204);
      await admin.post(`/v1/collections/${name}/rows`, [{ owner: 'ada' }]);
      expect(await plain.closing()).to.deep.equal({ code: 4403, reason: 'rules changed' });
      expect(plain.changes).to.have.length(1);
      const refused = await refusal(server.url, key, { collection: name, access_token: adaToken });
      expect(refused.status).to.equal(403);
    });

    it('closes the sockets of a revoked publishable key with 4401 key revoked', async () => {
      const name = await collection();
      const open = await collection([], { read: true });
      const revoked = await appKey(admin);
      const feeds = await Promise.all([
        FeedClient.open(server.url, revoked, { collection: name, access_token: adaToken }),
        FeedClient.open(server.url, revoked, { collection: open }),
      ]);
      const other = await subscribe(name, adaToken);
      await server.store.revokeKey(revoked.slice(0, 15));
      for (const feed of feeds) expect(await feed.closing(2000)).to.deep.equal({ code: 4401, reason: 'key revoked' });
      await admin.post(`/v1/collections/${name}/rows`, [{ owner: 'ada' }]);
      expect(changesOf(await other.changesCount(1))).to.have.length(1);
      await other.close();
    });
  });
});

describeEachBackend('the feed of an issuer deleted while subscribed', (backend) => {
  it('closes the sockets of its tokens with 4401 token refused within a second, and keeps anonymous ones', async () => {
    const server = await startTestServer({}, { backend });
    try {
      const admin = await server.client();
      const key = await appKey(admin);
      await admin.post('/v1/collections', { name: 'notes' });
      await admin.put('/v1/collections/notes/rules', { read: true });
      const [user, anonymous] = await Promise.all([
        FeedClient.open(server.url, key, { collection: 'notes', access_token: await tokenOf('ada') }),
        FeedClient.open(server.url, key, { collection: 'notes' }),
      ]);
      const principal = await server.store.findPrincipal(key);
      // Another instance deletes it: this one reads the account's issuers again.
      const other = await openStore(server.databaseUrl);
      try {
        expect(await other.deleteIssuer(principal?.accountId as number, 'app')).to.equal(true);
      } finally {
        await other.close();
      }
      const deletedAt = Date.now();
      expect(await user.closing(2000)).to.deep.equal({ code: 4401, reason: 'token refused' });
      expect(Date.now() - deletedAt).to.be.below(1000);
      await admin.post('/v1/collections/notes/rows', [{ n: 1 }]);
      expect(changesOf(await anonymous.changesCount(1))).to.have.length(1);
      await anonymous.close();
    } finally {
      await server.stop();
    }
  });
});
