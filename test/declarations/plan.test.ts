// A declaration planned, applied and pulled against a real store (src/declarations/plan.ts), on both
// backends: what the API made pulls into a declaration that plans as no change; a declaration applied
// twice plans as no change the second time; apply is all or none, and refuses a plan the account drifted from.
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
});
