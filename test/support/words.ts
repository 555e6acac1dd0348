// Text, rows and searches for the tests of search (test/search/, test/db/search/, test/http/search.test.ts).
import fc from 'fast-check';
import { searchOf } from '../../src/search/words.ts';

/** Text of the kinds rows hold: accents, mixed case, punctuation, CJK, Hangul, emoji, marks alone, digits of other scripts. */
export const textPool = [
  'Café',
  'cafe\u0301',
  'CAFÉ',
  'naïve',
  'Straße',
  'ΟΔΟΣ',
  'İstanbul',
  'ﬁle',
  '東京都',
  'カタカナ',
  'ｶﾀｶﾅ',
  '한국어',
  '🎉',
  '👍🏽',
  '1️⃣',
  'e-mail',
  'don’t',
  '3.14',
  '٣',
  'हिन्दी',
  '\u0301',
  'Ǆ',
  'x_y',
  '\ud800',
];

/** Words in several spellings each, so that searches often name what rows hold. */
const vocabulary = ['red', 'Red', 'RÉD', 'réd', 'shoes', 'Shoe', 'café', 'CAFE', 'naïve', 'NAIVE', '東京', '京都', '한국', 'Straße'];
vocabulary.push('ΟΔΟΣ', 'οδος', 'e-mail', 'x_y', 'don’t', '42', '4²', 'a', 'ab', 'abc', 'ﬁle', 'Ｆｕｌｌ', '🎉', 'カタカナ');
const separators = [' ', '  ', ', ', '.', '\n', '—', '🎉', '_', "'"];
const text = fc
  .array(fc.tuple(fc.constantFrom(...vocabulary, ...textPool), fc.constantFrom(...separators)), { maxLength: 8 })
  .map((parts) => parts.flat().join(''));
export const row = fc.record({ title: fc.oneof(text, fc.constant(42), fc.constant(null)), body: text }, { requiredKeys: [] });
const searchText = fc
  .tuple(fc.array(fc.constantFrom(...vocabulary), { minLength: 1, maxLength: 3 }), fc.nat(4), fc.boolean())
  .map(([words, cut, whole]) => {
    const joined = words.join(' ');
    const typed = cut > 0 && joined.length > cut ? joined.slice(0, joined.length - cut) : joined;
    return whole ? `${typed} ` : typed;
  });
/** A search the service would run: one that searchOf() refuses is left out. */
export const search = searchText.filter((value) => {
  try {
    searchOf(value);
    return true;
  } catch {
    return false;
  }
});
