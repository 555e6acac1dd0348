// The words of a search (docs/search.md, "Words"): one tokenization, made here and nowhere else. The
// database engines are fed the words this module makes, never the rows' text (SQLite's FTS5 and
// PostgreSQL's text search each split and fold text their own way, and neither the way of the other),
// and the feed tests a row against a search with the same words, so a search finds the same rows on
// both backends and in the feed.
//
// A word is a run of letters and digits (Unicode's general categories L and N) with its diacritics
// removed (NFKD, then every mark, category M, dropped) and its case folded (toLowerCase, which takes no
// locale, and a final sigma folded to σ). A character of the Han, Hiragana or Katakana scripts (Unicode's
// Script_Extensions) is a word of its own: Chinese and Japanese write no spaces between words, and which
// characters make a word is a matter of dictionaries, which differ between versions of ICU; one
// character a word is the same everywhere, and a search of several characters finds the rows holding
// each of them. Every other character (spaces, punctuation, symbols, emoji) separates words.
// Regular expressions, not Intl.Segmenter: its splitting of words follows the ICU of the running Node.

/** Characters a search may have at most (openapi.yaml, Search), as code points. */
export const MAX_SEARCH_CHARS = 256;

/** Words a search may have at most (openapi.yaml, Search). */
export const MAX_SEARCH_WORDS = 32;

/**
 * Characters a word keeps at most: a longer one is cut to its first MAX_WORD_CHARS, in rows and in
 * searches alike, so that it is still found. Bounds a word's length in the engines' indexes.
 */
export const MAX_WORD_CHARS = 64;

/** Marks (accents and other diacritics), dropped once NFKD has taken them off their letters. */
const marks = /\p{M}+/gu;

/** A run of letters and digits. */
const runPattern = /[\p{L}\p{N}]+/gu;

/**
 * In a run, a letter or digit of the scripts whose characters are each a word, or a run of the others.
 * Their punctuation (、) and symbols (the radical ⺀) are no part of a run: separators.
 */
const partPattern = /[\p{scx=Han}\p{scx=Hiragana}\p{scx=Katakana}]|[^\p{scx=Han}\p{scx=Hiragana}\p{scx=Katakana}]+/gu;

/** A character of the scripts whose characters are each a word (or of their punctuation or symbols). */
export const ownWordPattern = /[\p{scx=Han}\p{scx=Hiragana}\p{scx=Katakana}]/u;

/** Text of ASCII characters only, which folded() only lower-cases. */
const asciiPattern = /^\p{ASCII}*$/u;

/** The text with diacritics removed and case folded, as the words are made from it. */
export function folded(text: string): string {
  // ASCII has no mark, no decomposition and no final sigma.
  if (asciiPattern.test(text)) return text.toLowerCase();
  // Again after toLowerCase: a lower case letter may decompose where its capital did not.
  const bare = text.normalize('NFKD').replace(marks, '').toLowerCase();
  // Composed again (NFC) once bare: a Hangul syllable is one character, not its two or three jamo.
  return bare.normalize('NFKD').replace(marks, '').replaceAll('ς', 'σ').normalize('NFC');
}

/** The first MAX_WORD_CHARS characters of a word (code points: no surrogate pair is cut). */
function bounded(word: string): string {
  if (word.length <= MAX_WORD_CHARS) return word;
  return Array.from(word).slice(0, MAX_WORD_CHARS).join('');
}

/** The words of `text`, in order, repeated where it repeats them. */
export function wordsOf(text: string): string[] {
  const bare = folded(text);
  const words: string[] = [];
  // Most text holds no character that is a word of its own: its runs are its words.
  const split = ownWordPattern.test(bare);
  for (const [run] of bare.matchAll(runPattern)) {
    if (!split) words.push(bounded(run));
    else for (const [part] of run.matchAll(partPattern)) words.push(bounded(part));
  }
  return words;
}

/**
 * The words a row holds in the fields `fields` of a search index, in the order of the fields: those of
 * each field holding a string. A field missing, or holding another value (a number, an array), holds
 * none: a search does not find a row by it.
 */
export function rowWords(row: Record<string, unknown>, fields: readonly string[]): string[] {
  const words: string[] = [];
  for (const field of fields) {
    const value = Object.hasOwn(row, field) ? row[field] : undefined;
    if (typeof value === 'string') words.push(...wordsOf(value));
  }
  return words;
}

/**
 * A search as the engines and the feed run it: a row matches when it holds each of `words`, and a word
 * that begins with `prefix` (when there is one). Search-as-you-type: the last word of a search is a
 * prefix, unless the search ends with a character that is no part of a word (a space, say), which says
 * the word is whole.
 */
export interface Search {
  words: string[];
  prefix?: string;
}

/** Why a search cannot be run: openapi.yaml's 400 of `$search`. */
export class SearchRefused extends Error {}

/**
 * The search `text` asks for; SearchRefused when it is empty, longer than MAX_SEARCH_CHARS, holds no word
 * or more than MAX_SEARCH_WORDS.
 */
export function searchOf(text: string): Search {
  const length = text.length <= MAX_SEARCH_CHARS ? text.length : Array.from(text).length;
  if (length > MAX_SEARCH_CHARS) throw new SearchRefused(`is ${length} characters long; a search has ${MAX_SEARCH_CHARS} at most`);
  const words = wordsOf(text);
  if (words.length === 0) throw new SearchRefused('holds no word: a search needs at least one letter or digit');
  if (words.length > MAX_SEARCH_WORDS) throw new SearchRefused(`holds ${words.length} words; a search has ${MAX_SEARCH_WORDS} at most`);
  // The folded text, as the words are made from it: an accent typed last is part of its word.
  const last = Array.from(folded(text)).at(-1) ?? '';
  if (!wordCharacter.test(last)) return { words: [...new Set(words)] };
  const prefix = words[words.length - 1];
  return { words: [...new Set(words.slice(0, -1))], prefix };
}

/** A character that is part of a word. */
const wordCharacter = /^[\p{L}\p{N}]$/u;

/** Whether a row holding `words` (rowWords) matches the search: the reference both engines are held to. */
export function matchesSearch(words: readonly string[], search: Search): boolean {
  const held = new Set(words);
  if (!search.words.every((word) => held.has(word))) return false;
  const { prefix } = search;
  return prefix === undefined || held.has(prefix) || words.some((word) => word.startsWith(prefix));
}
