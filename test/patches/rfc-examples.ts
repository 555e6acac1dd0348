// The examples of the RFCs, as tables, for the patch module's tests and the HTTP API's (test/http/patches.test.ts).

type Fields = Record<string, unknown>;

/** An example of RFC 6902 Appendix A: a document, a patch, and the result (none: an error). */
export interface JsonPatchExample {
  name: string;
  doc: Fields;
  patch: unknown[];
  /** The patch as JSON text, where it is not JSON.stringify(patch) (A.13 sends a member twice). */
  text?: string;
  result?: Fields;
}

// Appendix A, each example as the RFC gives it (its documents are rows here: objects, without id).
/** A.13's patch: `op` twice. */
const A13 = '[{"op":"add","path":"/baz","value":"qux","op":"remove"}]';

export const jsonPatchExamples: JsonPatchExample[] = [
  {
    name: 'A.1 adds an object member',
    doc: { foo: 'bar' },
    patch: [{ op: 'add', path: '/baz', value: 'qux' }],
    result: { baz: 'qux', foo: 'bar' },
  },
  {
    name: 'A.2 adds an array element',
    doc: { foo: ['bar', 'baz'] },
    patch: [{ op: 'add', path: '/foo/1', value: 'qux' }],
    result: { foo: ['bar', 'qux', 'baz'] },
  },
  {
    name: 'A.3 removes an object member',
    doc: { baz: 'qux', foo: 'bar' },
    patch: [{ op: 'remove', path: '/baz' }],
    result: { foo: 'bar' },
  },
  {
    name: 'A.4 removes an array element',
    doc: { foo: ['bar', 'qux', 'baz'] },
    patch: [{ op: 'remove', path: '/foo/1' }],
    result: { foo: ['bar', 'baz'] },
  },
  {
    name: 'A.5 replaces a value',
    doc: { baz: 'qux', foo: 'bar' },
    patch: [{ op: 'replace', path: '/baz', value: 'boo' }],
    result: { baz: 'boo', foo: 'bar' },
  },
  {
    name: 'A.6 moves a value',
    doc: { foo: { bar: 'baz', waldo: 'fred' }, qux: { corge: 'grault' } },
    patch: [{ op: 'move', from: '/foo/waldo', path: '/qux/thud' }],
    result: { foo: { bar: 'baz' }, qux: { corge: 'grault', thud: 'fred' } },
  },
  {
    name: 'A.7 moves an array element',
    doc: { foo: ['all', 'grass', 'cows', 'eat'] },
    patch: [{ op: 'move', from: '/foo/1', path: '/foo/3' }],
    result: { foo: ['all', 'cows', 'eat', 'grass'] },
  },
  {
    name: 'A.8 tests values that are there',
    doc: { baz: 'qux', foo: ['a', 2, 'c'] },
    patch: [
      { op: 'test', path: '/baz', value: 'qux' },
      { op: 'test', path: '/foo/1', value: 2 },
    ],
    result: { baz: 'qux', foo: ['a', 2, 'c'] },
  },
  { name: 'A.9 fails a test of a value that is not there', doc: { baz: 'qux' }, patch: [{ op: 'test', path: '/baz', value: 'bar' }] },
  {
    name: 'A.10 adds a nested member object',
    doc: { foo: 'bar' },
    patch: [{ op: 'add', path: '/child', value: { grandchild: {} } }],
    result: { foo: 'bar', child: { grandchild: {} } },
  },
  {
    name: 'A.11 ignores unrecognized members',
    doc: { foo: 'bar' },
    patch: [{ op: 'add', path: '/baz', value: 'qux', xyz: 123 }],
    result: { foo: 'bar', baz: 'qux' },
  },
  { name: 'A.12 fails to add to a nonexistent target', doc: { foo: 'bar' }, patch: [{ op: 'add', path: '/baz/bat', value: 'qux' }] },
  // A.13's operation has `op` twice, which JSON.parse reads as its last (`remove`): of a member that is not there, here.
  {
    name: 'A.13 (op sent twice, read as its last) fails',
    doc: { foo: 'bar' },
    patch: JSON.parse(A13),
    text: A13,
  },
  {
    name: 'A.14 unescapes ~01 as ~1',
    doc: { '/': 9, '~1': 10 },
    patch: [{ op: 'test', path: '/~01', value: 10 }],
    result: { '/': 9, '~1': 10 },
  },
  { name: 'A.15 tells strings from numbers', doc: { '/': 9, '~1': 10 }, patch: [{ op: 'test', path: '/~01', value: '10' }] },
  {
    name: 'A.16 adds an array value',
    doc: { foo: ['bar'] },
    patch: [{ op: 'add', path: '/foo/-', value: ['abc', 'def'] }],
    result: { foo: ['bar', ['abc', 'def']] },
  },
];

// Appendix A, each example whose target and patch are objects (a row, and a merge patch of one, are).
export const mergePatchExamples: [Fields, Fields, Fields][] = [
  [{ a: 'b' }, { a: 'c' }, { a: 'c' }],
  [{ a: 'b' }, { b: 'c' }, { a: 'b', b: 'c' }],
  [{ a: 'b' }, { a: null }, {}],
  [{ a: 'b', b: 'c' }, { a: null }, { b: 'c' }],
  [{ a: ['b'] }, { a: 'c' }, { a: 'c' }],
  [{ a: 'c' }, { a: ['b'] }, { a: ['b'] }],
  [{ a: { b: 'c' } }, { a: { b: 'd', c: null } }, { a: { b: 'd' } }],
  [{ a: [{ b: 'c' }] }, { a: [1] }, { a: [1] }],
  [{ e: null }, { a: 1 }, { e: null, a: 1 }],
  [{}, { a: { bb: { ccc: null } } }, { a: { bb: {} } }],
];
