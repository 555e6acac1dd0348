// A page's JSON text taken apart without parsing it (src/db/reads/page-rows.ts): its elements' texts, and
// a row's top-level numbers, as JSON.parse reads them, whatever strings, escapes, nesting and white space
// the rows hold.
import { expect } from 'chai';
import fc from 'fast-check';
import { elementTexts, numbersOf, withoutLast } from '../../../src/db/reads/page-rows.ts';

type Fields = Record<string, unknown>;

/**
 * Rows as a page holds them: objects of JSON values, names and strings of any characters, as their text
 * reads back (a -0 the generator makes is written 0).
 */
const rows = fc
  .array(fc.dictionary(fc.string({ unit: 'binary' }), fc.jsonValue()), { maxLength: 8 })
  .map((page): Fields[] => JSON.parse(JSON.stringify(page)));

/** The top-level numbers of `row` named in `names`, as numbersOf() should read them off its text. */
const numbersIn = (row: Fields, names: string[]) =>
  Object.fromEntries(Object.entries(row).filter(([name, value]) => names.includes(name) && typeof value === 'number'));

describe('page rows', () => {
  it("splits a page's text into its rows' texts, each as it is in the page, with or without white space", () => {
    fc.assert(
      fc.property(rows, fc.constantFrom(undefined, 1, '\t'), (page, indent) => {
        const texts = elementTexts(JSON.stringify(page, null, indent));
        expect(texts.map((text) => JSON.parse(text))).to.deep.equal(page);
        if (indent === undefined) expect(texts).to.deep.equal(page.map((row) => JSON.stringify(row)));
      }),
    );
    expect(elementTexts('[]')).to.deep.equal([]);
    expect(elementTexts('[{"id":1,"s":"}]\\"{["},{"id":2,"a":[{"b":[]}]}]')).to.deep.equal([
      '{"id":1,"s":"}]\\"{["}',
      '{"id":2,"a":[{"b":[]}]}',
    ]);
  });

  it("drops the last of rows' texts joined by commas, whatever their strings and nesting hold", () => {
    fc.assert(
      fc.property(rows, (page) => {
        const texts = page.map((row) => JSON.stringify(row));
        expect(withoutLast(texts.join(','))).to.equal(texts.slice(0, -1).join(','));
      }),
    );
    expect(withoutLast('{"id":1,"s":"},{"},{"id":2,"a":[{"b":","}]}')).to.equal('{"id":1,"s":"},{"}');
  });

  it('reads the top-level numbers named, as JSON.parse does, and none nested or in strings', () => {
    fc.assert(
      fc.property(rows, fc.constantFrom(undefined, 1), (page, indent) => {
        for (const row of page) {
          const names = [...Object.keys(row).filter((name) => !JSON.stringify(name).includes('\\')), 'id'];
          const found = numbersOf(JSON.stringify(row, null, indent), names, '_expand');
          const escaped = Object.keys(row).some((name) => name === '_expand' || JSON.stringify(name).includes('\\'));
          expect(found).to.deep.equal(escaped ? undefined : numbersIn(row, names));
        }
      }),
    );
    const text = '{"id":12,"author_id":-1.5e3,"n":{"author_id":7},"s":"\\"author_id\\":8","m":[{"id":9}],"x":"5"}';
    expect(numbersOf(text, ['id', 'author_id', 'x'], '_expand')).to.deep.equal({ id: 12, author_id: -1500 });
    // fast-check's counterexample in CI (2026-12-04): a member named `__proto__`, own as JSON.parse makes it.
    expect(numbersOf('{"__proto__":0}', ['__proto__', 'id'], '_expand')).to.deep.equal(JSON.parse('{"__proto__":0}'));
  });

  it('leaves a row holding the reserved name, or a name written with an escape, for its reader to parse', () => {
    expect(numbersOf('{"id":1,"_expand":{"a":1}}', ['id'], '_expand')).to.equal(undefined);
    expect(numbersOf('{"id":1,"a\\u0062":2}', ['id', 'ab'], '_expand')).to.equal(undefined);
    expect(numbersOf('{"id":1,"n":{"_expand":1}}', ['id'], '_expand')).to.deep.equal({ id: 1 });
  });
});
