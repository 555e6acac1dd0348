// What a filter means on a row in memory (src/query/evaluate.ts), rule by rule: each scenario a filter as
// a client sends it, rows it matches and rows it does not. Rows are written as JSON text, as the service
// stores them, so that `1.0`, a member named __proto__ and escapes read as they do there.
import { expect } from 'chai';
import { compileFilter, matches, type Row } from '../../src/query/evaluate.ts';
import { parseFilter } from '../../src/query/filter.ts';

/** A row with id 1 and the fields of the JSON text `fields`. */
const row = (fields: string, id = 1): Row => ({ id, ...JSON.parse(fields) });

interface Scenario {
  name: string;
  filter: unknown;
  /** The fields of rows it matches, as JSON text. */
  matches: string[];
  /** The fields of rows it does not match. */
  misses: string[];
}

const rules: Record<string, Scenario[]> = {
  'missing fields and null': [
    { name: 'null matches a stored null only', filter: { f: null }, matches: ['{"f":null}'], misses: ['{}', '{"f":0}', '{"f":""}'] },
    {
      name: '$exists: false matches rows without the field',
      filter: { f: { $exists: false } },
      matches: ['{}', '{"g":1}'],
      misses: ['{"f":null}'],
    },
    {
      name: '$exists: true matches a stored null',
      filter: { f: { $exists: true } },
      matches: ['{"f":null}', '{"f":false}'],
      misses: ['{}'],
    },
    { name: '$ne matches rows without the field', filter: { f: { $ne: 1 } }, matches: ['{}', '{"f":2}', '{"f":"1"}'], misses: ['{"f":1}'] },
    {
      name: '$ne null matches missing and every other value',
      filter: { f: { $ne: null } },
      matches: ['{}', '{"f":0}'],
      misses: ['{"f":null}'],
    },
    { name: '$nin matches rows without the field', filter: { f: { $nin: [1, 2] } }, matches: ['{}', '{"f":3}'], misses: ['{"f":2}'] },
    {
      name: 'no other operator matches a missing field',
      filter: { $or: ['$eq', '$gt', '$gte', '$lt', '$lte'].map((op) => ({ f: { [op]: 0 } })) },
      matches: ['{"f":0}'],
      misses: ['{}'],
    },
    {
      name: '$in, $prefix and $contains do not match a missing field',
      filter: { $or: [{ f: { $in: [null] } }, { f: { $prefix: '' } }, { f: { $contains: null } }] },
      matches: ['{"f":null}', '{"f":""}', '{"f":[null]}'],
      misses: ['{}'],
    },
  ],
  'JSON equality': [
    {
      name: '1 equals 1.0',
      filter: { f: 1 },
      matches: ['{"f":1}', '{"f":1.0}', '{"f":1e0}'],
      misses: ['{"f":"1"}', '{"f":true}', '{"f":[1]}'],
    },
    { name: '0 equals -0', filter: { f: 0 }, matches: ['{"f":0}', '{"f":-0}'], misses: ['{"f":false}', '{"f":null}'] },
    { name: 'true is no number', filter: { f: true }, matches: ['{"f":true}'], misses: ['{"f":1}', '{"f":"true"}'] },
    { name: 'strings exactly', filter: { f: 'é' }, matches: ['{"f":"é"}', '{"f":"\\u00e9"}'], misses: ['{"f":"e\\u0301"}', '{"f":"É"}'] },
    {
      name: 'objects whatever the order of their members',
      filter: { f: { a: 1, b: { c: [1, 2], d: null } } },
      matches: ['{"f":{"b":{"d":null,"c":[1,2.0]},"a":1}}'],
      misses: ['{"f":{"a":1}}', '{"f":{"a":1,"b":{"c":[1,2],"d":null},"e":0}}', '{"f":{"a":1,"b":{"c":[2,1],"d":null}}}'],
    },
    {
      name: 'arrays in order',
      filter: { f: [1, 'a'] },
      matches: ['{"f":[1,"a"]}'],
      misses: ['{"f":["a",1]}', '{"f":[1]}', '{"f":[1,"a",null]}'],
    },
    { name: 'an empty object', filter: { f: {} }, matches: ['{"f":{}}'], misses: ['{"f":[]}', '{"f":{"a":null}}'] },
    { name: 'an empty array', filter: { f: { $eq: [] } }, matches: ['{"f":[]}'], misses: ['{"f":{}}', '{"f":[[]]}'] },
    {
      name: '$in of objects and scalars',
      filter: { f: { $in: [1, { a: [1] }, null] } },
      matches: ['{"f":1.0}', '{"f":{"a":[1]}}', '{"f":null}'],
      misses: ['{"f":{"a":[1],"b":1}}', '{"f":"1"}'],
    },
    { name: '$in of nothing', filter: { f: { $in: [] } }, matches: [], misses: ['{}', '{"f":null}'] },
    { name: '$nin of nothing', filter: { f: { $nin: [] } }, matches: ['{}', '{"f":null}'], misses: [] },
  ],
  comparisons: [
    {
      name: 'numbers with numbers only',
      filter: { f: { $gt: 5 } },
      matches: ['{"f":6}', '{"f":5.5}'],
      misses: ['{"f":5}', '{"f":"6"}', '{"f":true}', '{"f":[6]}'],
    },
    {
      name: '$gte, $lt and $lte by value',
      filter: { f: { $gte: -1, $lt: 1 } },
      matches: ['{"f":-1}', '{"f":0.99}'],
      misses: ['{"f":1}', '{"f":-1.5}'],
    },
    {
      name: 'strings with strings only',
      filter: { f: { $lte: 'b' } },
      matches: ['{"f":"a"}', '{"f":"b"}', '{"f":""}'],
      misses: ['{"f":"ba"}', '{"f":1}', '{"f":null}'],
    },
    {
      name: 'strings by code point, not UTF-16 unit: U+FFFF before U+1F600',
      filter: { f: { $gt: '\uffff' } },
      matches: ['{"f":"😀"}'],
      misses: ['{"f":"\\uffff"}'],
    },
    {
      name: 'U+E000 before an astral character',
      filter: { f: { $lt: '😀' } },
      matches: ['{"f":"\\ue000"}', '{"f":"\\ud83d"}'],
      misses: ['{"f":"😀"}', '{"f":"😀a"}'],
    },
    {
      name: 'a lone surrogate as its own code point, below U+E000',
      filter: { f: { $gt: '\ud800', $lt: '\ue000' } },
      matches: ['{"f":"\\ud800a"}', '{"f":"\\udc00"}', '{"f":"\\ud800\\ud800"}'],
      misses: ['{"f":"\\ud800"}', '{"f":"\\ue000"}', '{"f":"𐀀"}'],
    },
    {
      name: 'a string before the longer strings it starts',
      filter: { f: { $lt: 'ab' } },
      matches: ['{"f":"a"}', '{"f":"aa"}'],
      misses: ['{"f":"ab"}', '{"f":"ab\\u0000"}'],
    },
    { name: 'booleans, false before true', filter: { f: { $gt: false } }, matches: ['{"f":true}'], misses: ['{"f":false}', '{"f":1}'] },
    {
      name: '$lte true holds for both booleans',
      filter: { f: { $lte: true } },
      matches: ['{"f":true}', '{"f":false}'],
      misses: ['{"f":0}', '{"f":null}'],
    },
    { name: '$lt false holds for none', filter: { f: { $lt: false } }, matches: [], misses: ['{"f":false}', '{"f":true}'] },
  ],
  '$prefix and $contains': [
    {
      name: '$prefix matches strings that start with it',
      filter: { f: { $prefix: 'ab' } },
      matches: ['{"f":"ab"}', '{"f":"abc"}'],
      misses: ['{"f":"a"}', '{"f":"xab"}', '{"f":["ab"]}'],
    },
    {
      name: '$prefix "" matches every string',
      filter: { f: { $prefix: '' } },
      matches: ['{"f":""}', '{"f":"x"}'],
      misses: ['{"f":0}', '{"f":null}'],
    },
    {
      name: '$prefix by code point: a lone high surrogate does not start its pair',
      filter: { f: { $prefix: '\ud83d' } },
      matches: ['{"f":"\\ud83d"}', '{"f":"\\ud83dx"}'],
      misses: ['{"f":"😀"}'],
    },
    {
      name: '$contains an item of an array',
      filter: { f: { $contains: 1 } },
      matches: ['{"f":[0,1.0]}', '{"f":[1,1]}'],
      misses: ['{"f":1}', '{"f":[[1]]}', '{"f":["1"]}', '{"f":[]}'],
    },
    {
      name: '$contains no character of a string',
      filter: { f: { $contains: 'a' } },
      matches: ['{"f":["a"]}'],
      misses: ['{"f":"a"}', '{"f":"abc"}'],
    },
    {
      name: '$contains an object by JSON equality, not by its members',
      filter: { f: { $contains: { a: 1, b: 2 } } },
      matches: ['{"f":[{"b":2,"a":1}]}'],
      misses: ['{"f":[{"a":1}]}', '{"f":[{"a":1,"b":2,"c":3}]}', '{"f":{"a":1,"b":2}}'],
    },
    { name: '$contains an array', filter: { f: { $contains: [1] } }, matches: ['{"f":[[1],2]}'], misses: ['{"f":[1]}', '{"f":[[1,2]]}'] },
    { name: '$contains null', filter: { f: { $contains: null } }, matches: ['{"f":[null]}'], misses: ['{"f":null}', '{"f":[]}'] },
  ],
  paths: [
    {
      name: 'a dotted path into nested objects',
      filter: { 'a.b.c': 1 },
      matches: ['{"a":{"b":{"c":1}}}'],
      misses: ['{"a":{"b":1}}', '{"a.b.c":1}'],
    },
    { name: 'an escaped dot as part of a key', filter: { 'a\\.b': 1 }, matches: ['{"a.b":1}'], misses: ['{"a":{"b":1}}'] },
    { name: 'an escaped backslash as part of a key', filter: { 'a\\\\.b': 1 }, matches: ['{"a\\\\":{"b":1}}'], misses: ['{"a\\\\.b":1}'] },
    {
      name: 'a path into a number, a string or null as a missing field',
      filter: { 'a.b': { $exists: false } },
      matches: ['{"a":5}', '{"a":"b"}', '{"a":null}', '{}'],
      misses: ['{"a":{"b":null}}'],
    },
    {
      name: 'a path into an array as a missing field, even by an index',
      filter: { $or: [{ 'a.0': { $exists: true } }, { 'a.b': { $exists: true } }] },
      matches: ['{"a":{"0":1}}'],
      misses: ['{"a":[1]}', '{"a":[{"b":1}]}'],
    },
    {
      name: 'only a row’s own members, __proto__ among them',
      filter: JSON.parse('{"$or": [{"constructor": {"$exists": true}}, {"__proto__": 1}, {"toString.name": {"$exists": true}}]}'),
      matches: ['{"__proto__":1}', '{"constructor":null}'],
      misses: ['{}', '{"__proto__":{}}'],
    },
  ],
  'logic and the id': [
    { name: 'an empty filter matches every row', filter: {}, matches: ['{}', '{"a":1}'], misses: [] },
    { name: 'the members of a filter all hold', filter: { a: 1, b: 2 }, matches: ['{"a":1,"b":2}'], misses: ['{"a":1}', '{"b":2}'] },
    {
      name: '$and of filters all hold',
      filter: { $and: [{ a: 1 }, { b: { $exists: false } }] },
      matches: ['{"a":1}'],
      misses: ['{"a":1,"b":0}'],
    },
    { name: '$or of filters one holds', filter: { $or: [{ a: 1 }, { b: 1 }] }, matches: ['{"a":1}', '{"b":1,"a":0}'], misses: ['{}'] },
    {
      name: '$not of a condition on a missing field holds',
      filter: { $not: { a: { $gt: 0 } } },
      matches: ['{}', '{"a":"x"}', '{"a":0}'],
      misses: ['{"a":1}'],
    },
    { name: '$not of $not', filter: { $not: { $not: { a: 1 } } }, matches: ['{"a":1}'], misses: ['{}'] },
  ],
};

describe('filters on rows in memory', () => {
  for (const [rule, scenarios] of Object.entries(rules)) {
    describe(rule, () => {
      for (const scenario of scenarios) {
        it(scenario.name, () => {
          const filter = parseFilter(scenario.filter);
          expect(
            scenario.matches.filter((fields) => !matches(filter, row(fields))),
            'rows missed',
          ).to.deep.equal([]);
          expect(
            scenario.misses.filter((fields) => matches(filter, row(fields))),
            'rows matched',
          ).to.deep.equal([]);
        });
      }
    });
  }

  describe('the id', () => {
    const rows = [1, 2, 3].map((id) => row('{"id2":0}', id));
    const ids = (filter: unknown) => rows.filter((each) => matches(parseFilter(filter), each)).map((each) => each.id);

    it('compares as a number', () => {
      expect(ids({ id: 2 })).to.deep.equal([2]);
      expect(ids({ id: { $gt: 1.5, $lte: 3 } })).to.deep.equal([2, 3]);
      expect(ids({ id: { $in: [1, 3, '2'] } })).to.deep.equal([1, 3]);
      expect(ids({ id: '2' })).to.deep.equal([]);
      expect(ids({ id: { $ne: '2' } })).to.deep.equal([1, 2, 3]);
    });

    it('is there in every row, with nothing below it', () => {
      expect(ids({ id: { $exists: true } })).to.deep.equal([1, 2, 3]);
      expect(ids({ 'id.a': { $exists: false } })).to.deep.equal([1, 2, 3]);
    });
  });

  it('compiles a filter once into a test of rows', () => {
    const test = compileFilter(parseFilter({ $or: [{ a: { $gt: 1 } }, { b: { $contains: 'x' } }] }));
    expect([row('{"a":2}'), row('{"b":["x"]}'), row('{"a":1}')].map(test)).to.deep.equal([true, true, false]);
  });
});
