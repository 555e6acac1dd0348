// Reading a filter (src/query/filter.ts): what each form reads as, every error with the JSON Pointer of
// its place, the bounds, and the field errors of the 400 that refuses a filter.
import { expect } from 'chai';
import fc from 'fast-check';
import { ApiError } from '../../src/errors.ts';
import {
  type Filter,
  type FilterError,
  MAX_FILTER_BYTES,
  MAX_FILTER_CONDITIONS,
  MAX_FILTER_DEPTH,
  parseFilter,
  parseFilterText,
  readFilter,
} from '../../src/query/filter.ts';

/** `value` nested `levels` times in `{"$not": …}`. */
const nots = (levels: number, value: object): object => (levels === 0 ? value : { $not: nots(levels - 1, value) });
/** `value` nested `levels` times in an array. */
const arrays = (levels: number, value: unknown): unknown => (levels === 0 ? value : [arrays(levels - 1, value)]);

const errorsOf = (value: unknown) => readFilter(value).errors;

describe('filters', () => {
  describe('reading', () => {
    const scenarios: { name: string; filter: unknown; reads: Filter }[] = [
      { name: 'an empty object as a filter every row matches', filter: {}, reads: { kind: 'and', filters: [] } },
      { name: 'a plain value as $eq', filter: { a: 1 }, reads: { kind: 'field', path: ['a'], op: '$eq', operand: 1 } },
      { name: 'null as $eq null', filter: { a: null }, reads: { kind: 'field', path: ['a'], op: '$eq', operand: null } },
      { name: 'an array as $eq to it', filter: { a: [1, 'x'] }, reads: { kind: 'field', path: ['a'], op: '$eq', operand: [1, 'x'] } },
      {
        name: 'an object without $ members as $eq to it, whatever its members hold',
        filter: { a: { b: { $gt: 1 } } },
        reads: { kind: 'field', path: ['a'], op: '$eq', operand: { b: { $gt: 1 } } },
      },
      { name: 'an empty object as $eq {}', filter: { a: {} }, reads: { kind: 'field', path: ['a'], op: '$eq', operand: {} } },
      {
        name: 'an object with $ members through $eq',
        filter: { a: { $eq: { $gt: 1 } } },
        reads: { kind: 'field', path: ['a'], op: '$eq', operand: { $gt: 1 } },
      },
      {
        name: 'the members of one object as $and',
        filter: { a: 1, b: 'x' },
        reads: {
          kind: 'and',
          filters: [
            { kind: 'field', path: ['a'], op: '$eq', operand: 1 },
            { kind: 'field', path: ['b'], op: '$eq', operand: 'x' },
          ],
        },
      },
      {
        name: 'the operators on one field as $and',
        filter: { n: { $gte: 1, $lt: 5 } },
        reads: {
          kind: 'and',
          filters: [
            { kind: 'field', path: ['n'], op: '$gte', operand: 1 },
            { kind: 'field', path: ['n'], op: '$lt', operand: 5 },
          ],
        },
      },
      { name: 'a dotted path as the keys into nested objects', filter: { 'owner.name': 'x' }, reads: field(['owner', 'name'], 'x') },
      { name: '\\. as a dot inside a key', filter: { 'a\\.b': 1 }, reads: field(['a.b'], 1) },
      { name: '\\\\ as a backslash inside a key', filter: { 'a\\\\.b': 1 }, reads: field(['a\\', 'b'], 1) },
      { name: 'escapes in any key of a path', filter: { 'a.b\\\\\\.c.d': 1 }, reads: field(['a', 'b\\.c', 'd'], 1) },
      { name: 'id as a field', filter: { id: 5 }, reads: field(['id'], 5) },
      { name: 'a key of any other characters as itself', filter: { 'é😀 "/~$': 1 }, reads: field(['é😀 "/~$'], 1) },
      {
        name: '$and and $or as their filters',
        filter: { $and: [{ a: 1 }, { $or: [{ b: 2 }] }] },
        reads: { kind: 'and', filters: [field(['a'], 1), { kind: 'or', filters: [field(['b'], 2)] }] },
      },
      { name: '$not as the filter it negates', filter: { $not: { a: 1 } }, reads: { kind: 'not', filter: field(['a'], 1) } },
      { name: '$in and $nin with empty arrays', filter: { a: { $in: [] } }, reads: { kind: 'field', path: ['a'], op: '$in', operand: [] } },
    ];
    for (const { name, filter, reads } of scenarios) {
      it(`reads ${name}`, () => {
        expect(readFilter(filter)).to.deep.equal({ filter: reads });
      });
    }

    it('reads every operator with an operand of its type', () => {
      const operands = {
        $eq: { x: [1] },
        $ne: 'x',
        $gt: 1.5,
        $gte: 'b',
        $lt: true,
        $lte: -1,
        $in: [1, 'x', null, [2], { y: 3 }],
        $nin: [],
        $exists: false,
        $prefix: '',
        $contains: { z: null },
      };
      const read = readFilter({ f: operands }).filter;
      expect(read).to.deep.equal({
        kind: 'and',
        filters: Object.entries(operands).map(([op, operand]) => ({ kind: 'field', path: ['f'], op, operand })),
      });
    });
  });

  describe('errors', () => {
    const scenarios: { name: string; filter: unknown; errors: FilterError[] }[] = [
      { name: 'null', filter: null, errors: [{ pointer: '', message: 'must be a JSON object' }] },
      { name: 'an array', filter: [{ a: 1 }], errors: [{ pointer: '', message: 'must be a JSON object' }] },
      { name: 'a string', filter: 'a', errors: [{ pointer: '', message: 'must be a JSON object' }] },
      { name: 'an empty $and', filter: { $and: [] }, errors: [{ pointer: '/$and', message: 'must be a non-empty array of filters' }] },
      {
        name: 'an object as $or',
        filter: { $or: { a: 1 } },
        errors: [{ pointer: '/$or', message: 'must be a non-empty array of filters' }],
      },
      {
        name: 'a filter of $and that is no object',
        filter: { $and: [{ a: 1 }, 2] },
        errors: [{ pointer: '/$and/1', message: 'must be a filter, a JSON object' }],
      },
      {
        name: 'an array as $not',
        filter: { $not: [{ a: 1 }] },
        errors: [{ pointer: '/$not', message: 'must be a filter, a JSON object' }],
      },
      {
        name: 'another $ member of a filter',
        filter: { $nor: [{ a: 1 }] },
        errors: [{ pointer: '/$nor', message: 'is not an operator of a filter: $and, $or, $not, $search, or a field path' }],
      },
      { name: 'an empty path', filter: { '': 1 }, errors: [{ pointer: '/', message: 'is not a field path: a key in it is empty' }] },
      { name: 'an empty key', filter: { 'a..b': 1 }, errors: [{ pointer: '/a..b', message: 'is not a field path: a key in it is empty' }] },
      { name: 'a leading dot', filter: { '.a': 1 }, errors: [{ pointer: '/.a', message: 'is not a field path: a key in it is empty' }] },
      { name: 'a trailing dot', filter: { 'a.': 1 }, errors: [{ pointer: '/a.', message: 'is not a field path: a key in it is empty' }] },
      {
        name: 'a lone \\ at the end',
        filter: { 'a\\': 1 },
        errors: [{ pointer: '/a\\', message: 'is not a field path: it ends with a lone \\' }],
      },
      {
        name: 'a \\ before another character',
        filter: { 'a\\b': 1 },
        errors: [{ pointer: '/a\\b', message: 'is not a field path: \\ escapes only . and \\' }],
      },
      {
        name: 'operators beside other members',
        filter: { a: { $gt: 1, b: 2 } },
        errors: [{ pointer: '/a', message: 'mixes operators with other members: compare with such an object through $eq' }],
      },
      {
        name: 'an unknown operator, its pointer escaped (RFC 6901)',
        filter: { 'a/b~': { $regex: 'x' } },
        errors: [
          {
            pointer: '/a~1b~0/$regex',
            message: 'is not an operator: $eq, $ne, $gt, $gte, $lt, $lte, $in, $nin, $exists, $prefix, $contains',
          },
        ],
      },
      { name: '$in of no array', filter: { a: { $in: 1 } }, errors: [{ pointer: '/a/$in', message: 'must be an array' }] },
      { name: '$nin of no array', filter: { a: { $nin: { b: 1 } } }, errors: [{ pointer: '/a/$nin', message: 'must be an array' }] },
      {
        name: '$exists of no boolean',
        filter: { a: { $exists: 1 } },
        errors: [{ pointer: '/a/$exists', message: 'must be true or false' }],
      },
      { name: '$prefix of no string', filter: { a: { $prefix: 1 } }, errors: [{ pointer: '/a/$prefix', message: 'must be a string' }] },
      ...(['$gt', '$gte', '$lt', '$lte'] as const).flatMap((op) =>
        [null, [1], { b: 1 }].map((operand) => ({
          name: `${op} of ${JSON.stringify(operand)}`,
          filter: { a: { [op]: operand } },
          errors: [{ pointer: `/a/${op}`, message: 'must be a number, a string or a boolean' }],
        })),
      ),
      {
        name: 'a number past a double, in a plain value',
        filter: JSON.parse('{"a": 1e400}'),
        errors: [{ pointer: '/a', message: 'is a number too large for a double' }],
      },
      {
        name: 'a number past a double, deep in an operand',
        filter: JSON.parse('{"a": {"$in": [1, {"b": [-1e400]}]}}'),
        errors: [{ pointer: '/a/$in/1/b/0', message: 'is a number too large for a double' }],
      },
      {
        name: 'errors deep in $or, $and and $not',
        filter: { $or: [{ a: 1 }, { $and: [{ $not: { b: { $gt: [] } } }] }] },
        errors: [{ pointer: '/$or/1/$and/0/$not/b/$gt', message: 'must be a number, a string or a boolean' }],
      },
      {
        name: 'several errors, in the order of the filter',
        filter: { a: { $x: 1 }, 'b..c': 2, $or: [], d: { $exists: 'no' } },
        errors: [
          { pointer: '/a/$x', message: 'is not an operator: $eq, $ne, $gt, $gte, $lt, $lte, $in, $nin, $exists, $prefix, $contains' },
          { pointer: '/b..c', message: 'is not a field path: a key in it is empty' },
          { pointer: '/$or', message: 'must be a non-empty array of filters' },
          { pointer: '/d/$exists', message: 'must be true or false' },
        ],
      },
    ];
    for (const { name, filter, errors } of scenarios) {
      it(`refuses ${name}`, () => {
        expect(errorsOf(filter)).to.deep.equal(errors);
      });
    }
  });

  describe('any JSON at all', () => {
    // Keys of filters and of operators, right and wrong, and values of every type, nested as deep as a
    // filter may go and deeper.
    const key = fc.constantFrom(
      'a',
      'b.c',
      'a..b',
      'a\\',
      'x\\y',
      '',
      'a/b~',
      'id',
      '$and',
      '$or',
      '$not',
      '$eq',
      '$in',
      '$gt',
      '$exists',
      '$x',
    );
    const { value } = fc.letrec<{ value: unknown }>((tie) => ({
      value: fc.oneof(
        { depthSize: 'medium', maxDepth: 10 },
        { weight: 2, arbitrary: fc.oneof(fc.constant(null), fc.boolean(), fc.double(), fc.string({ maxLength: 3 })) },
        fc.array(tie('value'), { maxLength: 3 }),
        fc.array(fc.tuple(key, tie('value')), { maxLength: 4 }).map((entries) => Object.fromEntries(entries)),
      ),
    }));

    /** The value at the JSON Pointer `pointer` in `document` (RFC 6901), or undefined. */
    function at(document: unknown, pointer: string): unknown {
      if (pointer === '') return document;
      let found = document;
      for (const token of pointer.slice(1).split('/')) {
        const name = token.replaceAll('~1', '/').replaceAll('~0', '~');
        if (found === null || typeof found !== 'object' || !Object.hasOwn(found, name)) return undefined;
        found = (found as Record<string, unknown>)[name];
      }
      return found;
    }

    it('is read into a filter, or refused with errors that each point at a place in it', () => {
      fc.assert(
        fc.property(value, (filter) => {
          const { errors } = readFilter(filter);
          for (const { pointer } of errors ?? []) expect(at(filter, pointer), pointer).not.to.equal(undefined);
        }),
        { numRuns: 2000 },
      );
    });
  });

  describe('bounds', () => {
    // `{"a":""}` is 8 bytes: the string makes up the rest.
    const ofBytes = (bytes: number, unit = 'x') => ({ a: unit.repeat((bytes - 8) / Buffer.byteLength(unit)) });

    it(`takes a filter of ${MAX_FILTER_BYTES} bytes as JSON`, () => {
      expect(Buffer.byteLength(JSON.stringify(ofBytes(MAX_FILTER_BYTES)))).to.equal(MAX_FILTER_BYTES);
      expect(errorsOf(ofBytes(MAX_FILTER_BYTES))).to.equal(undefined);
    });

    it(`refuses a filter of ${MAX_FILTER_BYTES + 1} bytes, and nothing else of it`, () => {
      const tooLarge = { ...ofBytes(MAX_FILTER_BYTES - 8), $nor: 1 };
      expect(Buffer.byteLength(JSON.stringify(tooLarge))).to.equal(MAX_FILTER_BYTES + 1);
      expect(errorsOf(tooLarge)).to.deep.equal([{ pointer: '', message: `must be at most ${MAX_FILTER_BYTES} bytes as JSON` }]);
    });

    it('counts bytes of UTF-8, not characters', () => {
      expect(errorsOf(ofBytes(MAX_FILTER_BYTES, 'é'))).to.equal(undefined);
      expect(errorsOf(ofBytes(MAX_FILTER_BYTES + 2, 'é'))).to.have.length(1);
    });

    it('weighs the filter as JSON.stringify writes it, not the text the client sent', () => {
      const text = `{ "a" :   ${JSON.stringify(ofBytes(MAX_FILTER_BYTES).a)}   ${' '.repeat(1000)}}`;
      expect(Buffer.byteLength(text)).to.be.above(MAX_FILTER_BYTES);
      expect(parseFilterText(text)).to.deep.equal(field(['a'], ofBytes(MAX_FILTER_BYTES).a));
    });

    it(`takes ${MAX_FILTER_DEPTH} levels of nesting, the filter the first`, () => {
      expect(errorsOf(nots(MAX_FILTER_DEPTH - 1, { a: 1 }))).to.equal(undefined);
      expect(errorsOf({ a: arrays(MAX_FILTER_DEPTH - 1, 1) })).to.equal(undefined);
      expect(errorsOf({ $or: [{ $and: [{ $not: { a: { $in: [1] } } }] }] })).to.equal(undefined);
    });

    it(`refuses a level more, at the object or array that is one too deep`, () => {
      const message = `is nested deeper than the ${MAX_FILTER_DEPTH} levels a filter may have`;
      expect(errorsOf(nots(MAX_FILTER_DEPTH, { a: 1 }))).to.deep.equal([{ pointer: '/$not'.repeat(MAX_FILTER_DEPTH), message }]);
      expect(errorsOf({ a: arrays(MAX_FILTER_DEPTH, 1) })).to.deep.equal([{ pointer: `/a${'/0'.repeat(MAX_FILTER_DEPTH - 1)}`, message }]);
      expect(errorsOf({ $or: [{ $and: [{ $not: { a: { $in: [[1]] } } }] }] })).to.deep.equal([
        { pointer: '/$or/0/$and/0/$not/a/$in/0', message },
      ]);
    });

    it(`takes ${MAX_FILTER_CONDITIONS} conditions, each operator on a field one, and refuses more`, () => {
      const conditions = (n: number) => Object.fromEntries(Array.from({ length: n / 2 }, (_, i) => [`f${i}`, { $gt: 0, $lt: 9 }]));
      expect(errorsOf(conditions(MAX_FILTER_CONDITIONS))).to.equal(undefined);
      expect(errorsOf({ ...conditions(MAX_FILTER_CONDITIONS), g: 1 })).to.deep.equal([
        { pointer: '', message: `holds ${MAX_FILTER_CONDITIONS + 1} conditions, and may hold ${MAX_FILTER_CONDITIONS} at most` },
      ]);
    });

    it('counts conditions inside $and, $or and $not, and an $in once however long', () => {
      const many = Array.from({ length: MAX_FILTER_CONDITIONS - 2 }, (_, i) => ({ [`f${i}`]: i }));
      expect(errorsOf({ $or: many, $not: { a: { $in: [1, 2, 3, 4, 5] } }, b: 1 })).to.equal(undefined);
      expect(errorsOf({ $or: many, $not: { a: { $in: [1, 2, 3, 4, 5] } }, b: 1, c: 1 })).to.have.length(1);
    });
  });

  describe('the 400 that refuses a filter', () => {
    const refusal = (read: () => unknown) => {
      try {
        read();
      } catch (error) {
        expect(error).to.be.instanceOf(ApiError);
        return (error as ApiError).toProblem('urn:rowbase:request:test');
      }
      throw new Error('the filter was taken');
    };

    it('is validation_failed, its errors at the query parameter filter, each with its pointer', () => {
      const problem = refusal(() => parseFilter({ a: { $gt: null }, $or: 1 }));
      expect(problem).to.include({ status: 400, code: 'validation_failed' });
      expect(problem.errors).to.deep.equal([
        { in: 'query', name: 'filter', pointer: '/a/$gt', message: 'must be a number, a string or a boolean' },
        { in: 'query', name: 'filter', pointer: '/$or', message: 'must be a non-empty array of filters' },
      ]);
    });

    it('names the place in a body by its pointer from the body, for a filter in a body', () => {
      const problem = refusal(() => parseFilter({ a: { $gt: null } }, { in: 'body', name: '/filter' }));
      expect(problem.errors).to.deep.equal([{ in: 'body', name: '/filter/a/$gt', message: 'must be a number, a string or a boolean' }]);
    });

    it('says when the text of a filter is not JSON', () => {
      expect(refusal(() => parseFilterText('{"a": 1')).errors).to.deep.equal([
        { in: 'query', name: 'filter', pointer: '', message: 'is not valid JSON' },
      ]);
    });

    it('answers the filter when there is nothing wrong with it', () => {
      expect(parseFilter({ a: 1 })).to.deep.equal(field(['a'], 1));
      expect(parseFilterText('{"a": 1}')).to.deep.equal(field(['a'], 1));
    });
  });
});

function field(path: string[], operand: unknown): Filter {
  return { kind: 'field', path, op: '$eq', operand } as Filter;
}
