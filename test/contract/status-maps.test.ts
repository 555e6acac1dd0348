// Maps keyed by HTTP status codes made anew for each collection's copy of an operation (src/contract/status-maps.ts):
// the same members in the same order as a plain object's, kept by V8 in a dictionary, not an array as
// long as the largest code.
import { setFlagsFromString } from 'node:v8';
import { expect } from 'chai';
import { isIndex, mapValues, statusMap } from '../../src/contract/status-maps.ts';

// V8's own answer to whether an object's elements are a dictionary (a natives function, allowed for this test's code).
setFlagsFromString('--allow-natives-syntax');
const hasDictionaryElements = new Function('object', 'return %HasDictionaryElements(object)') as (object: object) => boolean;

const responses = { '200': { description: 'ok' }, '404': { $ref: '#/components/responses/NotFound' }, '503': {}, default: {} };

describe('contract: maps of status codes', () => {
  it('copies a map of status codes with its members, their order and its JSON the same', () => {
    const copy = mapValues(responses, (value) => value);
    expect(copy).to.deep.equal(responses);
    expect(Object.keys(copy)).to.deep.equal(['200', '404', '503', 'default']);
    expect(JSON.stringify(copy)).to.equal(JSON.stringify(responses));
  });

  it('changes each value and hands the transform its key', () => {
    expect(mapValues(responses, (_, key) => key)).to.deep.equal({ '200': '200', '404': '404', '503': '503', default: 'default' });
  });

  it('keeps the codes of a copy in a dictionary, where a literal keeps them in an array', () => {
    expect(hasDictionaryElements({ ...responses })).to.equal(false);
    expect(hasDictionaryElements(mapValues(responses, (value) => value))).to.equal(true);
    expect(hasDictionaryElements(statusMap())).to.equal(true);
  });

  it('makes a map of words a plain object', () => {
    expect(hasDictionaryElements(mapValues({ description: 'x', content: {} }, (value) => value))).to.equal(false);
  });

  it('tells array indices from other keys', () => {
    expect(['0', '200', '503', '999999999'].every(isIndex)).to.equal(true);
    expect(['default', '2XX', '01', '-1', '1.5', '', '4294967295'].some(isIndex)).to.equal(false);
  });
});
