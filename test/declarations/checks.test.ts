// Declarations refused (src/declarations/format.ts, checks.ts): each a 400 (a 413 for its size) naming the
// place wrong as a JSON Pointer into the file, before anything is read of the account or changed.
import { expect } from 'chai';
import { type CheckOptions, targetOf } from '../../src/declarations/checks.ts';
import { parseDeclaration } from '../../src/declarations/format.ts';
import type { Model } from '../../src/declarations/model.ts';
import type { ApiError } from '../../src/errors.ts';

const options: CheckOptions = { allowPrivate: true };
const live: Model = {
  collections: { existing: { schema: null, indexes: {}, search: null, relations: {}, rules: null, ttl: null } },
  issuers: {},
  webhooks: {},
};

/** What refusing `text` answers: its status, and the place and message of its first error. */
async function refusal(text: string): Promise<[number, string, string]> {
  try {
    await targetOf(parseDeclaration(text), live, () => undefined, options);
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
