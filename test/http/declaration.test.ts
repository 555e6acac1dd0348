// GET /v1/declaration, POST /v1/declaration/plan and /apply (openapi.yaml, the `declaration` tag) on a real
// server, on both backends: the account read as a declaration, a plan sent back and applied, drift, destruction asked for, refusals naming their places, the
// keys that may not, a webhook signing with the secret the request sent, and a second instance on the
// same database serving what the first applied.
import { expect } from 'chai';
import { describeEachBackend } from '../support/backends.ts';
import { Client } from '../support/client.ts';
import { APP_JWT_SECRET, declared } from '../support/declarations.ts';
import { Receiver, signatureOf } from '../support/receiver.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

const HOOK_SECRET = `whsec_${Buffer.alloc(24, 7).toString('base64')}`;

interface Plan {
  changes: { action: string; kind: string; object: string; destroys_data: boolean }[];
  contract?: { breaking: boolean };
}

describeEachBackend('the declaration over HTTP', (backend) => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer({ webhooksAllowPrivate: true }, { backend });
  });
  after(() => server?.stop());

  it('plans the file sent, applies the plan answered, then plans no change', async () => {
    const client = await server.client();
    const secrets = { APP_JWT_SECRET };
    const plan = await client.post<Plan>('/v1/declaration/plan', { declaration: declared, secrets });
    expect(plan.status, plan.text).to.equal(200);
    expect(plan.body.changes).to.have.length(10);
    expect(plan.body.changes[0]).to.include({ action: 'create', kind: 'collection', object: '/collections/people' });
    expect(plan.body.contract).to.have.property('breaking');
    // The plan names the secret's variable, never its value.
    expect(plan.text).not.to.include(APP_JWT_SECRET);

    const applied = await client.post<{ changes: unknown[] }>('/v1/declaration/apply', { plan: plan.body, secrets });
    expect(applied.status, applied.text).to.equal(200);
    expect(applied.body.changes).to.deep.equal(plan.body.changes);
    expect((await client.get('/v1/collections/posts/relations/author')).body).to.include({ collection: 'people', on_delete: 'cascade' });

    // The declaration as JSON, the issuer's variable not sent: it keeps the secret it holds.
    const again = await client.post<Plan>('/v1/declaration/plan', { declaration: declaredAsJson() });
    expect(again.status, again.text).to.equal(200);
    expect(again.body.changes).to.deep.equal([]);
    const reapplied = await client.post('/v1/declaration/apply', { declaration: declared, secrets });
    expect(reapplied.status, reapplied.text).to.equal(200);
    expect(reapplied.body).to.deep.equal({ changes: [] });
  });

  it('answers the account as a declaration, as JSON and as the YAML rowbase pull writes, which plans as no change', async () => {
    const client = await server.client();
    const made = await client.post('/v1/declaration/apply', { declaration: declared, secrets: { APP_JWT_SECRET } });
    expect(made.status, made.text).to.equal(200);
    expect((await client.put('/v1/collections/posts/ttl', { field: 'expires_at' })).status).to.equal(200);
    const pulled = await client.get<{ declaration: Record<string, unknown>; yaml: string }>('/v1/declaration');
    expect(pulled.status, pulled.text).to.equal(200);
    expect(pulled.body.declaration).to.include({ $schema: 'https://rowbase.dev/schemas/declaration.schema.json', version: 1 });
    expect(pulled.body.declaration).to.have.nested.property('collections.posts.ttl.field', 'expires_at');
    expect(pulled.body.yaml).to.match(/^# yaml-language-server: \$schema=https:\/\/rowbase\.dev\/schemas\/declaration\.schema\.json\n/);
    // Neither holds a secret; each plans as no change.
    expect(pulled.text).not.to.include(APP_JWT_SECRET);
    for (const declaration of [pulled.body.yaml, pulled.body.declaration]) {
      const plan = await client.post<Plan>('/v1/declaration/plan', { declaration });
      expect(plan.status, plan.text).to.equal(200);
      expect(plan.body.changes).to.deep.equal([]);
    }
    expect((await client.request('HEAD', '/v1/declaration')).status).to.equal(200);
  });

  it('refuses a plan the account has drifted from (409, naming what drifted), and destruction unless allowed', async () => {
    const client = await server.client();
    await client.post('/v1/declaration/apply', { declaration: 'collections: {people: {}, posts: {}}\n' });
    const plan = await client.post<Plan>('/v1/declaration/plan', {
      declaration: 'collections: {people: {indexes: [{fields: [name]}]}, posts: {}}\n',
    });
    expect(plan.status, plan.text).to.equal(200);
    expect((await client.post('/v1/collections/people/indexes', { fields: ['age'] })).status).to.equal(201);
    const stale = await client.post('/v1/declaration/apply', { plan: plan.body });
    expect(stale.status, stale.text).to.equal(409);
    expect(stale.body).to.deep.include({
      code: 'conflict',
      errors: [{ in: 'body', name: '/collections/people', message: 'has changed since the plan was made' }],
    });

    const dropping = { declaration: 'collections: {people: {}}\n' };
    const refused = await client.post('/v1/declaration/apply', dropping);
    expect(refused.status, refused.text).to.equal(409);
    expect(refused.body).to.include({ code: 'conflict' });
    expect((refused.body as { detail: string }).detail).to.include('/collections/posts');
    expect((await client.get('/v1/collections/posts')).status).to.equal(200);
    const allowed = await client.post<Plan>('/v1/declaration/apply', { ...dropping, allow_destructive: true });
    expect(allowed.status, allowed.text).to.equal(200);
    expect(allowed.body.changes.map((change) => [change.action, change.object, change.destroys_data])).to.deep.include([
      'delete',
      '/collections/posts',
      true,
    ]);
    expect((await client.get('/v1/collections/posts')).status).to.equal(404);
  });

  it('answers 403 to a key not admin, or limited to collections, and 401 to none', async () => {
    const writer = await server.client(undefined, undefined, { scope: 'write' });
    const limited = await server.client(undefined, undefined, { collections: ['people'] });
    for (const client of [writer, limited]) {
      for (const path of ['/v1/declaration/plan', '/v1/declaration/apply']) {
        const refused = await client.post(path, { declaration: 'collections: {}\n' });
        expect(refused.status, `${path} ${refused.text}`).to.equal(403);
        expect(refused.body).to.include({ code: 'forbidden' });
      }
      const read = await client.get('/v1/declaration');
      expect(read.status, read.text).to.equal(403);
      expect(read.body).to.include({ code: 'forbidden' });
    }
    expect((await server.anonymous().get('/v1/declaration')).status).to.equal(401);
    expect((await server.anonymous().post('/v1/declaration/plan', { declaration: 'version: 1\n' })).status).to.equal(401);
  });

  const refusals: { name: string; body: unknown; status: number; place: string; raw?: boolean }[] = [
    {
      name: 'a member the declaration does not know',
      body: { declaration: 'collections:\n  people:\n    indexes: [{fields: [email], uniq: true}]\n' },
      status: 400,
      place: '/declaration/collections/people/indexes/0/uniq',
    },
    {
      name: 'the same, in a declaration sent as JSON',
      body: { declaration: { collections: { people: { indexes: [{ fields: ['email'], uniq: true }] } } } },
      status: 400,
      place: '/declaration/collections/people/indexes/0/uniq',
    },
    {
      name: 'a key given twice',
      body: { declaration: 'collections:\n  a: {}\n  a: {}\n' },
      status: 400,
      place: '/declaration/collections/a',
    },
    {
      name: 'a secret written inline',
      body: { declaration: declared.replace('{env: APP_JWT_SECRET}', APP_JWT_SECRET) },
      status: 400,
      place: '/declaration/issuers/app/secret',
    },
    {
      name: "a secret's variable the request does not send (the server's own environment is never read)",
      body: { declaration: declared.replace('{env: APP_JWT_SECRET}', '{env: PATH}') },
      status: 400,
      place: '/declaration/issuers/app/secret/env',
    },
    {
      name: "a webhook's secret of another form",
      body: {
        declaration: 'webhooks:\n  - url: http://127.0.0.1:9/hook\n    secret: {env: HOOK}\n',
        secrets: { HOOK: 'not-a-webhook-secret' },
      },
      status: 400,
      place: '/declaration/webhooks/0/secret/env',
    },
    {
      name: 'an unknown member of a long declaration (read in a worker)',
      body: { declaration: `# ${'x'.repeat(20_000)}\ncollections:\n  a: {nope: 1}\n` },
      status: 400,
      place: '/declaration/collections/a/nope',
    },
    {
      name: 'an unknown member of a long declaration sent as JSON (read without yaml)',
      body: {
        declaration: {
          collections: {
            ...Object.fromEntries(
              Array.from({ length: 300 }, (_, n) => [`c${n}`, { schema: { type: 'object', description: 'x'.repeat(50) } }]),
            ),
            a: { nope: 1 },
          },
        },
      },
      status: 400,
      place: '/declaration/collections/a/nope',
    },
    { name: 'text nested past the bounds', body: { declaration: `a: ${'['.repeat(100_000)}` }, status: 400, place: '/declaration' },
    { name: 'both a plan and a declaration', body: { declaration: 'version: 1\n', plan: aPlan() }, status: 400, place: '/plan' },
    { name: 'neither', body: { secrets: {} }, status: 400, place: '/plan' },
    { name: 'a plan of another account', body: { plan: { ...aPlan(), account: 'someone-else' } }, status: 400, place: '/plan/account' },
    {
      name: 'a body over 1 MiB',
      body: { declaration: `# ${'x'.repeat(1024 * 1024)}\n` },
      status: 413,
      place: '',
    },
  ];
  for (const { name, body, status, place } of refusals) {
    it(`refuses ${name} (${status}${place ? `, naming ${place}` : ''}), changing nothing`, async () => {
      const client = await server.client();
      const path = 'plan' in (body as object) || !('declaration' in (body as object)) ? '/v1/declaration/apply' : '/v1/declaration/plan';
      for (const each of [path, '/v1/declaration/apply']) {
        const refused = await client.post(each, body);
        expect(refused.status, refused.text).to.equal(status);
        const errors = (refused.body as { errors?: { name: string }[] }).errors ?? [];
        if (place) expect(errors.map((error) => error.name)).to.include(place);
      }
      expect((await client.get('/v1/collections')).body).to.deep.equal([]);
    });
  }

  it("signs a webhook's deliveries with the secret the request sent", async () => {
    const receiver = await Receiver.start();
    try {
      const client = await server.client();
      const declaration = `collections:\n  posts: {}\nwebhooks:\n  - url: ${receiver.url}\n    secret: {env: HOOK_SECRET}\n`;
      const applied = await client.post('/v1/declaration/apply', { declaration, secrets: { HOOK_SECRET } });
      expect(applied.status, applied.text).to.equal(200);
      expect(JSON.stringify(applied.body)).not.to.include(HOOK_SECRET);
      expect((await client.post('/v1/collections/posts/rows', [{ title: 'signed' }])).status).to.equal(201);
      await receiver.waitFor(1);
      const [received] = receiver.received;
      expect(received.headers['webhook-signature']).to.equal(signatureOf(HOOK_SECRET, received));
    } finally {
      await receiver.stop();
    }
  });

  it('applied through one instance, is served by another on the same database', async () => {
    const other = await startTestServer(
      { webhooksAllowPrivate: true },
      { backend, database: { url: server.databaseUrl, drop: async () => {} } },
    );
    try {
      const client = await server.client();
      const there = new Client(other.url, client.key);
      // The other instance reads the account's documents before, so that it has them to forget.
      expect(JSON.stringify((await there.get('/v1/openapi.json')).body)).not.to.include('/v1/collections/people/rows');
      const applied = await client.post('/v1/declaration/apply', { declaration: declared, secrets: { APP_JWT_SECRET } });
      expect(applied.status, applied.text).to.equal(200);

      const document = await there.get('/v1/openapi.json');
      expect(document.status).to.equal(200);
      expect(JSON.stringify(document.body)).to.include('/v1/collections/people/rows');
      // The schema holds there: a row of the wrong type is refused, a right one stored.
      expect((await there.post('/v1/collections/people/rows', [{ name: 7 }])).status).to.equal(422);
      expect((await there.post('/v1/collections/people/rows', [{ name: 'Ada', email: 'ada@example.com' }])).status).to.equal(201);
      expect((await there.post('/v1/collections/people/rows', [{ name: 'Bea', email: 'ada@example.com' }])).status).to.equal(409);
      const planned = await there.post<Plan>('/v1/declaration/plan', { declaration: declared });
      expect(planned.body.changes).to.deep.equal([]);
    } finally {
      await other.stop();
    }
  });
  describe("the contract's diff", () => {
    interface Listed {
      contract: {
        breaking: boolean;
        documents: Record<'openapi' | 'asyncapi', Record<'secret' | 'publishable', { type: string; path: string }[]>>;
      };
    }
    /** Applies `was`, then plans `will`: the plan answered, and how long it took (ms). */
    const planned = async (was: object, will: object) => {
      const client = await server.client();
      const applied = await client.post('/v1/declaration/apply', { declaration: was });
      expect(applied.status, applied.text).to.equal(200);
      const started = performance.now();
      const plan = await client.post<Plan & Listed>('/v1/declaration/plan', { declaration: will });
      return { plan, ms: performance.now() - started };
    };

    it("lists a change of each collection's type where its own paths use it, not again through related collections' expansions", async () => {
      // Six collections in a ring, each related to the next (its rows expanded from the one before, and
      // the next's from it), a field of each retyped: api-smart-diff followed the expansions' $refs round
      // the ring, listing each change again through every other collection's expansions, ever deeper (a
      // hundred collections changed so took minutes, then ran out of stack: a 500).
      const ring = (noteType: string) => ({
        version: 1,
        collections: Object.fromEntries(
          Array.from({ length: 6 }, (_, i) => [
            `c${i}`,
            {
              schema: { type: 'object', properties: { next_id: { type: ['integer', 'null'] }, note: { type: noteType } } },
              relations: { next: { field: 'next_id', collection: `c${(i + 1) % 6}`, on_delete: 'set_null', reverse: 'previous' } },
              rules: { read: true },
            },
          ]),
        ),
      });
      const { plan } = await planned(ring('string'), ring('integer'));
      expect(plan.status, plan.text).to.equal(200);
      expect(plan.body.contract.breaking).to.equal(true);
      const noted = plan.body.contract.documents.openapi.secret.filter(({ path }) => path.includes('/properties/note/'));
      for (const collection of ['c0', 'c5'])
        expect(
          noted.some(({ path }) => path.includes(`~1collections~1${collection}~1rows`)),
          collection,
        ).to.equal(true);
      // Where a path of the collection's names its types, or at the types themselves: none through an expansion.
      for (const { path } of noted) expect(path, path).not.to.include('_expand');
      expect(noted.length).to.be.lessThan(6 * 20);
    });

    it('plans a schema whose $defs name each other many ways at once, each change listed where its type is', async () => {
      // Each level names the next twice, 24 deep: api-smart-diff would list the change of the last level
      // once for each of the 2^24 ways to reach it (minutes, then the heap or the stack ran out: a 500).
      const levels = 24;
      const tree = (leafType: string) => {
        const $defs: Record<string, unknown> = { [`level${levels}`]: { type: 'object', properties: { leaf: { type: leafType } } } };
        for (let level = 0; level < levels; level++) {
          const next = { $ref: `#/$defs/level${level + 1}` };
          $defs[`level${level}`] = { type: 'object', properties: { left: next, right: next } };
        }
        return {
          version: 1,
          collections: { trees: { schema: { type: 'object', properties: { root: { $ref: '#/$defs/level0' } }, $defs } } },
        };
      };
      const { plan, ms } = await planned(tree('string'), tree('integer'));
      expect(plan.status, plan.text).to.equal(200);
      expect(plan.body.contract.breaking).to.equal(true);
      const leaf = plan.body.contract.documents.openapi.secret.filter(({ path }) => path.endsWith('/properties/leaf/type'));
      expect(leaf.map(({ type }) => type)).to.deep.equal(['breaking']);
      expect(ms).to.be.lessThan(5_000);
    });
  });
});

/** The test declaration as a JSON object, its secret's variable named as in the YAML. */
function declaredAsJson() {
  return {
    version: 1,
    collections: {
      people: {
        schema: { type: 'object', properties: { name: { type: 'string' }, email: { type: 'string' }, tags: { type: 'array' } } },
        indexes: [{ fields: ['email'], unique: true }, { fields: ['name'] }],
        search: { fields: ['name', 'tags'] },
        rules: { read: true, create: 'authenticated' },
      },
      posts: {
        relations: { author: { field: 'author_id', collection: 'people', on_delete: 'cascade', reverse: 'posts' } },
        indexes: [{ fields: ['created', 'author_id'] }],
      },
    },
    issuers: { app: { issuer: 'https://issuer.example', audiences: ['rowbase'], secret: { env: 'APP_JWT_SECRET' } } },
    webhooks: [{ url: 'http://127.0.0.1:9/hook', collections: ['posts'], events: ['insert'], description: 'new posts' }],
  };
}

/** A plan of nothing, as planDeclaration answers one for an empty account. */
function aPlan() {
  return { format: 'rowbase-plan', version: 1, declaration: { version: 1 }, live: {}, changes: [] };
}
