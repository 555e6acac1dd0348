// Patches applied to a row's fields: merges, JSON Merge Patch, JSON Patch, and their 409s.
import { expect } from 'chai';
import { ApiError, type FieldError } from '../../src/errors.ts';
import { applyPatch, type Patch, patchedFields, readPatch } from '../../src/patches/index.ts';
import { jsonPatchExamples, mergePatchExamples } from './rfc-examples.ts';

type Fields = Record<string, unknown>;

/** The patch `body` of `format` read and applied to `fields` (of row 7), which must be left as it was. */
function patched(format: 'merge' | 'merge-patch' | 'json-patch', fields: Fields, body: unknown): Fields {
  const before = JSON.stringify(fields);
  const result = applyPatch(readPatch(format, body), fields, 7);
  expect(JSON.stringify(fields), 'the fields handed in').to.equal(before);
  return result;
}

/** The errors of a 409 patch_conflict. */
const errorsOf = (error: ApiError) => error.options.errors as FieldError[];

/** The 409 patch_conflict applying `body` to `fields` meets. */
function conflict(fields: Fields, body: unknown): ApiError {
  try {
    applyPatch(readPatch('json-patch', body), fields, 7);
  } catch (error) {
    expect(error).to.be.instanceOf(ApiError);
    expect((error as ApiError).code).to.equal('patch_conflict');
    return error as ApiError;
  }
  throw new Error('the patch applied');
}

describe('patches', () => {
  describe('JSON Patch (RFC 6902)', () => {
    for (const { name, doc, patch, result } of jsonPatchExamples) {
      it(name, () => {
        if (result) expect(patched('json-patch', doc, patch)).to.deep.equal(result);
        else expect(errorsOf(conflict(doc, patch)).map((error) => error.name)).to.deep.equal(['/0']);
      });
    }

    const conflicts: { name: string; doc: Fields; patch: unknown[]; index: number; message: RegExp }[] = [
      {
        name: 'removes a member that is not there',
        doc: { a: 1 },
        patch: [{ op: 'remove', path: '/b' }],
        index: 0,
        message: /\/b does not exist/,
      },
      {
        name: 'replaces a member that is not there',
        doc: { a: 1 },
        patch: [{ op: 'replace', path: '/b', value: 1 }],
        index: 0,
        message: /does not exist/,
      },
      {
        name: 'adds past the end of an array',
        doc: { a: [1] },
        patch: [{ op: 'add', path: '/a/2', value: 1 }],
        index: 0,
        message: /past the end/,
      },
      {
        name: 'adds at an index with a leading zero',
        doc: { a: [1, 2] },
        patch: [{ op: 'add', path: '/a/01', value: 1 }],
        index: 0,
        message: /past the end/,
      },
      {
        name: 'goes through a string',
        doc: { a: 'text' },
        patch: [{ op: 'add', path: '/a/b', value: 1 }],
        index: 0,
        message: /\/a is not an object or array/,
      },
      {
        name: 'copies from nowhere',
        doc: { a: 1 },
        patch: [{ op: 'copy', from: '/b', path: '/c' }],
        index: 0,
        message: /\/b does not exist/,
      },
      {
        name: 'fails at its second operation, after a first that applied',
        doc: { a: 1 },
        patch: [
          { op: 'add', path: '/b', value: 2 },
          { op: 'test', path: '/a', value: 2 },
        ],
        index: 1,
        message: /is not 2/,
      },
      {
        name: 'increments a string',
        doc: { a: 'x' },
        patch: [{ op: 'increment', path: '/a', value: 1 }],
        index: 0,
        message: /\/a is not a number/,
      },
      {
        name: 'increments past the largest double',
        doc: { a: 1.7e308 },
        patch: [{ op: 'increment', path: '/a', value: 1e308 }],
        index: 0,
        message: /past/,
      },
      {
        name: 'increments a member of an object that is not there',
        doc: {},
        patch: [{ op: 'increment', path: '/a/b', value: 1 }],
        index: 0,
        message: /does not exist/,
      },
      {
        name: 'increments an array element that is not there',
        doc: { a: [] },
        patch: [{ op: 'increment', path: '/a/0', value: 1 }],
        index: 0,
        message: /does not exist/,
      },
      {
        name: 'tests an inherited member',
        doc: {},
        patch: [{ op: 'test', path: '/constructor', value: {} }],
        index: 0,
        message: /does not exist/,
      },
    ];
    for (const { name, doc, patch, index, message } of conflicts) {
      it(`is a 409 patch_conflict naming the operation when it ${name}`, () => {
        const error = conflict(doc, patch);
        expect(error.status).to.equal(409);
        expect(error.detail).to.match(new RegExp(`^Operation ${index} of the patch .* row 7`));
        expect(errorsOf(error)).to.have.length(1);
        expect(errorsOf(error)[0]).to.include({ in: 'body', name: `/${index}` });
        expect(errorsOf(error)[0].message).to.match(message);
      });
    }

    it('increments a number, counts a missing member as 0, and takes negative and fractional values', () => {
      const result = patched('json-patch', { likes: 41, nested: { n: [1, 2] } }, [
        { op: 'increment', path: '/likes', value: 1 },
        { op: 'increment', path: '/views', value: -2.5 },
        { op: 'increment', path: '/nested/n/1', value: 10 },
        { op: 'increment', path: '/nested/m', value: 3 },
      ]);
      expect(result).to.deep.equal({ likes: 42, nested: { n: [1, 12], m: 3 }, views: -2.5 });
    });

    it('keeps integers exact up to 2^53', () => {
      expect(patched('json-patch', { n: 2 ** 53 - 2 }, [{ op: 'increment', path: '/n', value: 2 }]).n).to.equal(2 ** 53);
    });

    it('tests /id against the row id, and copies it', () => {
      expect(
        patched('json-patch', { a: 1 }, [
          { op: 'test', path: '/id', value: 7 },
          { op: 'copy', from: '/id', path: '/was' },
        ]),
      ).to.deep.equal({ a: 1, was: 7 });
      expect(errorsOf(conflict({ a: 1 }, [{ op: 'test', path: '/id', value: 8 }]))[0].name).to.equal('/0');
    });

    it('tests and replaces the whole row (but its id)', () => {
      expect(
        patched('json-patch', { a: 1 }, [
          { op: 'test', path: '', value: { a: 1, id: 7 } },
          { op: 'replace', path: '', value: { b: 2 } },
        ]),
      ).to.deep.equal({ b: 2 });
      expect(patched('json-patch', { a: 1 }, [{ op: 'add', path: '', value: {} }])).to.deep.equal({});
    });

    it('compares numbers by value and objects whatever the order of their members', () => {
      const doc = { n: 1, o: { a: 1, b: [1, { c: null }] } };
      expect(
        patched('json-patch', doc, [
          { op: 'test', path: '/n', value: 1.0 },
          { op: 'test', path: '/o', value: { b: [1, { c: null }], a: 1 } },
        ]),
      ).to.deep.equal(doc);
      conflict(doc, [{ op: 'test', path: '/o', value: { a: 1 } }]);
      conflict(doc, [{ op: 'test', path: '/o/b', value: [1] }]);
    });

    it('sets and removes __proto__ and constructor as own fields, never a prototype', () => {
      const doc = JSON.parse('{"__proto__": {"x": 1}, "keep": true}') as Fields;
      const result = patched('json-patch', doc, [
        { op: 'add', path: '/constructor', value: { prototype: 1 } },
        { op: 'add', path: '/__proto__/polluted', value: true },
        { op: 'copy', from: '/__proto__', path: '/copy' },
        { op: 'add', path: '/copy/__proto__', value: { deep: true } },
        { op: 'increment', path: '/toString', value: 1 },
      ]);
      expect(JSON.stringify(result)).to.equal(
        '{"__proto__":{"x":1,"polluted":true},"keep":true,"constructor":{"prototype":1},"copy":{"x":1,"polluted":true,"__proto__":{"deep":true}},"toString":1}',
      );
      expect(Object.getPrototypeOf(result)).to.equal(Object.prototype);
      expect(({} as { polluted?: unknown }).polluted).to.equal(undefined);
      expect(
        JSON.stringify(
          patched('json-patch', result, [
            { op: 'remove', path: '/__proto__' },
            { op: 'remove', path: '/constructor' },
          ]),
        ),
      ).to.equal('{"keep":true,"copy":{"x":1,"polluted":true,"__proto__":{"deep":true}},"toString":1}');
    });

    it('refuses a patch that copies more than a row may weigh with a 413, however small the patch', () => {
      // Each copy of /a into itself doubles it: 2^30 times 16 characters, were it let.
      const patch = Array.from({ length: 30 }, (_, n) => ({ op: 'copy', from: '/a', path: `/a/c${n}` }));
      expect(() => applyPatch(readPatch('json-patch', patch), { a: { text: 'xxxxxxxx' } }, 7))
        .to.throw(ApiError)
        .with.property('code', 'payload_too_large');
    });

    it('refuses to nest a row deeper than 64 levels with a 409, but leaves a deeper row as deep as it was', () => {
      const nested = (levels: number): object => (levels <= 1 ? {} : { n: nested(levels - 1) });
      // Copying /a into its own deepest place doubles its depth each time.
      const deeper = [{ op: 'copy', from: '/a', path: `/a${'/n'.repeat(30)}/x` }];
      expect(errorsOf(conflict({ a: nested(40) }, deeper))[0].message).to.match(/deeper than 64 levels/);
      expect(errorsOf(conflict({ a: nested(10) }, [{ op: 'add', path: '/b', value: nested(64) }]))[0].message).to.match(/deeper than 64/);
      expect(patched('json-patch', { a: nested(10) }, [{ op: 'add', path: '/b', value: nested(63) }])).to.have.property('b');
      const deep = { a: nested(100) };
      expect(patched('json-patch', deep, [{ op: 'add', path: `/a${'/n'.repeat(90)}/x`, value: 1 }])).to.have.property('a');
      expect(errorsOf(conflict(deep, [{ op: 'add', path: `/a${'/n'.repeat(99)}/x`, value: {} }]))[0].message).to.match(
        /deeper than 101 levels/,
      );
    });

    it('changes nothing it was handed, however deep the operations go', () => {
      const doc = { a: { b: [{ c: 1 }] } };
      const patch = readPatch('json-patch', [
        { op: 'add', path: '/a/b/0/d', value: { e: 1 } },
        { op: 'add', path: '/a/b/0/d/f', value: 2 },
      ]);
      const first = applyPatch(patch, doc, 1);
      const second = applyPatch(patch, doc, 2);
      expect(first).to.deep.equal({ a: { b: [{ c: 1, d: { e: 1, f: 2 } }] } });
      expect(second).to.deep.equal(first);
      expect(doc).to.deep.equal({ a: { b: [{ c: 1 }] } });
      expect(patch).to.deep.equal(
        readPatch('json-patch', [
          { op: 'add', path: '/a/b/0/d', value: { e: 1 } },
          { op: 'add', path: '/a/b/0/d/f', value: 2 },
        ]),
      );
    });
  });

  describe('JSON Merge Patch (RFC 7396)', () => {
    for (const [target, patch, result] of mergePatchExamples) {
      it(`merges ${JSON.stringify(patch)} into ${JSON.stringify(target)}`, () => {
        expect(patched('merge-patch', target, patch)).to.deep.equal(result);
      });
    }

    it('merges the example of section 3', () => {
      const target = {
        title: 'Goodbye!',
        author: { givenName: 'John', familyName: 'Doe' },
        tags: ['example', 'sample'],
        content: 'This will be unchanged',
      };
      const patch = { title: 'Hello!', phoneNumber: '+01-123-456-7890', author: { familyName: null }, tags: ['example'] };
      expect(patched('merge-patch', target, patch)).to.deep.equal({
        title: 'Hello!',
        author: { givenName: 'John' },
        tags: ['example'],
        content: 'This will be unchanged',
        phoneNumber: '+01-123-456-7890',
      });
    });

    it('refuses the examples whose patch is no object (a row is one) with a 400', () => {
      for (const patch of [['c', 'd'], ['c'], null, 'bar']) {
        expect(() => readPatch('merge-patch', patch))
          .to.throw(ApiError)
          .with.property('code', 'validation_failed');
      }
    });

    it('merges into and removes __proto__ and constructor as own fields', () => {
      const target = JSON.parse('{"__proto__": {"a": 1, "b": 2}, "constructor": 1}') as Fields;
      const patch = JSON.parse('{"__proto__": {"a": null, "c": 3}, "constructor": null, "x": {"__proto__": {"polluted": true}}}');
      const result = patched('merge-patch', target, patch);
      expect(JSON.stringify(result)).to.equal('{"__proto__":{"b":2,"c":3},"x":{"__proto__":{"polluted":true}}}');
      expect(Object.getPrototypeOf(result.x)).to.equal(Object.prototype);
      expect(({} as { polluted?: unknown }).polluted).to.equal(undefined);
    });
  });

  describe('the top-level merge (application/json)', () => {
    it('replaces each field given whole, and stores null', () => {
      expect(patched('merge', { a: { b: 1 }, c: 1 }, { a: { d: 2 }, c: null })).to.deep.equal({ a: { d: 2 }, c: null });
    });
  });

  describe('patchedFields', () => {
    const cases: [Patch, readonly string[] | undefined][] = [
      [readPatch('merge', { a: 1, b: 2 }), ['a', 'b']],
      [readPatch('merge-patch', { a: { b: null } }), ['a']],
      [
        readPatch('json-patch', [
          { op: 'test', path: '/t', value: 1 },
          { op: 'move', from: '/m~1n', path: '/o/p' },
          { op: 'increment', path: '/n', value: 1 },
          { op: 'copy', from: '/x', path: '/n' },
        ]),
        ['o', 'm/n', 'n'],
      ],
      [readPatch('json-patch', [{ op: 'replace', path: '', value: {} }]), undefined],
    ];
    for (const [patch, fields] of cases) {
      it(`names ${JSON.stringify(fields)} for ${JSON.stringify(patch)}`, () => {
        expect(patchedFields(patch)).to.deep.equal(fields);
      });
    }
  });
});
