// A declaration planned, applied and pulled against a real store (src/declarations/plan.ts), on both
// backends: what the API made pulls into a declaration that plans as no change; a declaration applied
// twice plans as no change the second time; apply is all or none, and refuses a plan the account drifted from.
import { readFile } from 'node:fs/promises';
import { expect } from 'chai';
import { parseDeclaration } from '../../src/declarations/format.ts';
import { applyPlan, makePlan, type PlanOptions, pullDeclaration } from '../../src/declarations/plan.ts';
import type { ApiError } from '../../src/errors.ts';
import { describeEachBackend } from '../support/backends.ts';
import type { Client } from '../support/client.ts';
import { APP_JWT_SECRET, declared } from '../support/declarations.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

const options: PlanOptions = { maxCollections: 10_000, maxWebhooks: 20, allowPrivate: true };
const noSecrets = () => undefined;

const secrets = (env: string) => (env === 'APP_JWT_SECRET' ? APP_JWT_SECRET : undefined);

describeEachBackend('declarations: plan, apply and pull', (backend) => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer({ webhooksAllowPrivate: true }, { backend });
  });
  after(() => server?.stop());

  const accountOf = async (client: Client) => (await server.store.findPrincipal(client.key as string))?.accountId as number;

  it('pulls what the API made into a declaration that plans as no change', async () => {
    const client = await server.client();
    const accountId = await accountOf(client);
    expect(
      (await client.post('/v1/collections', { name: 'people', schema: { type: 'object', properties: { email: { type: 'string' } } } }))
        .status,
    ).to.equal(201);
    expect((await client.post('/v1/collections', { name: 'posts' })).status).to.equal(201);
    expect((await client.post('/v1/collections/people/indexes', { fields: ['email'], unique: true })).status).to.equal(201);
    expect((await client.post('/v1/collections/people/indexes', { fields: ['email', 'name'], type: 'search' })).status).to.equal(201);
    const author = { field: 'author_id', collection: 'people', on_delete: 'set_null', reverse: 'posts' };
    expect((await client.put('/v1/collections/posts/relations/author', author)).status).to.equal(200);
    expect((await client.put('/v1/collections/posts/rules', { read: true, fields: { secret: { read: false } } })).status).to.equal(200);
    expect(
      (await client.put('/v1/auth/issuers/app', { issuer: 'https://i.example', audiences: ['b', 'a'], secret: 's'.repeat(32) })).status,
    ).to.equal(201);
    expect(
      (await client.post('/v1/webhooks', { url: 'http://127.0.0.1:9/a', events: ['delete', 'insert'], collections: ['posts', 'people'] }))
        .status,
    ).to.equal(201);

    const pulled = await pullDeclaration(server.store, accountId);
    // Through its text, as `rowbase pull` writes it and `rowbase plan` reads it.
    const plan = await makePlan(server.store, accountId, parseDeclaration(JSON.stringify(pulled)), noSecrets, options);
    expect(plan.changes).to.deep.equal([]);
    expect(pulled.issuers?.app.secret).to.deep.equal({ env: 'ROWBASE_ISSUER_APP_SECRET' });
  });

  it('applies a declaration to an empty account, and plans no change when applied again', async () => {
    const client = await server.client();
    const accountId = await accountOf(client);
    const declaration = parseDeclaration(declared);
    const first = await makePlan(server.store, accountId, declaration, secrets, options);
    expect(first.changes.map((change) => `${change.action} ${change.kind} ${change.object}`)).to.deep.equal([
      'create collection /collections/people',
      'create collection /collections/posts',
      'create index /collections/people/indexes/email',
      'create index /collections/people/indexes/name',
      'create search_index /collections/people/search',
      'create index /collections/posts/indexes/created,author_id',
      'create relation /collections/posts/relations/author',
      'create rules /collections/people/rules',
      'create issuer /issuers/app',
      'create webhook /webhooks/http:~1~1127.0.0.1:9~1hook',
    ]);
    await applyPlan(server.store, accountId, first, secrets, options);
    const second = await makePlan(server.store, accountId, declaration, secrets, options);
    expect(second.changes).to.deep.equal([]);
    // Without the secret's variable, the issuer keeps the secret it has.
    expect((await makePlan(server.store, accountId, declaration, noSecrets, options)).changes).to.deep.equal([]);
    expect((await client.get('/v1/collections/posts/relations/author')).body).to.include({ collection: 'people', on_delete: 'cascade' });
    expect((await client.post('/v1/collections/people/rows', [{ email: 'a@x' }, { email: 'a@x' }])).status).to.equal(409);
    // Pulled, it plans as no change too.
    const pulled = await pullDeclaration(server.store, accountId);
    expect((await makePlan(server.store, accountId, parseDeclaration(JSON.stringify(pulled)), noSecrets, options)).changes).to.deep.equal(
      [],
    );
  });

  it("declares a collection's time to live: planned with its before and after, applied in the transaction, pulled as no change", async () => {
    const client = await server.client();
    const accountId = await accountOf(client);
    const schema = {
      type: 'object',
      properties: { expires_at: { type: 'string', format: 'date-time' }, ends_at: { type: ['string', 'null'], format: 'date-time' } },
    };
    expect((await client.post('/v1/collections', { name: 'sessions', schema })).status).to.equal(201);
    expect((await client.put('/v1/collections/sessions/ttl', { field: 'expires_at' })).status).to.equal(200);
    const pulled = await pullDeclaration(server.store, accountId);
    expect(pulled.collections?.sessions.ttl).to.deep.equal({ field: 'expires_at' });
    expect((await makePlan(server.store, accountId, parseDeclaration(JSON.stringify(pulled)), noSecrets, options)).changes).to.deep.equal(
      [],
    );

    // A row whose other field is past: it expires once the time to live names that field.
    const past = '2020-01-01T00:00:00Z';
    const future = '2999-01-01T00:00:00Z';
    expect((await client.post('/v1/collections/sessions/rows', [{ expires_at: future, ends_at: past }])).status).to.equal(201);
    const sessions = (ttl: string) =>
      `collections:\n  sessions:\n    schema: ${JSON.stringify(schema)}\n${ttl}  holders:\n    relations:\n      session: {field: session_id, collection: sessions, on_delete: cascade}\n`;
    const moved = parseDeclaration(sessions('    ttl: {field: ends_at}\n'));
    const plan = await makePlan(server.store, accountId, moved, noSecrets, options);
    // It deletes that row: the plan counts it, and destroys data, which apply needs allowed.
    expect(plan.changes.find((change) => change.kind === 'ttl')).to.deep.equal({
      action: 'update',
      kind: 'ttl',
      object: '/collections/sessions/ttl',
      before: { field: 'expires_at' },
      after: { field: 'ends_at' },
      destroys_data: true,
      rows: {
        total: 1,
        violations: [{ id: 1, pointer: '/ends_at', message: 'is past: the row expires, deleted once the time to live is set' }],
      },
    });
    // The plan's reads changed nothing: the row is there, and the time to live is as it was.
    expect((await client.get('/v1/collections/sessions/rows/1')).status).to.equal(200);
    expect((await client.get('/v1/collections/sessions/ttl')).body).to.deep.equal({ field: 'expires_at' });
    const refused = await applyPlan(server.store, accountId, plan, noSecrets, options).catch((error: ApiError) => error);
    expect((refused as ApiError).status).to.equal(409);
    expect((refused as ApiError).detail).to.include('/collections/sessions/ttl');
    expect((await client.get('/v1/collections/sessions/rows/1')).status).to.equal(200);
    await applyPlan(server.store, accountId, plan, noSecrets, { ...options, allowDestructive: true });
    expect((await client.get('/v1/collections/sessions/ttl')).body).to.deep.equal({ field: 'ends_at' });
    expect((await client.get('/v1/collections/sessions/rows/1')).status).to.equal(404);
    // Applied twice, the second plan is empty; pulled, it plans as no change.
    expect((await makePlan(server.store, accountId, moved, noSecrets, options)).changes).to.deep.equal([]);
    const again = parseDeclaration(JSON.stringify(await pullDeclaration(server.store, accountId)));
    expect((await makePlan(server.store, accountId, again, noSecrets, options)).changes).to.deep.equal([]);

    // Left out, it is removed.
    const removed = await makePlan(server.store, accountId, parseDeclaration(sessions('')), noSecrets, options);
    expect(removed.changes.map((change) => [change.action, change.kind, change.object, change.after])).to.deep.equal([
      ['delete', 'ttl', '/collections/sessions/ttl', null],
    ]);
    await applyPlan(server.store, accountId, removed, noSecrets, options);
    expect((await client.get('/v1/collections/sessions/ttl')).status).to.equal(404);

    // Set again over a row past its time (the first row's is not): counted, destroying.
    const inserted = await client.post<{ id: number }[]>('/v1/collections/sessions/rows', [{ expires_at: past, ends_at: future }]);
    const set = await makePlan(server.store, accountId, parseDeclaration(sessions('    ttl: {field: expires_at}\n')), noSecrets, options);
    const ttl = set.changes.find((change) => change.kind === 'ttl');
    expect([ttl?.action, ttl?.destroys_data, ttl?.rows?.violations?.map((row) => row.id)]).to.deep.equal([
      'create',
      true,
      [inserted.body[0].id],
    ]);
  });

  it('removes a time to live before declaring a relation that restricts its rows, and sets one after the relation restricting it goes', async () => {
    const client = await server.client();
    const accountId = await accountOf(client);
    const apply = async (text: string) => {
      const plan = await makePlan(server.store, accountId, parseDeclaration(text), noSecrets, options);
      await applyPlan(server.store, accountId, plan, noSecrets, options);
      expect((await makePlan(server.store, accountId, parseDeclaration(text), noSecrets, options)).changes).to.deep.equal([]);
    };
    const holders = (onDelete: string) =>
      `  holders:\n    relations:\n      session: {field: session_id, collection: sessions, on_delete: ${onDelete}}\n`;
    await apply(`collections:\n  sessions: {}\n${holders('restrict')}`);
    await apply(`collections:\n  sessions: {ttl: {field: ends_at}}\n${holders('set_null')}`);
    expect((await client.get('/v1/collections/sessions/ttl')).body).to.deep.equal({ field: 'ends_at' });
    await apply(`collections:\n  sessions: {}\n${holders('restrict')}`);
    expect((await client.get('/v1/collections/sessions/ttl')).status).to.equal(404);
    expect((await client.get('/v1/collections/holders/relations/session')).body).to.include({ on_delete: 'restrict' });
  });

  it('applies all or nothing: a unique index over duplicates leaves the account as it was', async () => {
    const client = await server.client();
    const accountId = await accountOf(client);
    await client.post('/v1/collections', { name: 'people' });
    await client.post('/v1/collections/people/rows', [{ email: 'a' }, { email: 'a' }]);
    const plan = await makePlan(
      server.store,
      accountId,
      parseDeclaration('collections:\n  people:\n    indexes: [{fields: [email], unique: true}]\n  other: {}\n'),
      noSecrets,
      options,
    );
    const error = await applyPlan(server.store, accountId, plan, noSecrets, options).catch((caught: unknown) => caught);
    expect((error as ApiError).code).to.equal('unique_conflict');
    expect((await client.get<{ name: string }[]>('/v1/collections')).body.map((c) => c.name)).to.deep.equal(['people']);
  });

  it('refuses a plan the account has drifted from, naming what drifted, and one that destroys data unless allowed', async () => {
    const client = await server.client();
    const accountId = await accountOf(client);
    await client.post('/v1/collections', { name: 'a' });
    const plan = await makePlan(server.store, accountId, parseDeclaration('collections:\n  b: {}\n'), noSecrets, options);
    expect(plan.changes.map((change) => [change.action, change.object, change.destroys_data])).to.deep.equal([
      ['delete', '/collections/a', true],
      ['create', '/collections/b', false],
    ]);
    const refused = await applyPlan(server.store, accountId, plan, noSecrets, options).catch((caught: unknown) => caught);
    expect((refused as ApiError).status).to.equal(409);
    expect((refused as ApiError).detail).to.include('--allow-destructive');
    await client.post('/v1/collections/a/indexes', { fields: ['x'] });
    const drifted = await applyPlan(server.store, accountId, plan, noSecrets, { ...options, allowDestructive: true }).catch(
      (caught: unknown) => caught,
    );
    expect((drifted as ApiError).status).to.equal(409);
    expect((drifted as ApiError).detail).to.include('/collections/a');
    const again = await makePlan(server.store, accountId, parseDeclaration('collections:\n  b: {}\n'), noSecrets, options);
    await applyPlan(server.store, accountId, again, noSecrets, { ...options, allowDestructive: true });
    expect((await client.get<{ name: string }[]>('/v1/collections')).body.map((c) => c.name)).to.deep.equal(['b']);
  });

  it("classifies what a plan does to the account's documents: breaking or not, for a secret key and a publishable key's caller", async function () {
    // Each plan's comparison runs in a worker of its own, which loads the documents and, under tsx, the
    // modules again: 5–10 s a plan at load 15–20.
    this.timeout(180_000);
    const client = await server.client();
    const accountId = await accountOf(client);
    const documents = {
      openapi: await readFile(new URL('../../openapi.yaml', import.meta.url), 'utf8'),
      asyncapi: await readFile(new URL('../../asyncapi.yaml', import.meta.url), 'utf8'),
    };
    const withDocuments = { ...options, documents };
    const people = (schema: string) => `collections:\n  people:\n    schema: ${schema}\n    rules: {read: true}\n`;
    const optional = people('{type: object, properties: {email: {type: string}}}');
    await applyPlan(
      server.store,
      accountId,
      await makePlan(server.store, accountId, parseDeclaration(optional), noSecrets, options),
      noSecrets,
      options,
    );
    const unchanged = await makePlan(server.store, accountId, parseDeclaration(optional), noSecrets, withDocuments);
    expect(unchanged.contract?.breaking).to.equal(false);
    expect(unchanged.contract?.documents.openapi.secret).to.deep.equal([]);

    // A field made required breaks what clients send and read, in both views and both documents.
    const required = await makePlan(
      server.store,
      accountId,
      parseDeclaration(people('{type: object, required: [email], properties: {email: {type: string}}}')),
      noSecrets,
      withDocuments,
    );
    expect(required.contract?.breaking).to.equal(true);
    for (const viewer of ['secret', 'publishable'] as const) {
      expect(
        required.contract?.documents.openapi[viewer].some((change) => change.type === 'breaking'),
        viewer,
      ).to.equal(true);
    }
    expect(required.contract?.documents.asyncapi.secret.map((change) => [change.type, change.path])).to.deep.include([
      'breaking',
      '/$defs/PeopleRow/required/1',
    ]);

    // A collection added, and an optional field: nothing breaks.
    const added = await makePlan(
      server.store,
      accountId,
      parseDeclaration(`${people('{type: object, properties: {email: {type: string}, name: {type: string}}}')}  notes: {}\n`),
      noSecrets,
      withDocuments,
    );
    expect(added.contract?.breaking).to.equal(false);
    expect(added.contract?.documents.openapi.secret.length).to.be.greaterThan(0);
  });

  it('says what each change does to stored rows: the duplicates of a unique index, the rows a schema or relation refuses', async () => {
    const client = await server.client();
    const accountId = await accountOf(client);
    await client.post('/v1/collections', { name: 'people' });
    await client.post('/v1/collections', { name: 'posts' });
    await client.post('/v1/collections/people/rows', [{ email: 'a' }, { email: 'a' }, { email: 'b', age: 'old' }]);
    await client.post('/v1/collections/posts/rows', [{ author_id: 1 }, { author_id: 9 }]);
    const declaration = `collections:
  people:
    schema: {type: object, properties: {age: {type: integer}}}
    indexes: [{fields: [email], unique: true}]
  posts:
    relations:
      author: {field: author_id, collection: people}
`;
    const plan = await makePlan(server.store, accountId, parseDeclaration(declaration), noSecrets, options);
    const rows = Object.fromEntries(plan.changes.map((change) => [change.object, change.rows]));
    expect(rows['/collections/people/indexes/email']).to.deep.equal({ duplicates: [{ values: ['a'], ids: [1, 2] }] });
    expect(rows['/collections/people/schema']).to.deep.include({ total: 1 });
    expect(rows['/collections/people/schema']?.violations?.[0]).to.include({ id: 3, pointer: '/age' });
    expect(rows['/collections/posts/relations/author']).to.deep.include({ total: 1 });
    expect(rows['/collections/posts/relations/author']?.violations?.[0]).to.include({ id: 2, pointer: '/author_id' });
  });

  it('runs two applies at once one after the other: the second, planned against the account before the first, is refused naming what drifted', async () => {
    const client = await server.client();
    const accountId = await accountOf(client);
    const first = parseDeclaration('collections:\n  a: {indexes: [{fields: [x]}]}\n  b: {}\n');
    const second = parseDeclaration('collections:\n  a: {indexes: [{fields: [y]}]}\n  c: {}\n');
    const plans = await Promise.all([first, second].map((declared) => makePlan(server.store, accountId, declared, noSecrets, options)));
    const outcomes = await Promise.allSettled(plans.map((plan) => applyPlan(server.store, accountId, plan, noSecrets, options)));
    expect(outcomes.map((outcome) => outcome.status).sort()).to.deep.equal(['fulfilled', 'rejected']);
    const refused = outcomes.find((outcome) => outcome.status === 'rejected') as PromiseRejectedResult;
    expect((refused.reason as ApiError).status).to.equal(409);
    expect((refused.reason as ApiError).detail).to.include('/collections/a');
    // The account is wholly the one applied, never a mix.
    const applied = outcomes[0].status === 'fulfilled' ? first : second;
    expect((await makePlan(server.store, accountId, applied, noSecrets, options)).changes).to.deep.equal([]);
  });

  it('lets writes of other clients go on during an apply, each seeing the account before it or after', async () => {
    const client = await server.client();
    const accountId = await accountOf(client);
    await client.post('/v1/collections', { name: 'people' });
    const declared = parseDeclaration(
      'collections:\n  people:\n    schema: {type: object, required: [email], properties: {email: {type: string}}}\n    indexes: [{fields: [email], unique: true}]\n',
    );
    const plan = await makePlan(server.store, accountId, declared, noSecrets, options);
    const writes = Array.from({ length: 20 }, (_, n) =>
      client.post('/v1/collections/people/rows', [n % 2 === 0 ? { email: `p${n}` } : { name: `no email ${n}` }]),
    );
    const [applied, ...answers] = await Promise.allSettled([applyPlan(server.store, accountId, plan, noSecrets, options), ...writes]);
    const statuses = answers.map((answer) => (answer.status === 'fulfilled' ? (answer.value as { status: number }).status : 0));
    expect(
      statuses.every((status) => status === 201 || status === 422),
      String(statuses),
    ).to.equal(true);
    if (applied.status === 'fulfilled') {
      // Each row stored holds to the schema, or was stored before it was set; none after it breaks it.
      const rows = (await client.get<{ id: number; email?: string }[]>('/v1/collections/people/rows?limit=100')).body;
      expect(rows.filter((row) => row.email === undefined)).to.deep.equal([]);
    } else {
      expect((applied.reason as ApiError).code).to.equal('schema_conflict');
    }
  });

  it("names the declaration's place of a step the API's operation refuses at apply, and changes nothing", async () => {
    const client = await server.client();
    const accountId = await accountOf(client);
    // posts' author is named back as people's `posts`, which people declares of its own.
    const declared = parseDeclaration(`collections:
  people:
    relations: {posts: {field: post_id, collection: posts}}
  posts:
    relations: {author: {field: author_id, collection: people, reverse: posts}}
`);
    const plan = await makePlan(server.store, accountId, declared, noSecrets, options);
    const error = (await applyPlan(server.store, accountId, plan, noSecrets, options).catch((caught: unknown) => caught)) as ApiError;
    expect(error.status).to.equal(400);
    expect(error.detail).to.match(/^\/collections\/(people|posts)\/relations\/(posts|author): /);
    expect(
      (error.options.errors ?? []).map((place) => ('name' in place ? place.name : '')).every((name) => name.startsWith('/collections/')),
    ).to.equal(true);
    expect((await client.get<unknown[]>('/v1/collections')).body).to.deep.equal([]);
  });
});
