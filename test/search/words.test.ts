// The one tokenization of search (src/search/words.ts, docs/search.md "Words"): what a word is, what a
// search asks, and the properties the engines rely on when they are fed its words: a word read again is
// itself, and words joined by spaces read back as the same words.
import { expect } from 'chai';
import fc from 'fast-check';
import {
  MAX_SEARCH_CHARS,
  MAX_SEARCH_WORDS,
  MAX_WORD_CHARS,
  matchesSearch,
  rowWords,
  SearchRefused,
  searchOf,
  wordsOf,
} from '../../src/search/words.ts';
import { textPool } from '../support/words.ts';

const text = fc.array(fc.oneof(fc.constantFrom(...textPool, ' ', '  ', ',', '.'), fc.string({ unit: 'grapheme', maxLength: 6 })), {
  maxLength: 12,
});

describe('search', () => {
  describe('words', () => {
    const examples: [string, string[]][] = [
      ['Red SHOES, red shoes!', ['red', 'shoes', 'red', 'shoes']],
      ['Café crème, naïve façade', ['cafe', 'creme', 'naive', 'facade']],
      ['cafe\u0301 (decomposed)', ['cafe', 'decomposed']],
      ['Straße ẞ', ['straße', 'ß']],
      ['ΟΔΟΣ οδος', ['οδοσ', 'οδοσ']],
      ['İstanbul ISTANBUL', ['istanbul', 'istanbul']],
      ['ﬁle Ｆｕｌｌ ①', ['file', 'full', '1']],
      ['東京都に行く。', ['東', '京', '都', 'に', '行', 'く']],
      ['⺀、ー', ['ー']],
      ['abc漢字def', ['abc', '漢', '字', 'def']],
      ['한국어 텍스트', ['한국어', '텍스트']],
      ['🎉 party 👍🏽 time', ['party', 'time']],
      ["don't e-mail x_y 3.14", ['don', 't', 'e', 'mail', 'x', 'y', '3', '14']],
      ['', []],
      ['!!! ... 🎉', []],
    ];
    for (const [source, words] of examples) {
      it(`reads ${JSON.stringify(source)} as ${JSON.stringify(words)}`, () => {
        expect(wordsOf(source)).to.deep.equal(words);
      });
    }

    it(`cuts a word to its first ${MAX_WORD_CHARS} characters, never inside a surrogate pair`, () => {
      expect(wordsOf('a'.repeat(100))).to.deep.equal(['a'.repeat(MAX_WORD_CHARS)]);
      const astral = '𝐀'.repeat(100); // MATHEMATICAL BOLD CAPITAL A: NFKD makes it A
      expect(wordsOf(astral)).to.deep.equal(['a'.repeat(MAX_WORD_CHARS)]);
      const gothic = '𐌰'.repeat(100); // a letter outside the BMP that no normalization changes
      expect(wordsOf(gothic)).to.deep.equal(['𐌰'.repeat(MAX_WORD_CHARS)]);
    });

    it('makes words that read back as themselves, alone and joined by spaces', () => {
      fc.assert(
        fc.property(text, (parts) => {
          const words = wordsOf(parts.join(''));
          for (const word of words) {
            expect(wordsOf(word), word).to.deep.equal([word]);
            expect(word, word).to.match(/^[\p{L}\p{N}]+$/u);
            expect(word.toLowerCase(), word).to.equal(word);
            expect(Array.from(word).length, word).to.be.at.most(MAX_WORD_CHARS);
            expect(word.isWellFormed(), word).to.equal(true);
          }
          expect(wordsOf(words.join(' '))).to.deep.equal(words);
        }),
        { numRuns: 2000 },
      );
    });

    it('holds no ASCII character but letters and digits: the engines split at no other', () => {
      fc.assert(
        fc.property(text, (parts) => {
          for (const word of wordsOf(parts.join(''))) expect(word).to.match(/^[a-z0-9\P{ASCII}]+$/u);
        }),
        { numRuns: 1000 },
      );
    });

    it("reads a row's strings in the index's fields, in their order, and nothing of its other values", () => {
      const row = { title: 'Red shoes', body: 'Size 42', tags: ['red'], price: 42, empty: null };
      expect(rowWords(row, ['body', 'title', 'tags', 'price', 'empty', 'missing'])).to.deep.equal(['size', '42', 'red', 'shoes']);
      expect(rowWords(JSON.parse('{"__proto__":"hidden word"}'), ['__proto__'])).to.deep.equal(['hidden', 'word']);
      expect(rowWords({}, ['toString'])).to.deep.equal([]);
    });
  });

  describe('searches', () => {
    it('takes the last word as a prefix, unless the search ends outside a word', () => {
      expect(searchOf('red sho')).to.deep.equal({ words: ['red'], prefix: 'sho' });
      expect(searchOf('red shoes ')).to.deep.equal({ words: ['red', 'shoes'] });
      expect(searchOf('Red shoes!')).to.deep.equal({ words: ['red', 'shoes'] });
      expect(searchOf('Caf\u00e9')).to.deep.equal({ words: [], prefix: 'cafe' });
      expect(searchOf('cafe\u0301')).to.deep.equal({ words: [], prefix: 'cafe' });
      expect(searchOf('red red')).to.deep.equal({ words: ['red'], prefix: 'red' });
      expect(searchOf('東京')).to.deep.equal({ words: ['東'], prefix: '京' });
    });

    const refused: [string, string][] = [
      ['', 'holds no word'],
      ['   ', 'holds no word'],
      ['🎉!', 'holds no word'],
      ['a'.repeat(MAX_SEARCH_CHARS + 1), `${MAX_SEARCH_CHARS} at most`],
      [Array.from({ length: MAX_SEARCH_WORDS + 1 }, (_, n) => `w${n}`).join(' '), `${MAX_SEARCH_WORDS} at most`],
    ];
    for (const [search, reason] of refused) {
      it(`refuses ${JSON.stringify(search.slice(0, 20))}${search.length > 20 ? '…' : ''}: ${reason}`, () => {
        expect(() => searchOf(search))
          .to.throw(SearchRefused)
          .with.property('message')
          .that.includes(reason);
      });
    }

    it(`counts characters as code points: ${MAX_SEARCH_CHARS} astral characters are a search`, () => {
      expect(searchOf('𐌰'.repeat(MAX_SEARCH_CHARS)).prefix).to.equal('𐌰'.repeat(MAX_WORD_CHARS));
      expect(() => searchOf(`${'𐌰'.repeat(MAX_SEARCH_CHARS)}b`)).to.throw(SearchRefused);
      expect(searchOf(Array.from({ length: MAX_SEARCH_WORDS }, () => '字').join('')).words).to.deep.equal(['字']);
    });

    it('matches a row holding every word, and a word beginning with the prefix', () => {
      const row = wordsOf('Red running shoes, size 42');
      expect(matchesSearch(row, searchOf('red shoe'))).to.equal(true);
      expect(matchesSearch(row, searchOf('SHOES RED'))).to.equal(true);
      expect(matchesSearch(row, searchOf('run'))).to.equal(true);
      expect(matchesSearch(row, searchOf('run '))).to.equal(false);
      expect(matchesSearch(row, searchOf('red boots'))).to.equal(false);
      expect(matchesSearch(row, searchOf('hoes'))).to.equal(false);
      expect(matchesSearch([], searchOf('red'))).to.equal(false);
    });
  });
});
