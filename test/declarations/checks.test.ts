// Declarations refused (src/declarations/format.ts, checks.ts): each a 400 (a 413 for its size) naming the
// place wrong as a JSON Pointer into the file, before anything is read of the account or changed.
import { expect } from 'chai';
import { parse } from 'yaml';
import { type CheckOptions, targetOf } from '../../src/declarations/checks.ts';
import { declarationOfObject, parseDeclaration } from '../../src/declarations/format.ts';
import type { Model } from '../../src/declarations/model.ts';
import type { ApiError } from '../../src/errors.ts';

const options: CheckOptions = { allowPrivate: true };
const live: Model = {
  collections: { existing: { schema: null, indexes: {}, search: null, relations: {}, rules: null, ttl: null } },
  issuers: {},
  webhooks: {},
};

/** What refusing `text` (or the object sent) answers: its status, and the place and message of its first error. */
async function refusal(text: string | object): Promise<[number, string, string]> {
  try {
    const declaration = typeof text === 'string' ? parseDeclaration(text) : declarationOfObject(text);
    await targetOf(declaration, live, () => undefined, options);
  } catch (error) {
    const { status, options: members } = error as ApiError;
    const [first] = (members.errors ?? []) as { name: string; message: string }[];
    return [status, first?.name ?? '', first?.message ?? ''];
  }
  throw new Error('not refused');
}

const laughs = [
  'a: &a [x,x,x,x,x,x,x,x,x,x]',
  ...'bcdefgh'.split('').map((name, at) => `${name}: &${name} [${Array(10).fill(`*${'abcdefgh'[at]}`).join(',')}]`),
].join('\n');

const scenarios: { name: string; text: string; status: number; place: string; message?: RegExp }[] = [
  { name: 'a file over 1 MiB', text: `# ${'x'.repeat(1024 * 1024)}\n`, status: 413, place: '' },
  { name: 'a billion laughs', text: laughs, status: 400, place: '', message: /aliases/ },
  { name: 'a key given twice', text: 'collections:\n  a: {}\n  a: {}\n', status: 400, place: '/collections/a', message: /twice/ },
  {
    name: 'an unknown member',
    text: 'collections:\n  a: {indexes: [{fields: [x], uniq: true}]}\n',
    status: 400,
    place: '/collections/a/indexes/0/uniq',
  },
  {
    name: 'a secret inline',
    text: 'issuers:\n  app: {issuer: x, audiences: [y], secret: "0123456789012345678901234567890123"}\n',
    status: 400,
    place: '/issuers/app/secret',
    message: /inline/,
  },
  {
    name: 'a relation to a collection neither declared nor there',
    text: 'collections:\n  a:\n    relations: {b: {field: b_id, collection: nowhere}}\n',
    status: 400,
    place: '/collections/a/relations/b/collection',
  },
  {
    name: 'two relations of one field',
    text: 'collections:\n  a:\n    relations:\n      one: {field: x, collection: a}\n      two: {field: x, collection: a}\n',
    status: 400,
    place: '/collections/a/relations/two/field',
  },
  {
    name: 'cascades that come back to where they start',
    text: 'collections:\n  a:\n    relations: {b: {field: b_id, collection: b, on_delete: cascade}}\n  b:\n    relations: {a: {field: a_id, collection: a, on_delete: cascade}}\n',
    status: 400,
    place: '/collections/a/relations/b/on_delete',
  },
  {
    name: 'an index over an object field',
    text: 'collections:\n  a:\n    schema: {type: object, properties: {address: {type: object}}}\n    indexes: [{fields: [address]}]\n',
    status: 400,
    place: '/collections/a/indexes/0/fields/0',
  },
  {
    name: 'a schema the API refuses',
    text: 'collections:\n  a:\n    schema: {type: object, properties: {x: {type: string, pattern: "(a)\\\\1"}}}\n',
    status: 400,
    place: '/collections/a/schema/properties/x/pattern',
  },
  {
    name: 'rules the API refuses',
    text: 'collections:\n  a:\n    rules: {read: maybe}\n',
    status: 400,
    place: '/collections/a/rules/read',
  },
  {
    name: 'a time to live over a field the schema types as no date-time',
    text: 'collections:\n  a:\n    schema: {type: object, properties: {ends: {type: integer}}}\n    ttl: {field: ends}\n',
    status: 400,
    place: '/collections/a/ttl/field',
    message: /date-time/,
  },
  {
    name: 'a time to live over a field a schema forbidding others leaves out',
    text: 'collections:\n  a:\n    schema: {type: object, additionalProperties: false, properties: {x: {type: string}}}\n    ttl: {field: ends}\n',
    status: 400,
    place: '/collections/a/ttl/field',
  },
  {
    name: 'a relation restricting deletes of rows that expire',
    text: 'collections:\n  a:\n    ttl: {field: ends}\n  b:\n    relations: {a: {field: a_id, collection: a}}\n',
    status: 400,
    place: '/collections/b/relations/a/on_delete',
    message: /cascade or set_null/,
  },
  {
    name: 'a time to live with an unknown member',
    text: 'collections:\n  a:\n    ttl: {field: ends, after: 1h}\n',
    status: 400,
    place: '/collections/a/ttl/after',
  },
  {
    name: 'a time to live over id',
    text: 'collections:\n  a:\n    ttl: {field: id}\n',
    status: 400,
    place: '/collections/a/ttl/field',
  },
  {
    name: 'a webhook naming a collection neither declared nor there',
    text: 'collections:\n  a: {}\nwebhooks:\n  - {url: "http://127.0.0.1:9/h", collections: [existing]}\n',
    status: 400,
    place: '/webhooks/0/collections/0',
  },
  {
    name: 'a webhook whose description holds U+0000',
    text: 'webhooks:\n  - {url: "http://127.0.0.1:9/h", description: "a\\0b"}\n',
    status: 400,
    place: '/webhooks/0/description',
  },
  {
    name: 'an issuer holding U+0000',
    text: 'issuers:\n  app: {issuer: "a\\0b", audiences: [y], jwks_uri: "https://auth.example/jwks"}\n',
    status: 400,
    place: '/issuers/app/issuer',
  },
  {
    name: 'an issuer whose secret is not set where nothing holds it',
    text: 'issuers:\n  app: {issuer: x, audiences: [y], secret: {env: ROWBASE_TEST_UNSET_SECRET}}\n',
    status: 400,
    place: '/issuers/app/secret/env',
  },
];

describe('declarations refused', () => {
  for (const { name, text, status, place, message } of scenarios) {
    it(`refuses ${name}, naming ${place || 'the file'}`, async () => {
      const [answered, at, said] = await refusal(text);
      expect([answered, at]).to.deep.equal([status, place]);
      if (message) expect(said).to.match(message);
    });
  }

  it('refuses a collection in more than 16 relations, both directions counted', async () => {
    const relations = Array.from({ length: 17 }, (_, n) => `      r${n}: {field: f${n}, collection: b}`).join('\n');
    const [status, place] = await refusal(`collections:\n  b: {}\n  a:\n    relations:\n${relations}\n`);
    expect(status).to.equal(400);
    expect(place).to.match(/^\/collections\/(a|b)\/relations$/);
  });
});

describe('declarations sent as JSON objects (read without yaml)', () => {
  // Those a JSON object can be: no aliases, no key given twice, no comment.
  const asObjects = scenarios.filter(({ text }) => !text.includes('&') && !text.startsWith('#') && !/a: \{\}\n {2}a:/.test(text));

  it('holds scenarios to refuse as objects', () => {
    expect(asObjects.length).to.be.greaterThan(scenarios.length - 4);
  });

  for (const { name, text, status, place, message } of asObjects) {
    it(`refuses ${name} sent as an object as its text is refused, naming ${place || 'the declaration'}`, async () => {
      const [answered, at, said] = await refusal(parse(text) as object);
      expect([answered, at]).to.deep.equal([status, place]);
      if (message) expect(said).to.match(message);
    });
  }

  it('refuses an object over 1 MiB as its text (413)', async () => {
    const [status] = await refusal({ collections: { a: { schema: { description: 'x'.repeat(1024 * 1024) } } } });
    expect(status).to.equal(413);
  });

  it('refuses an object nested past the bound its text is held to, naming where, and takes one at the bound', async () => {
    const nested = (depth: number): unknown => (depth === 0 ? 'leaf' : { d: nested(depth - 1) });
    // The declaration, `collections` and the collection are three of the 64; the schema is the first of `nested`'s.
    const [status, place, message] = await refusal({ collections: { a: { schema: nested(62) } } });
    expect([status, message]).to.deep.equal([400, 'nests more than 64 objects and arrays deep']);
    expect(place).to.equal(`/collections/a/schema${'/d'.repeat(61)}`);
    // Its text, refused by the same bound.
    const [textStatus, , textMessage] = await refusal(JSON.stringify({ collections: { a: { schema: nested(62) } } }));
    expect([textStatus, textMessage]).to.deep.equal([400, 'nests more than 64 flow collections ([ or {) deep']);
    // At the bound, refused for what the checks after the reading find, the same as its text.
    const atTheBound = { collections: { a: { schema: nested(61) } } };
    const asObject = await refusal(atTheBound);
    expect(asObject[2]).not.to.equal(message);
    expect(asObject).to.deep.equal(await refusal(JSON.stringify(atTheBound)));
  });

  it('reads an object as the same declaration as its JSON text, and leaves the object as it was', () => {
    const collections: Record<string, unknown> = {};
    for (let i = 0; i < 100; i++)
      collections[`c${i}`] = {
        schema: { type: 'object', properties: { f: { type: 'string', maxLength: 200 + i }, n: { type: ['integer', 'null'] } } },
        indexes: [{ fields: ['f'], unique: true }],
        relations: { next: { field: 'n', collection: `c${(i + 1) % 100}` } },
        rules: { read: true, create: 'authenticated', update: { owner: { $auth: 'sub' } } },
      };
    const sent = { $schema: 'https://rowbase.dev/schemas/declaration.schema.json', version: 1, collections };
    const before = JSON.stringify(sent);
    const read = declarationOfObject(sent);
    expect(read).to.deep.equal(parseDeclaration(before));
    expect(JSON.stringify(sent)).to.equal(before);
    expect(read.collections).not.to.equal(sent.collections);
  });
});
