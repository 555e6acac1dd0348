// A row's fields against its collection's schema (src/schema/compile.ts): what each keyword says of a
// row that fails it, and where. Rows are given as the service gives them: their fields, without `id`.
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { expect } from 'chai';
import fc from 'fast-check';
import { canonicalJson } from '../../src/schema/ajv.ts';
import { checkCompiles, type RowSchema } from '../../src/schema/compile.ts';
import { checkRowSchema, compileRowSchema, maxRowIssues, type RowIssue, type RowValidator } from '../../src/schema/index.ts';
import { cpuTimed } from '../support/cpu.ts';

/** The validator of `schema`, checked as the service checks it first. */
const validator = (schema: Record<string, unknown>): RowValidator => compileRowSchema(checkRowSchema(schema, ''));

/** The issues of `fields` against a schema of one field `f`, `field` its schema. */
const issuesOfField = (field: Record<string, unknown> | boolean, fields: Record<string, unknown>): RowIssue[] =>
  validator({ properties: { f: field } })(fields);

interface Scenario {
  name: string;
  field: Record<string, unknown> | boolean;
  /** Values of `f` that pass. */
  passes: unknown[];
  /** Values of `f` that fail, and the issue each gives. */
  fails: [unknown, Omit<RowIssue, 'pointer'> & { pointer?: string }][];
}

const keywords: Record<string, Scenario[]> = {
  type: [
    { name: 'a string', field: { type: 'string' }, passes: ['', 'a'], fails: [[1, { keyword: 'type', message: 'must be a string' }]] },
    {
      name: 'an integer, 1.0 among them',
      field: { type: 'integer' },
      passes: [1, 1.0, -3],
      fails: [
        [1.5, { keyword: 'type', message: 'must be an integer' }],
        ['1', { keyword: 'type', message: 'must be an integer' }],
      ],
    },
    {
      name: 'a list of types, null among them',
      field: { type: ['string', 'null'] },
      passes: ['a', null],
      fails: [[false, { keyword: 'type', message: 'must be a string or null' }]],
    },
    {
      name: 'objects, arrays, booleans and numbers',
      field: { type: ['object', 'array', 'boolean', 'number'] },
      passes: [{}, [], true, 1.5],
      fails: [[null, { keyword: 'type', message: 'must be an object or an array or a boolean or a number' }]],
    },
  ],
  'enum and const': [
    {
      name: 'enum by JSON equality',
      field: { enum: ['a', 1, { b: [1] }] },
      passes: ['a', 1.0, { b: [1] }],
      fails: [['b', { keyword: 'enum', message: 'must be one of "a", 1, {"b":[1]}' }]],
    },
    {
      name: 'a long enum, not quoted',
      field: { enum: ['x'.repeat(200)] },
      passes: ['x'.repeat(200)],
      fails: [['x', { keyword: 'enum', message: 'must be one of the values the schema lists' }]],
    },
    {
      name: 'enum of objects with members named as Object’s methods',
      field: { enum: [{ constructor: [1] }, { toString: null }] },
      passes: [{ constructor: [1] }, { toString: null }],
      fails: [[{ valueOf: 1 }, { keyword: 'enum', message: 'must be one of {"constructor":[1]}, {"toString":null}' }]],
    },
    {
      name: 'const of an object with a member named as one of Object’s methods',
      field: { const: { constructor: [1] } },
      passes: [{ constructor: [1] }],
      fails: [[{ toString: null }, { keyword: 'const', message: 'must be {"constructor":[1]}' }]],
    },
    {
      name: 'const',
      field: { const: { a: null } },
      passes: [{ a: null }],
      fails: [[{ a: 0 }, { keyword: 'const', message: 'must be {"a":null}' }]],
    },
  ],
  numbers: [
    {
      name: 'minimum and maximum',
      field: { minimum: 1, maximum: 3 },
      passes: [1, 3, 'not a number'],
      fails: [
        [0, { keyword: 'minimum', message: 'must be at least 1' }],
        [4, { keyword: 'maximum', message: 'must be at most 3' }],
      ],
    },
    {
      name: 'exclusiveMinimum and exclusiveMaximum',
      field: { exclusiveMinimum: 1, exclusiveMaximum: 3 },
      passes: [2, 1.5],
      fails: [
        [1, { keyword: 'exclusiveMinimum', message: 'must be greater than 1' }],
        [3, { keyword: 'exclusiveMaximum', message: 'must be less than 3' }],
      ],
    },
    {
      name: 'multipleOf, decimal fractions as written',
      field: { multipleOf: 0.01 },
      passes: [19.99, 0.07, 1e20, 0],
      fails: [[0.015, { keyword: 'multipleOf', message: 'must be a multiple of 0.01' }]],
    },
  ],
  strings: [
    {
      name: 'minLength and maxLength in characters, not UTF-16 units',
      field: { minLength: 2, maxLength: 2 },
      passes: ['ab', '😀😀'],
      fails: [
        ['😀', { keyword: 'minLength', message: 'must be at least 2 characters long' }],
        ['abc', { keyword: 'maxLength', message: 'must be at most 2 characters long' }],
      ],
    },
    {
      name: 'maxLength 1',
      field: { maxLength: 1 },
      passes: ['a'],
      fails: [['ab', { keyword: 'maxLength', message: 'must be at most 1 character long' }]],
    },
    {
      name: 'pattern, anywhere in the string unless anchored',
      field: { pattern: 'b+' },
      passes: ['abbc', 'b'],
      fails: [['ac', { keyword: 'pattern', message: 'must match the pattern b+' }]],
    },
    {
      name: 'pattern in ECMA-262 escapes',
      field: { pattern: '^\\u00e9\\p{Lu}\\d$' },
      passes: ['éA1', 'éÉ2'],
      fails: [['ea1', { keyword: 'pattern', message: 'must match the pattern ^\\u00e9\\p{Lu}\\d$' }]],
    },
    {
      name: 'pattern with a named group',
      field: { pattern: '^(?<year>\\d{4})-\\d\\d$' },
      passes: ['2024-05'],
      fails: [['24-05', { keyword: 'pattern', message: 'must match the pattern ^(?<year>\\d{4})-\\d\\d$' }]],
    },
  ],
  formats: [
    {
      name: 'date-time as RFC 3339 writes it, with its offset',
      field: { format: 'date-time' },
      passes: ['2024-05-01T12:00:00Z', '2024-05-01T12:00:00.5+02:00', 7],
      fails: [
        [
          '2024-05-01T12:00:00',
          { keyword: 'format', message: 'must be a date and time as RFC 3339 writes them, such as 2024-05-01T12:00:00Z' },
        ],
        [
          '2024-13-01T12:00:00Z',
          { keyword: 'format', message: 'must be a date and time as RFC 3339 writes them, such as 2024-05-01T12:00:00Z' },
        ],
      ],
    },
    {
      name: 'date',
      field: { format: 'date' },
      passes: ['2024-02-29'],
      fails: [['2023-02-29', { keyword: 'format', message: 'must be a date as RFC 3339 writes it, such as 2024-05-01' }]],
    },
    {
      name: 'email',
      field: { format: 'email' },
      passes: ['a.b@example.com'],
      fails: [['a@', { keyword: 'format', message: 'must be an email address' }]],
    },
    {
      name: 'uri, absolute',
      field: { format: 'uri' },
      passes: ['https://example.com/a?b#c', 'urn:isbn:0451450523'],
      fails: [['/relative', { keyword: 'format', message: 'must be an absolute URI, such as https://example.com/a' }]],
    },
    {
      name: 'uuid',
      field: { format: 'uuid' },
      passes: ['3f1c2d9e-8a4b-4c6d-9e0f-1a2b3c4d5e6f'],
      fails: [['3f1c2d9e', { keyword: 'format', message: 'must be a UUID' }]],
    },
  ],
  arrays: [
    {
      name: 'minItems and maxItems',
      field: { minItems: 1, maxItems: 2 },
      passes: [[1], [1, 2]],
      fails: [
        [[], { keyword: 'minItems', message: 'must have at least 1 item' }],
        [[1, 2, 3], { keyword: 'maxItems', message: 'must have at most 2 items' }],
      ],
    },
    {
      name: 'items of each index',
      field: { items: { type: 'string' } },
      passes: [[], ['a', 'b']],
      fails: [[['a', 'b', 3], { pointer: '/f/2', keyword: 'type', message: 'must be a string' }]],
    },
    {
      name: 'prefixItems, then no more items',
      field: { prefixItems: [{ type: 'string' }, { type: 'integer' }], items: false },
      passes: [['a', 1], ['a']],
      fails: [
        [[1], { pointer: '/f/0', keyword: 'type', message: 'must be a string' }],
        [['a', 1, null], { keyword: 'items', message: 'must have at most 2 items' }],
      ],
    },
    {
      name: 'uniqueItems by JSON equality, at the later of two equal items',
      field: { uniqueItems: true },
      passes: [[1, '1', [1], { a: 1 }, { a: 2 }]],
      fails: [
        [[{ a: 1, b: 2 }, 3, { b: 2, a: 1 }], { pointer: '/f/2', keyword: 'uniqueItems', message: 'is equal to item 0' }],
        [[1, 2, 1.0], { pointer: '/f/2', keyword: 'uniqueItems', message: 'is equal to item 0' }],
      ],
    },
    { name: 'uniqueItems false', field: { uniqueItems: false }, passes: [[1, 1]], fails: [] },
    {
      name: 'uniqueItems of objects with members named as Object’s methods',
      field: { uniqueItems: true },
      passes: [[{ toString: null }, { toString: 1 }, { constructor: [1] }, { constructor: [2] }]],
      fails: [[[{ valueOf: 1 }, { valueOf: 1.0 }], { pointer: '/f/1', keyword: 'uniqueItems', message: 'is equal to item 0' }]],
    },
  ],
  objects: [
    {
      name: 'nested properties and required, at the missing member',
      field: { type: 'object', properties: { city: { type: 'string' } }, required: ['zip'] },
      passes: [{ zip: 1 }],
      fails: [
        [
          { zip: 1, city: 2 },
          { pointer: '/f/city', keyword: 'type', message: 'must be a string' },
        ],
        [{}, { pointer: '/f/zip', keyword: 'required', message: 'is required' }],
      ],
    },
    {
      name: 'additionalProperties false, at the member not allowed',
      field: { properties: { a: {} }, additionalProperties: false },
      passes: [{ a: 1 }],
      fails: [
        [
          { a: 1, 'b/c~': 2 },
          { pointer: '/f/b~1c~0', keyword: 'additionalProperties', message: 'is not allowed by the schema' },
        ],
      ],
    },
    {
      name: 'additionalProperties as a schema, patternProperties',
      field: { patternProperties: { '^x-': { type: 'string' } }, additionalProperties: { type: 'integer' } },
      passes: [{ 'x-a': 'a', n: 1 }],
      fails: [
        [{ 'x-a': 1 }, { pointer: '/f/x-a', keyword: 'type', message: 'must be a string' }],
        [{ n: 'a' }, { pointer: '/f/n', keyword: 'type', message: 'must be an integer' }],
      ],
    },
    {
      name: 'a false subschema',
      field: { properties: { gone: false } },
      passes: [{}],
      fails: [[{ gone: null }, { pointer: '/f/gone', keyword: 'false', message: 'is not allowed by the schema' }]],
    },
    {
      name: 'a false schema of a field',
      field: false,
      passes: [],
      fails: [[1, { keyword: 'false', message: 'is not allowed by the schema' }]],
    },
  ],
  annotations: [
    {
      name: 'title, description, default, examples and $comment validate nothing',
      field: { title: 't', description: 'd', default: 'x', examples: [1], $comment: 'c' },
      passes: [1, 'a', null],
      fails: [],
    },
  ],
};

describe('row schemas', () => {
  describe('compileRowSchema', () => {
    for (const [group, scenarios] of Object.entries(keywords)) {
      describe(group, () => {
        for (const scenario of scenarios) {
          it(scenario.name, () => {
            for (const value of scenario.passes)
              expect(issuesOfField(scenario.field, { f: value }), JSON.stringify(value)).to.deep.equal([]);
            for (const [value, issue] of scenario.fails) {
              expect(issuesOfField(scenario.field, { f: value }), JSON.stringify(value)).to.deep.equal([{ pointer: '/f', ...issue }]);
            }
          });
        }
      });
    }

    describe('the id', () => {
      it('is never required of a row, though the schema requires it', () => {
        const validate = validator({ properties: { id: { type: 'integer' }, a: {} }, required: ['id', 'a'] });
        expect(validate({ a: 1 })).to.deep.equal([]);
        expect(validate({})).to.deep.equal([{ pointer: '/a', keyword: 'required', message: 'is required' }]);
      });

      it('need not be listed by a schema without additionalProperties', () => {
        expect(validator({ properties: { a: {} }, additionalProperties: false, required: ['id'] })({ a: 1 })).to.deep.equal([]);
      });

      it('is a field like any other in nested objects', () => {
        const validate = validator({ properties: { owner: { properties: { id: { type: 'string' } }, required: ['id'] } } });
        expect(validate({ owner: { id: 'u1' } })).to.deep.equal([]);
        expect(validate({ owner: {} })).to.deep.equal([{ pointer: '/owner/id', keyword: 'required', message: 'is required' }]);
      });

      it('leaves the schema it was given as it was', () => {
        const schema = checkRowSchema({ $schema: 'https://json-schema.org/draft/2020-12/schema', required: ['id', 'a'] }, '');
        compileRowSchema(schema)({});
        expect(schema).to.deep.equal({ $schema: 'https://json-schema.org/draft/2020-12/schema', required: ['id', 'a'] });
      });
    });

    describe('references', () => {
      it('follows $ref into $defs, recursively', () => {
        const validate = validator({
          properties: { tree: { $ref: '#/$defs/node' } },
          $defs: {
            node: {
              type: 'object',
              properties: { value: { type: 'integer' }, children: { type: 'array', items: { $ref: '#/$defs/node' } } },
            },
          },
        });
        expect(validate({ tree: { value: 1, children: [{ value: 2, children: [] }] } })).to.deep.equal([]);
        expect(validate({ tree: { value: 1, children: [{ value: 2, children: [{ value: 'x' }] }] } })).to.deep.equal([
          { pointer: '/tree/children/0/children/0/value', keyword: 'type', message: 'must be an integer' },
        ]);
      });

      it('follows $ref to an $anchor, and to the root', () => {
        const validate = validator({
          properties: { a: { $ref: '#short' }, parent: { $ref: '#' } },
          $defs: { s: { $anchor: 'short', maxLength: 2 } },
        });
        expect(validate({ a: 'ab', parent: { a: 'cd', parent: {} } })).to.deep.equal([]);
        expect(validate({ parent: { parent: { a: 'abc' } } })).to.deep.equal([
          { pointer: '/parent/parent/a', keyword: 'maxLength', message: 'must be at most 2 characters long' },
        ]);
      });
    });

    it('reports every issue of a row', () => {
      const validate = validator({
        properties: { email: { type: 'string', format: 'email' }, tags: { items: { type: 'string' } }, age: { minimum: 0 } },
        required: ['email', 'name'],
      });
      expect(validate({ tags: ['a', 1, 'b', false], age: -1 })).to.deep.equal([
        { pointer: '/email', keyword: 'required', message: 'is required' },
        { pointer: '/name', keyword: 'required', message: 'is required' },
        { pointer: '/tags/1', keyword: 'type', message: 'must be a string' },
        { pointer: '/tags/3', keyword: 'type', message: 'must be a string' },
        { pointer: '/age', keyword: 'minimum', message: 'must be at least 0' },
      ]);
    });

    it(`reports at most ${maxRowIssues} issues of a row`, () => {
      const issues = validator({ properties: { a: { items: { type: 'string' } } } })({ a: Array.from({ length: 10_000 }, (_, i) => i) });
      expect(issues).to.have.length(maxRowIssues);
      expect(issues[99]).to.deep.equal({ pointer: '/a/99', keyword: 'type', message: 'must be a string' });
    });

    it('counts only a row’s own fields: required: ["constructor"] is not met by every object’s prototype', () => {
      const validate = validator({ required: ['constructor', '__proto__'] });
      expect(validate({}).map((issue) => issue.pointer)).to.deep.equal(['/constructor', '/__proto__']);
      expect(validate(JSON.parse('{"constructor": 1, "__proto__": 2}'))).to.deep.equal([]);
    });

    describe('in time linear in the row', () => {
      it('tests ^(a+)+$ on 50,000 a’s and a ! within a second of CPU', () => {
        const validate = validator({ properties: { f: { pattern: '^(a+)+$' } } });
        const { result: issues, ms } = cpuTimed(() => validate({ f: `${'a'.repeat(50_000)}!` }));
        expect(ms).to.be.below(1000);
        expect(issues).to.deep.equal([{ pointer: '/f', keyword: 'pattern', message: 'must match the pattern ^(a+)+$' }]);
      });

      it('finds no two equal items among 100,000 objects within a second of CPU', () => {
        const validate = validator({ properties: { f: { uniqueItems: true } } });
        const items = Array.from({ length: 100_000 }, (_, i) => ({ n: i }));
        const { result, ms } = cpuTimed(() => validate({ f: items }));
        expect(result).to.deep.equal([]);
        expect(ms).to.be.below(1000);
      });

      it('checks each format of long hostile strings within a second of CPU each', () => {
        const validate = validator({
          properties: Object.fromEntries(['date-time', 'date', 'email', 'uri', 'uuid'].map((format) => [format, { format }])),
        });
        for (const body of ['a', 'a.', 'a-', '0', ':', '/', '%', '@', '1:', 'a@']) {
          for (const prefix of ['', 'a:', 'a://', 'x@a.', 'http://a@', '2024-05-01T']) {
            const value = `${prefix}${body.repeat(100_000 / body.length)}!`;
            const { ms } = cpuTimed(() =>
              validate(Object.fromEntries(['date-time', 'date', 'email', 'uri', 'uuid'].map((format) => [format, value]))),
            );
            expect(ms, JSON.stringify(prefix + body)).to.be.below(1000);
          }
        }
      });
    });

    it('holds nothing once its validator is dropped', async () => {
      setFlagsFromString('--expose-gc');
      const gc = runInNewContext('gc') as () => void;
      const held = compiledAndDropped();
      // A WeakRef is cleared only once the job that last read it has ended (ECMA-262, ClearKeptObjects);
      // in a process that has run the whole suite, one collection does not always reach it.
      for (let attempt = 0; attempt < 10 && held.deref() !== undefined; attempt++) {
        await new Promise((resolve) => setImmediate(resolve));
        gc();
      }
      expect(held.deref()).to.equal(undefined);
    });

    describe('properties', () => {
      /** A JSON value, of the kind a row holds. */
      const json = fc.jsonValue({ maxDepth: 3 });

      it('compares items for uniqueItems as Ajv does, in one pass, but for members named as Object’s methods', () => {
        const ajv = new Ajv2020({ strictTypes: false });
        const unique = ajv.compile({ uniqueItems: true });
        fc.assert(
          fc.property(fc.array(json, { maxLength: 6 }), (items) => {
            // Ajv's fast-deep-equal calls them: {"toString": null} throws there, and {"constructor": [1]} equals nothing.
            fc.pre(!/"(constructor|valueOf|toString)":/.test(JSON.stringify(items)));
            const withDuplicates = [...items, ...items.slice(0, 1).map((item) => JSON.parse(JSON.stringify(item)))];
            for (const list of [items, withDuplicates]) {
              const ours = new Set(list.map(canonicalJson)).size === list.length;
              expect(ours).to.equal(unique(list));
            }
          }),
        );
      });

      it('points each issue at a value of the row, or at the missing member of an object in it', () => {
        const validate = validator({
          properties: {
            a: { type: 'object', properties: { b: { type: 'integer' } }, required: ['b', 'c'], additionalProperties: { type: 'string' } },
            d: { type: 'array', prefixItems: [{ type: 'boolean' }], items: { type: 'object', required: ['e'] }, uniqueItems: true },
            'x/y': { enum: [1, 'a'] },
          },
          required: ['a'],
          additionalProperties: false,
        });
        const row = fc.dictionary(
          fc.constantFrom('a', 'd', 'x/y', 'z'),
          fc.oneof(json, fc.dictionary(fc.constantFrom('b', 'c', 'e', 'f'), json)),
        );
        fc.assert(
          fc.property(row, (fields) => {
            for (const { pointer, keyword } of validate(fields)) {
              const parent = at(fields, pointer.slice(0, pointer.lastIndexOf('/')));
              const name = unescapeToken(pointer.slice(pointer.lastIndexOf('/') + 1));
              expect(typeof parent === 'object' && parent !== null, pointer).to.equal(true);
              expect(Object.hasOwn(parent as object, name), pointer).to.equal(keyword !== 'required');
            }
          }),
        );
      });

      it('finds no issue in a row made to fit the schema', () => {
        const validate = validator({
          properties: {
            name: { type: 'string', minLength: 1, maxLength: 20, pattern: '^[a-z]+$' },
            age: { type: 'integer', minimum: 0, exclusiveMaximum: 150 },
            price: { type: 'number', multipleOf: 0.01, minimum: 0 },
            tags: { type: 'array', items: { enum: ['a', 'b', 'c'] }, uniqueItems: true, maxItems: 3 },
            when: { type: 'string', format: 'date-time' },
          },
          required: ['name', 'age'],
          additionalProperties: false,
        });
        const row = fc.record(
          {
            name: fc.stringMatching(/^[a-z]{1,20}$/),
            age: fc.integer({ min: 0, max: 149 }),
            price: fc.integer({ min: 0, max: 10_000_000 }).map((cents) => Number((cents / 100).toFixed(2))),
            tags: fc.subarray(['a', 'b', 'c']),
            when: fc.date({ noInvalidDate: true, min: new Date(0), max: new Date('9999-12-31') }).map((date) => date.toISOString()),
          },
          { requiredKeys: ['name', 'age'] },
        );
        fc.assert(fc.property(row, (fields) => void expect(validate(fields)).to.deep.equal([])));
      });
    });
  });

  describe('checkCompiles', () => {
    it('refuses what compileRowSchema refuses, with its error, and compiles what it compiles', () => {
      const schemas: Record<string, unknown>[] = [
        {
          type: 'object',
          properties: { a: { type: 'string', maxLength: 9, pattern: '^[a-z]+$' }, b: { enum: [1, 'b'] } },
          required: ['a', 'id'],
        },
        { type: 'object', $defs: { t: { $anchor: 'x', type: 'string' } }, properties: { a: { $ref: '#x' }, b: { $ref: '#/$defs/t' } } },
        { type: 'object', properties: { a: { type: 'array', prefixItems: [{ type: 'integer' }], items: { format: 'date-time' } } } },
        // Each of these Ajv refuses: an anchor named twice, a bound not a number, a pattern RE2 cannot read, a $ref to itself.
        { type: 'object', $defs: { a: { $anchor: 'x' }, b: { $anchor: 'x' } }, properties: { p: { $ref: '#x' } } },
        { type: 'object', properties: { p: { type: 'integer', maxLength: 'x' } } },
        { type: 'object', properties: { p: { pattern: '[' } } },
        { type: 'object', properties: { p: { $ref: '#/$defs/a' } }, $defs: { a: { $ref: '#/$defs/a' } } },
      ];
      const outcome = (compile: () => unknown) => {
        try {
          compile();
          return 'compiles';
        } catch (error) {
          return String((error as Error).message);
        }
      };
      const outcomes = schemas.map((schema) => [
        outcome(() => checkCompiles(schema as RowSchema)),
        outcome(() => compileRowSchema(schema as RowSchema)),
      ]);
      for (const [index, [checked, compiled]] of outcomes.entries()) expect(checked, `schema ${index}`).to.equal(compiled);
      expect(outcomes.map(([checked]) => checked === 'compiles')).to.deep.equal([true, true, true, false, false, false, false]);
    });
  });
});

/** A weak reference to part of a schema that was compiled and used, and whose validator is no more. */
function compiledAndDropped(): WeakRef<object> {
  const properties = { a: { type: 'string', pattern: '^a' } };
  expect(validator({ properties })({ a: 'b' })).to.have.length(1);
  return new WeakRef(properties);
}

/** The value at `pointer` in `value` (RFC 6901 §4), or undefined. */
function at(value: unknown, pointer: string): unknown {
  if (pointer === '') return value;
  return pointer
    .slice(1)
    .split('/')
    .reduce<unknown>(
      (parent, token) =>
        parent !== null && typeof parent === 'object' ? (parent as Record<string, unknown>)[unescapeToken(token)] : undefined,
      value,
    );
}

const unescapeToken = (token: string) => token.replaceAll('~1', '/').replaceAll('~0', '~');
