// Patch bodies read in each format, and the 400 of a malformed one.
import { expect } from 'chai';
import { ApiError, type FieldError } from '../../src/errors.ts';
import { type PatchFormat, readPatch } from '../../src/patches/index.ts';

/** The errors of the 400 reading `body` as `format` meets. */
function refused(format: PatchFormat, body: unknown, at?: { in: 'body'; name: string }): FieldError[] {
  try {
    readPatch(format, body, at);
  } catch (error) {
    expect(error).to.be.instanceOf(ApiError);
    expect((error as ApiError).code).to.equal('validation_failed');
    return (error as ApiError).options.errors as FieldError[];
  }
  throw new Error('the patch was read');
}

describe('patches', () => {
  describe('readPatch', () => {
    const malformed: { name: string; format: PatchFormat; body: unknown; places: string[] }[] = [
      { name: 'a JSON Patch that is no array', format: 'json-patch', body: { op: 'add' }, places: [''] },
      { name: 'an operation that is no object', format: 'json-patch', body: [1], places: ['/0'] },
      {
        name: 'an unknown op',
        format: 'json-patch',
        body: [
          { op: 'add', path: '/a', value: 1 },
          { op: 'merge', path: '/a' },
        ],
        places: ['/1/op'],
      },
      { name: 'a missing path', format: 'json-patch', body: [{ op: 'remove' }], places: ['/0/path'] },
      {
        name: 'a path that is no JSON Pointer',
        format: 'json-patch',
        body: [
          { op: 'remove', path: 'a' },
          { op: 'remove', path: '/a~2' },
        ],
        places: ['/0/path', '/1/path'],
      },
      {
        name: 'a missing value',
        format: 'json-patch',
        body: [
          { op: 'add', path: '/a' },
          { op: 'test', path: '/a' },
        ],
        places: ['/0/value', '/1/value'],
      },
      {
        name: 'a missing from',
        format: 'json-patch',
        body: [
          { op: 'move', path: '/a' },
          { op: 'copy', path: '/a', from: 2 },
        ],
        places: ['/0/from', '/1/from'],
      },
      {
        name: 'an increment by no number',
        format: 'json-patch',
        body: [{ op: 'increment', path: '/a', value: '1' }],
        places: ['/0/value'],
      },
      {
        name: 'an operation that writes, removes or moves id',
        format: 'json-patch',
        body: [
          { op: 'replace', path: '/id', value: 2 },
          { op: 'remove', path: '/id' },
          { op: 'add', path: '/id/x', value: 1 },
          { op: 'move', from: '/id', path: '/x' },
          { op: 'copy', from: '/a', path: '/id' },
          { op: 'increment', path: '/id', value: 1 },
        ],
        places: ['/0/path', '/1/path', '/2/path', '/3/from', '/4/path', '/5/path'],
      },
      {
        name: 'an operation on the whole row but test, add or replace by an object without id',
        format: 'json-patch',
        body: [
          { op: 'remove', path: '' },
          { op: 'replace', path: '', value: [1] },
          { op: 'add', path: '', value: { id: 1 } },
          { op: 'increment', path: '', value: 1 },
        ],
        places: ['/0/path', '/1/value', '/2/value/id', '/3/path'],
      },
      { name: 'a move into itself', format: 'json-patch', body: [{ op: 'move', from: '/a', path: '/a/b' }], places: ['/0/from'] },
      { name: 'a merge patch that is no object', format: 'merge-patch', body: [1], places: [''] },
      { name: 'a merge patch naming id', format: 'merge-patch', body: { id: null }, places: ['/id'] },
      { name: 'a merge naming id', format: 'merge', body: { id: 2, a: 1 }, places: ['/id'] },
      { name: 'a merge of no field', format: 'merge', body: {}, places: [''] },
    ];
    for (const { name, format, body, places } of malformed) {
      it(`refuses ${name} with a 400 naming each place`, () => {
        expect(refused(format, body).map((error) => error.name)).to.deep.equal(places);
      });
    }

    it('names the places under the patch’s own place in a larger body', () => {
      expect(refused('json-patch', [{ op: 'remove' }], { in: 'body', name: '/operations/3/patch' })).to.deep.equal([
        { in: 'body', name: '/operations/3/patch/0/path', message: 'is required' },
      ]);
    });

    it('reads every operation of RFC 6902 and increment, and test of /id', () => {
      const operations = [
        { op: 'add', path: '/a/-', value: null },
        { op: 'remove', path: '/a~1b/0' },
        { op: 'replace', path: '/__proto__', value: {} },
        { op: 'move', from: '/a', path: '/b' },
        { op: 'copy', from: '/id', path: '/b' },
        { op: 'test', path: '/id', value: 1 },
        { op: 'test', path: '', value: {} },
        { op: 'increment', path: '/n', value: -0.5 },
        { op: 'replace', path: '', value: { a: 1 } },
      ];
      expect(readPatch('json-patch', operations)).to.deep.equal({ format: 'json-patch', operations });
      expect(readPatch('json-patch', [])).to.deep.equal({ format: 'json-patch', operations: [] });
      expect(readPatch('merge-patch', {})).to.deep.equal({ format: 'merge-patch', document: {} });
    });
  });
});
