// Which schemas a collection can have (src/schema/check.ts), and how a refusal names what is wrong and
// where: each error's `name` is the JSON Pointer of the place in the request's body.
import { expect } from 'chai';
import { ApiError, type FieldError } from '../../src/errors.ts';
import { checkRowSchema, compileRowSchema, maxSchemaBytes, maxSchemaDepth } from '../../src/schema/index.ts';
import { cpuTimed } from '../support/cpu.ts';

/** The errors of the 400 that refuses `schema` at `where` in the body. */
function refusal(schema: unknown, where = ''): { detail: string; errors: FieldError[] } {
  try {
    checkRowSchema(schema, where);
  } catch (error) {
    expect(error).to.be.instanceOf(ApiError);
    const { code, status, detail, options } = error as ApiError;
    expect([code, status]).to.deep.equal(['validation_failed', 400]);
    return { detail, errors: (options.errors ?? []) as FieldError[] };
  }
  throw new Error(`accepted ${JSON.stringify(schema)}`);
}

/** The places (error names) of the refusal of `schema`, at the root of the body. */
const placesOf = (schema: unknown) => refusal(schema).errors.map((error) => error.name);

/** A schema of one field `a`, `field` its schema. */
const ofField = (field: unknown) => ({ type: 'object', properties: { a: field } });

/** A schema using each keyword rowbase supports, one subschema each (docs/schemas.md). */
const everyKeyword: Record<string, unknown> = {
  $schema: { $schema: 'https://json-schema.org/draft/2020-12/schema' },
  $ref: { properties: { a: { $ref: '#/$defs/d' } }, $defs: { d: {} } },
  $anchor: { properties: { a: { $ref: '#d' } }, $defs: { d: { $anchor: 'd' } } },
  $defs: { $defs: { d: { type: 'string' } } },
  $comment: ofField({ $comment: 'why' }),
  properties: { properties: { a: { type: 'string' } } },
  patternProperties: { patternProperties: { '^x-': { type: 'string' } } },
  additionalProperties: { additionalProperties: { type: 'number' } },
  prefixItems: ofField({ prefixItems: [{ type: 'string' }, true] }),
  items: ofField({ items: { type: 'string' } }),
  type: ofField({ type: ['string', 'null'] }),
  enum: ofField({ enum: [1, 'a', null, { b: [] }] }),
  const: ofField({ const: { b: 1 } }),
  multipleOf: ofField({ multipleOf: 0.5 }),
  minimum: ofField({ minimum: -1 }),
  maximum: ofField({ maximum: 1 }),
  exclusiveMinimum: ofField({ exclusiveMinimum: 0 }),
  exclusiveMaximum: ofField({ exclusiveMaximum: 0 }),
  minLength: ofField({ minLength: 1 }),
  maxLength: ofField({ maxLength: 1 }),
  pattern: ofField({ pattern: '^\\p{L}[\\w.-]*(?<tld>\\.com)?$' }),
  minItems: ofField({ minItems: 1 }),
  maxItems: ofField({ maxItems: 1 }),
  uniqueItems: ofField({ uniqueItems: true }),
  required: { required: ['a', 'b'] },
  format: { properties: Object.fromEntries(['date-time', 'date', 'email', 'uri', 'uuid'].map((format) => [format, { format }])) },
  title: ofField({ title: 'A' }),
  description: ofField({ description: 'An a.' }),
  default: ofField({ default: { anything: [1] } }),
  examples: ofField({ examples: ['x', 1] }),
  nested: ofField({ type: 'object', properties: { b: { type: 'array', items: { type: 'object', properties: { c: { const: 1 } } } } } }),
  'false and true subschemas': { properties: { a: false, b: true }, additionalProperties: false },
};

describe('row schemas', () => {
  describe('checkRowSchema', () => {
    describe('accepts every keyword rowbase supports', () => {
      for (const [keyword, schema] of Object.entries(everyKeyword)) {
        it(keyword, () => void expect(checkRowSchema(schema, '')).to.equal(schema));
      }
    });

    describe('refuses a root that is not an object schema', () => {
      for (const schema of [true, false, null, [], 'a', 1]) {
        it(JSON.stringify(schema), () => {
          expect(refusal(schema, '/schema').errors).to.deep.equal([
            { in: 'body', name: '/schema', message: 'must be a JSON object: a row schema is an object schema' },
          ]);
        });
      }
    });

    describe('refuses every other keyword, naming it', () => {
      const others = ['not', 'allOf', 'anyOf', 'oneOf', 'if', 'then', 'else', 'dependentSchemas', 'dependentRequired', 'contains'];
      const more = ['minContains', 'propertyNames', 'unevaluatedProperties', 'unevaluatedItems', 'minProperties', 'maxProperties'];
      const older = ['$id', '$dynamicRef', '$dynamicAnchor', '$vocabulary', 'definitions', 'additionalItems', 'nullable', 'x-custom'];
      for (const keyword of [...others, ...more, ...older]) {
        it(keyword, () => {
          expect(refusal(ofField({ [keyword]: {} })).errors).to.deep.equal([
            { in: 'body', name: `/properties/a/${keyword}`, message: 'is not a keyword rowbase supports' },
          ]);
        });
      }

      it('in every kind of subschema', () => {
        const schema = {
          properties: { a: { items: { not: {} }, prefixItems: [{}, { not: {} }] } },
          patternProperties: { '^p': { not: {} } },
          additionalProperties: { not: {} },
          $defs: { d: { not: {} } },
        };
        expect(placesOf(schema)).to.deep.equal([
          '/properties/a/items/not',
          '/properties/a/prefixItems/1/not',
          '/patternProperties/^p/not',
          '/additionalProperties/not',
          '/$defs/d/not',
        ]);
      });

      it('inside the body, escaping names as RFC 6901 does', () => {
        expect(refusal({ properties: { 'a/b~c': { 'x/y': 1 } } }, '/schema').errors).to.deep.equal([
          { in: 'body', name: '/schema/properties/a~1b~0c/x~1y', message: 'is not a keyword rowbase supports' },
        ]);
      });

      it('and a member named __proto__ of properties or patternProperties, which Ajv would skip', () => {
        for (const keyword of ['properties', 'patternProperties']) {
          expect(refusal(JSON.parse(`{"${keyword}": {"__proto__": {"type": "string"}}}`)).errors).to.deep.equal([
            { in: 'body', name: `/${keyword}/__proto__`, message: 'is a name rowbase cannot check' },
          ]);
        }
        expect(checkRowSchema(JSON.parse('{"$defs": {"__proto__": {}}, "required": ["__proto__"]}'), '')).to.be.an('object');
      });

      it('but not a member of a value: properties may be named after keywords', () => {
        expect(checkRowSchema({ properties: { not: {}, if: {} }, required: ['not'], default: { not: 1 } }, '')).to.be.an('object');
      });

      it('saying in the detail what and where, and how many more', () => {
        expect(refusal(ofField({ not: {}, if: {}, else: {} }), '/schema').detail).to.equal(
          "The schema's /properties/a/not is not a keyword rowbase supports (and 2 more problems: see errors).",
        );
      });

      it('listing 100 problems at most', () => {
        const { detail, errors } = refusal({
          properties: Object.fromEntries(Array.from({ length: 150 }, (_, i) => [`f${i}`, { not: {} }])),
        });
        expect(errors).to.have.length(100);
        expect(detail).to.match(/and 149 more problems/);
      });
    });

    describe('refuses a format rowbase does not check', () => {
      for (const format of ['ipv4', 'hostname', 'regex', 'uri-reference', 'time', 'duration', 'Email']) {
        it(format, () => {
          expect(refusal(ofField({ type: 'string', format })).errors).to.deep.equal([
            { in: 'body', name: '/properties/a/format', message: 'is not a format rowbase checks (date-time, date, email, uri, uuid)' },
          ]);
        });
      }
    });

    describe('refuses a $schema', () => {
      it('of another dialect', () => {
        expect(placesOf({ $schema: 'http://json-schema.org/draft-07/schema#' })).to.deep.equal(['/$schema']);
      });

      it('below the root', () => {
        const { errors } = refusal(ofField({ $schema: 'https://json-schema.org/draft/2020-12/schema' }));
        expect(errors).to.deep.equal([{ in: 'body', name: '/properties/a/$schema', message: 'is allowed at the root of the schema only' }]);
      });
    });

    describe('refuses what the meta-schema does not accept, at its place', () => {
      const scenarios: [string, unknown, string, string][] = [
        [
          'a type that is none',
          ofField({ type: 'strin' }),
          '/properties/a/type',
          'must be one of "array", "boolean", "integer", "null", "number", "object", "string"',
        ],
        ['a bound that is no number', ofField({ minimum: '1' }), '/properties/a/minimum', 'must be a number'],
        ['a negative length', ofField({ maxLength: -1 }), '/properties/a/maxLength', 'must be at least 0'],
        ['required as a string', { required: 'a' }, '/required', 'must be an array'],
        ['a required name twice', { required: ['a', 'a'] }, '/required/1', 'is equal to item 0'],
        ['items as a list (draft 4 to 2019-09)', ofField({ items: [{}] }), '/properties/a/items', 'must be an object or a boolean'],
        ['a type listed twice', ofField({ type: ['string', 'string'] }), '/properties/a/type/1', 'is equal to item 0'],
        [
          'a type that is none, in a list',
          ofField({ type: ['string', 'strin'] }),
          '/properties/a/type/1',
          'must be one of "array", "boolean", "integer", "null", "number", "object", "string"',
        ],
        ['a subschema that is a number', { properties: { a: 1 } }, '/properties/a', 'must be an object or a boolean'],
        ['a multipleOf of 0', ofField({ multipleOf: 0 }), '/properties/a/multipleOf', 'must be greater than 0'],
        [
          'an anchor that is no name',
          { $defs: { d: { $anchor: '1/x' } } },
          '/$defs/d/$anchor',
          'must match the pattern ^[A-Za-z_][-A-Za-z0-9._]*$',
        ],
      ];
      for (const [name, schema, place, message] of scenarios) {
        it(name, () => void expect(refusal(schema).errors).to.deep.equal([{ in: 'body', name: place, message }]));
      }
    });

    it('refuses a list of more types than there are, before the meta-schema compares each pair', () => {
      const type = Array.from({ length: 12_000 }, (_, i) => i);
      const started = performance.now();
      expect(refusal(ofField({ type })).errors).to.deep.equal([
        { in: 'body', name: '/properties/a/type', message: 'lists more than the 7 types there are' },
      ]);
      expect(performance.now() - started).to.be.below(100);
    });

    describe('refuses a $ref to anything outside the schema, fetching nothing', () => {
      const outside = [
        'https://example.com/x.json',
        'https://example.com/x.json#/a',
        'other.json',
        '/schemas/x',
        'urn:example:x',
        '//example.com/x',
      ];
      for (const ref of outside) {
        it(ref, () => {
          const { fetch } = globalThis;
          globalThis.fetch = () => Promise.reject(new Error('fetched'));
          try {
            expect(refusal(ofField({ $ref: ref }), '/schema').errors).to.deep.equal([
              {
                in: 'body',
                name: '/schema/properties/a/$ref',
                message: 'refers outside the schema: only #, #/… and #anchor references are allowed',
              },
            ]);
          } finally {
            globalThis.fetch = fetch;
          }
        });
      }
    });

    describe('follows a $ref inside the schema', () => {
      const scenarios: [string, Record<string, unknown>][] = [
        ['to the root', { properties: { parent: { $ref: '#' } } }],
        ['to $defs', { properties: { a: { $ref: '#/$defs/d' } }, $defs: { d: {} } }],
        ['to another property', { properties: { a: { type: 'string' }, b: { $ref: '#/properties/a' } } }],
        ['to an escaped name', { properties: { 'a/b~': {}, c: { $ref: '#/properties/a~1b~0' } } }],
        ['to a percent-encoded name', { properties: { 'é x': {}, c: { $ref: '#/properties/%C3%A9%20x' } } }],
        ['to an item', { properties: { a: { prefixItems: [{}, { type: 'string' }] }, b: { $ref: '#/properties/a/prefixItems/1' } } }],
        ['to an anchor', { properties: { a: { $ref: '#d' } }, $defs: { d: { $anchor: 'd' } } }],
        [
          'recursively, through data',
          { properties: { a: { $ref: '#/$defs/n' } }, $defs: { n: { properties: { next: { $ref: '#/$defs/n' } } } } },
        ],
      ];
      for (const [name, schema] of scenarios) it(name, () => void expect(checkRowSchema(schema, '')).to.equal(schema));
    });

    describe('refuses a $ref to no subschema of the schema', () => {
      const scenarios: [string, Record<string, unknown>, string][] = [
        ['a missing definition', ofField({ $ref: '#/$defs/none' }), 'names no subschema of this schema'],
        ['a missing anchor', ofField({ $ref: '#none' }), 'names no subschema of this schema'],
        [
          'a value that is no schema',
          { properties: { a: { $ref: '#/properties/b/default' }, b: { default: { not: {} } } } },
          'names no subschema of this schema',
        ],
        ['a map of subschemas', ofField({ $ref: '#/properties' }), 'names no subschema of this schema'],
        ['a keyword’s value', ofField({ $ref: '#/properties/a/$ref' }), 'names no subschema of this schema'],
        ['a malformed percent-encoding', ofField({ $ref: '#/properties/%zz' }), 'is not a valid URI fragment'],
      ];
      for (const [name, schema, message] of scenarios) {
        it(name, () => {
          expect(refusal(schema).errors).to.deep.equal([{ in: 'body', name: '/properties/a/$ref', message }]);
        });
      }
    });

    it('refuses $refs that lead back to themselves, which would never end, at each of them', () => {
      const schema = {
        properties: { a: { $ref: '#/$defs/x' } },
        $defs: { x: { $ref: '#/$defs/y' }, y: { $ref: '#/$defs/x' }, z: { $ref: '#/$defs/z' } },
      };
      expect(placesOf(schema)).to.deep.equal(['/$defs/x/$ref', '/$defs/y/$ref', '/$defs/z/$ref']);
      expect(refusal(schema).errors[0].message).to.equal('leads back to itself through references alone');
    });

    it('refuses an anchor declared twice', () => {
      expect(refusal({ $defs: { a: { $anchor: 'x' }, b: { $anchor: 'x' } } }).errors).to.deep.equal([
        { in: 'body', name: '/$defs/b/$anchor', message: 'names an anchor the schema has already' },
      ]);
    });

    describe('refuses a pattern that RE2 cannot run, naming it', () => {
      const re2 = 'is not a regular expression RE2 runs (it has no backreferences nor lookaround): error parsing regexp: ';
      const scenarios: [string, string, string][] = [
        ['a backreference', '^(a)\\1$', `${re2}backreference: \`\\1\``],
        ['a named backreference', '(?<x>a)\\k<x>', `${re2}backreference: \`\\k\``],
        ['a ninth backreference', '(a)(b)(c)(d)(e)(f)(g)(h)(i)\\9', `${re2}backreference: \`\\9\``],
        ['a lookahead', 'a(?=b)', `${re2}invalid or unsupported Perl syntax: \`(?=\``],
        ['a negative lookahead', 'a(?!b)', `${re2}invalid or unsupported Perl syntax: \`(?!\``],
        ['a lookbehind', '(?<=a)b', `${re2}invalid named capture: \`(?<=a)b\``],
        ['a repeat over 1000', 'a{1001}', `${re2}invalid repeat count: \`{1001}\``],
        ['no ECMA-262 regular expression', '(a', 'is not an ECMA-262 regular expression'],
        ['an escape ECMA-262 has not in unicode mode', '\\z', 'is not an ECMA-262 regular expression'],
      ];
      for (const [name, pattern, message] of scenarios) {
        it(`${name}: ${pattern}`, () => {
          expect(refusal(ofField({ pattern }), '/schema').errors).to.deep.equal([
            { in: 'body', name: '/schema/properties/a/pattern', message },
          ]);
        });
      }

      it('as a key of patternProperties', () => {
        expect(placesOf({ properties: { o: { patternProperties: { '^(a)\\1': {} } } } })).to.deep.equal([
          '/properties/o/patternProperties/^(a)\\1',
        ]);
      });

      it('past the 100 a schema may have, at the 101st', () => {
        const properties = Object.fromEntries(Array.from({ length: 101 }, (_, i) => [`p${i}`, { pattern: `^${i}` }]));
        expect(refusal({ properties }).errors).to.deep.equal([
          { in: 'body', name: '/properties/p100/pattern', message: 'is one pattern more than the 100 a schema may have' },
        ]);
        const patternProperties = Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`^${i}`, {}]));
        expect(placesOf({ patternProperties, properties: { a: { pattern: 'a' } } })).to.deep.equal(['/patternProperties/^99']);
      });

      it('past 5,000 RE2 instructions in all, at the one that takes them past', () => {
        const properties = Object.fromEntries(Array.from({ length: 6 }, (_, i) => [`p${i}`, { pattern: `${'ab'[i % 2]}{1000}` }]));
        expect(refusal({ properties }).errors).to.deep.equal([
          {
            in: 'body',
            name: '/properties/p4/pattern',
            message: "takes the schema's patterns past the 5000 RE2 instructions they may compile to (this one is 1002)",
          },
        ]);
      });

      it('refuses 64 KiB of patterns within a second of CPU, compiling none past the budget', () => {
        const properties = Object.fromEntries(Array.from({ length: 2000 }, (_, i) => [`p${i}`, { pattern: `a{${1000 - (i % 900)}}` }]));
        const { result, ms } = cpuTimed(() => placesOf({ properties }));
        expect(result).to.deep.equal(['/properties/p5/pattern', '/properties/p100/pattern']);
        expect(ms).to.be.below(1000);
      });

      // A serving process has compiled patterns before (the first schema's also pays for compiling RE2's
      // code, twice as much CPU again), and a host under load inflates a process's CPU time (two suites
      // share two cores in CI): the fewest of three schemas, each of patterns none before had.
      it('checks and compiles the most patterns it accepts within a second of CPU', () => {
        const mostPatterns = (run: number) =>
          Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`p${i}`, { pattern: `^[\\p{L}${run * 100 + i}]{46}$` }]));
        const times = [0, 1, 2, 3].map((run) => cpuTimed(() => compileRowSchema(checkRowSchema({ properties: mostPatterns(run) }, ''))).ms);
        expect(Math.min(...times.slice(1))).to.be.below(1000);
      });

      it('accepts a catastrophically backtracking one, which RE2 runs in linear time', () => {
        expect(checkRowSchema(ofField({ pattern: '^(a+)+$' }), '')).to.be.an('object');
      });
    });

    describe('the root', () => {
      it('allows objects if it has a type', () => {
        for (const type of ['object', ['object', 'null']]) expect(checkRowSchema({ type }, '')).to.be.an('object');
        for (const type of ['array', ['string', 'null']]) {
          expect(refusal({ type }).errors).to.deep.equal([
            { in: 'body', name: '/type', message: 'must allow "object": a row is an object' },
          ]);
        }
      });

      for (const keyword of ['$ref', 'enum', 'const']) {
        it(`has no ${keyword}`, () => {
          const schema = { [keyword]: keyword === '$ref' ? '#/$defs/row' : [{}], $defs: { row: {} } };
          expect(refusal(schema, '/schema').errors).to.deep.equal([
            { in: 'body', name: `/schema/${keyword}`, message: 'is not allowed at the root, which describes a row' },
          ]);
        });
      }
    });

    describe('the id', () => {
      const declared = [
        { type: 'integer' },
        { type: ['integer'] },
        { type: 'integer', title: 'Id', description: 'The row’s.', $comment: 'given', examples: [1] },
        { type: 'integer', minimum: 1 },
        { type: 'integer', minimum: 0, exclusiveMinimum: 0 },
      ];
      for (const id of declared) {
        it(`may be declared as ${JSON.stringify(id)}`, () => void expect(checkRowSchema({ properties: { id } }, '')).to.be.an('object'));
      }

      it('may be required, and left out by additionalProperties: false', () => {
        expect(checkRowSchema({ properties: { a: {} }, required: ['id'], additionalProperties: false }, '')).to.be.an('object');
      });

      const otherwise = [
        { type: 'string' },
        { type: 'number' },
        { type: ['integer', 'null'] },
        {},
        true,
        false,
        { minimum: 1 },
        { type: 'integer', maximum: 100 },
        { type: 'integer', minimum: 2 },
        { type: 'integer', exclusiveMinimum: 1 },
        { type: 'integer', default: 1 },
        { type: 'integer', enum: [1, 2] },
        { $ref: '#/$defs/id' },
      ];
      for (const id of otherwise) {
        it(`may not be declared as ${JSON.stringify(id)}`, () => {
          expect(refusal({ properties: { id }, $defs: { id: { type: 'integer' } } }, '/schema').errors).to.deep.equal([
            {
              in: 'body',
              name: '/schema/properties/id',
              message:
                'must be {"type": "integer"} (with annotations, or a minimum of at most 1): id is the positive integer the service gives each row',
            },
          ]);
        });
      }

      it('is a field like any other below the root', () => {
        expect(checkRowSchema(ofField({ properties: { id: { type: 'string' } } }), '')).to.be.an('object');
      });
    });

    describe('limits', () => {
      /** A schema whose JSON is exactly `bytes` long, in characters of `character`'s UTF-8 length. */
      const ofBytes = (bytes: number, character = 'x') => {
        const bare = JSON.stringify({ description: '' }).length;
        const count = (bytes - bare) / Buffer.byteLength(character);
        return { description: character.repeat(count) };
      };

      it(`accepts ${maxSchemaBytes} bytes of JSON, and refuses one more`, () => {
        expect(checkRowSchema(ofBytes(maxSchemaBytes), '')).to.be.an('object');
        expect(refusal(ofBytes(maxSchemaBytes + 1), '/schema').errors).to.deep.equal([
          { in: 'body', name: '/schema', message: 'is 65537 bytes as JSON, more than the 65536 (64 KiB) a schema may have' },
        ]);
      });

      it('counts the bytes of UTF-8, not characters', () => {
        expect(checkRowSchema(ofBytes(maxSchemaBytes, 'é'), '')).to.be.an('object');
        expect(placesOf(ofBytes(maxSchemaBytes + 2, 'é'))).to.deep.equal(['']);
      });

      /** A schema `depth` levels of objects deep: properties within properties. */
      const nested = (depth: number): Record<string, unknown> =>
        depth <= 2 ? { properties: {} } : { properties: { a: nested(depth - 2) } };

      it(`accepts ${maxSchemaDepth} levels of objects and arrays, and refuses the 33rd, at its place`, () => {
        expect(checkRowSchema(nested(maxSchemaDepth), '')).to.be.an('object');
        const { errors } = refusal(nested(maxSchemaDepth + 2), '/schema');
        expect(errors).to.deep.equal([
          { in: 'body', name: `/schema${'/properties/a'.repeat(16)}`, message: 'is nested deeper than the 32 levels a schema may have' },
        ]);
      });

      it('counts the levels of values too', () => {
        const deep = JSON.parse(`${'['.repeat(31)}${']'.repeat(31)}`);
        expect(checkRowSchema({ default: deep }, '')).to.be.an('object');
        expect(placesOf({ default: [deep] })).to.deep.equal([`/default${'/0'.repeat(31)}`]);
      });
    });
  });
});
