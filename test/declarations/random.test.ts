// Random declarations (fast-check) applied to an empty account, then pulled, on both backends: what is pulled
// means what was declared (the same model, secrets compared by their values), and neither plans a change.
import { expect } from 'chai';
import fc from 'fast-check';
import { targetOf } from '../../src/declarations/checks.ts';
import type { Declaration, DeclaredCollection } from '../../src/declarations/format.ts';
import { parseDeclaration } from '../../src/declarations/format.ts';
import { canonical, type Model, modelOfLive } from '../../src/declarations/model.ts';
import { applyPlan, makePlan, type PlanOptions, pullDeclaration } from '../../src/declarations/plan.ts';
import { describeEachBackend } from '../support/backends.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

const options: PlanOptions = { maxCollections: 10_000, maxWebhooks: 20, allowPrivate: true };
const secrets = (env: string) => `${env}-${'s'.repeat(32)}`;
const FIELDS = ['a', 'b', 'c', 'd'];
const NAMES = ['alpha', 'beta', 'gamma', 'delta'];

/** A declaration of up to four collections, each part drawn at random (a time to live included), relations between them without cascades. */
const declarations = fc
  .record({
    names: fc.uniqueArray(fc.constantFrom(...NAMES), { minLength: 1, maxLength: 4 }),
    typed: fc.array(fc.boolean(), { minLength: 4, maxLength: 4 }),
    indexes: fc.array(
      fc.array(fc.record({ fields: fc.uniqueArray(fc.constantFrom(...FIELDS), { minLength: 1, maxLength: 2 }), unique: fc.boolean() }), {
        maxLength: 3,
      }),
      {
        minLength: 4,
        maxLength: 4,
      },
    ),
    search: fc.array(fc.boolean(), { minLength: 4, maxLength: 4 }),
    ttl: fc.array(fc.boolean(), { minLength: 4, maxLength: 4 }),
    rules: fc.array(
      fc.option(fc.constantFrom({ read: true }, { read: 'authenticated', create: true }, { read: { a: { $auth: 'sub' } } })),
      {
        minLength: 4,
        maxLength: 4,
      },
    ),
    links: fc.array(
      fc.record({ from: fc.nat(3), to: fc.nat(3), onDelete: fc.constantFrom('restrict', 'set_null'), reverse: fc.boolean() }),
      { maxLength: 4 },
    ),
    issuers: fc.uniqueArray(fc.constantFrom('app', 'partner'), { maxLength: 2 }),
    webhooks: fc.uniqueArray(fc.nat(3), { maxLength: 2 }),
  })
  .map(({ names, typed, indexes, search, ttl, rules, links, issuers, webhooks }): Declaration => {
    const collections: Record<string, DeclaredCollection> = {};
    for (const [at, name] of names.entries()) {
      const collection: DeclaredCollection = {};
      if (typed[at])
        collection.schema = {
          type: 'object',
          properties: { a: { type: 'string' }, b: { type: 'integer' }, ends: { type: ['string', 'null'], format: 'date-time' } },
        };
      const seen = new Set<string>();
      const declared = indexes[at].filter(({ fields }) => !seen.has(fields.join()) && seen.add(fields.join()));
      if (declared.length > 0) collection.indexes = declared.map(({ fields, unique }) => (unique ? { fields, unique } : { fields }));
      if (search[at]) collection.search = { fields: ['c'] };
      if (rules[at]) collection.rules = rules[at] as Record<string, unknown>;
      if (ttl[at]) collection.ttl = { field: 'ends' };
      collections[name] = collection;
    }
    for (const { from, to, onDelete, reverse } of links) {
      const [source, target] = [names[from % names.length], names[to % names.length]];
      const relation = `to_${target}`;
      collections[source].relations ??= {};
      const relations = collections[source].relations as NonNullable<DeclaredCollection['relations']>;
      relations[relation] = {
        field: `${target}_id`,
        collection: target,
        // No relation may restrict deletes of rows that expire.
        on_delete: collections[target].ttl ? 'set_null' : (onDelete as 'restrict' | 'set_null'),
        ...(reverse ? { reverse: `from_${source}` } : {}),
      };
    }
    return {
      collections,
      issuers: Object.fromEntries(
        issuers.map((name) => [
          name,
          { issuer: `https://${name}.example`, audiences: ['rowbase'], secret: { env: `${name.toUpperCase()}_SECRET` } },
        ]),
      ),
      webhooks: webhooks.map((n) => ({
        url: `http://127.0.0.1:9/hook${n}`,
        collections: [names[n % names.length]],
        events: ['insert' as const],
      })),
    };
  });

/** A model as compared: each secret by its value's digest alone, wherever it is read from. */
const comparable = (model: Model) => JSON.parse(canonical(model), (key, value) => (key === 'env' ? undefined : value));

describeEachBackend('declarations: random declarations applied and pulled', (backend) => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer({ webhooksAllowPrivate: true }, { backend });
  });
  after(() => server?.stop());

  it('pulls what was declared, and neither plans a change', async () => {
    await fc.assert(
      fc.asyncProperty(declarations, async (declaration) => {
        const client = await server.client();
        const accountId = (await server.store.findPrincipal(client.key as string))?.accountId as number;
        const declared = parseDeclaration(JSON.stringify(declaration));
        await applyPlan(server.store, accountId, await makePlan(server.store, accountId, declared, secrets, options), secrets, options);
        expect((await makePlan(server.store, accountId, declared, secrets, options)).changes).to.deep.equal([]);
        const pulled = parseDeclaration(JSON.stringify(await pullDeclaration(server.store, accountId)));
        expect((await makePlan(server.store, accountId, pulled, () => undefined, options)).changes).to.deep.equal([]);
        const current = modelOfLive(await server.store.readAccountModel(accountId));
        const [fromPull, fromDeclared] = await Promise.all([
          targetOf(pulled, current, () => undefined, options),
          targetOf(declared, current, secrets, options),
        ]);
        expect(comparable(fromPull)).to.deep.equal(comparable(fromDeclared));
      }),
      { numRuns: 12 },
    );
  });
});
