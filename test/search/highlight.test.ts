// Highlights of a search (src/search/highlight.ts, docs/search.md "Highlights"): the words of a text
// found where the one tokenization finds them, and a text cut into pieces, alternately outside and
// inside the words a search matches.
import { expect } from 'chai';
import fc from 'fast-check';
import { highlightOf, rowHighlight, wordSpans } from '../../src/search/highlight.ts';
import { folded, searchOf, wordsOf } from '../../src/search/words.ts';
import { search, textPool } from '../support/words.ts';

const pieces = fc.constantFrom(...textPool, 'red', 'Shoe', 'café', ' ', ', ', '½', '㍿', 'ﬁ', 'ΌΣ', 'ハ\u3099', 'a\u0301b', '東京');
const text = fc.array(fc.oneof(pieces, fc.string({ unit: 'grapheme', maxLength: 6 })), { maxLength: 12 }).map((parts) => parts.join(''));

describe('search highlights', () => {
  it('finds the words of a text where wordsOf() finds them, in order', () => {
    fc.assert(
      fc.property(text, (value) => {
        // A character folded into letters both of a script whose characters are words and of another
        // (㋀, `1月`) is taken as one such word: its other letters do not join the word before it.
        fc.pre(!Array.from(value).some(mixed));
        const found = wordSpans(value).flatMap(({ start, end }) => wordsOf(value.slice(start, end)));
        expect(found).to.deep.equal(wordsOf(value));
      }),
      { numRuns: 2000 },
    );
  });

  it('cuts a text into pieces outside and inside the words a search matches, which join to the text', () => {
    fc.assert(
      fc.property(text, search, (value, typed) => {
        const asked = searchOf(typed);
        const cut = highlightOf(value, asked);
        if (!cut) {
          expect(wordsOf(value).some((word) => matchesOne(word, asked))).to.equal(false);
          return;
        }
        expect(cut.join('')).to.equal(value);
        expect(cut.length % 2).to.equal(1);
        // Inside, a word the search matches in each piece; outside, none.
        const inside = cut.filter((_, index) => index % 2 === 1);
        for (const piece of inside)
          expect(
            wordsOf(piece).some((word) => matchesOne(word, asked)),
            piece,
          ).to.equal(true);
        const outside = cut.filter((_, index) => index % 2 === 0);
        expect(outside.flatMap(wordsOf).filter((word) => matchesOne(word, asked))).to.deep.equal([]);
      }),
      { numRuns: 1000 },
    );
  });

  it('marks whole words, accents and all, and characters of one script run together as one piece', () => {
    expect(highlightOf('Red shoes, 東京都 and café', searchOf('red 東京 cafe'))).to.deep.equal([
      '',
      'Red',
      ' shoes, ',
      '東京',
      '都 and ',
      'café',
      '',
    ]);
    expect(highlightOf('cafe\u0301 red', searchOf('CAF'))).to.deep.equal(['', 'cafe\u0301', ' red']);
    expect(highlightOf('blue', searchOf('red'))).to.equal(undefined);
    expect(rowHighlight({ title: 'Red', body: 'blue', n: 'red' }, ['title', 'body'], searchOf('red '))).to.deep.equal({
      title: ['', 'Red', ''],
    });
  });
});

/** Whether `character` folds into letters of a script whose characters are words and into others (highlight.ts, kindOf). */
function mixed(character: string): boolean {
  const bare = folded(character);
  return (
    /[\p{scx=Han}\p{scx=Hiragana}\p{scx=Katakana}]/u.test(bare) && /[^\p{scx=Han}\p{scx=Hiragana}\p{scx=Katakana}\P{L}]|\p{N}/u.test(bare)
  );
}

/** Whether `asked` matches the word alone: one of its words, or one starting with its prefix. */
const matchesOne = (word: string, asked: ReturnType<typeof searchOf>) =>
  asked.words.includes(word) || (asked.prefix !== undefined && word.startsWith(asked.prefix));
