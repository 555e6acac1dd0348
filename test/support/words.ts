// Text for the tests of search (test/search/, test/db/search/).

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
