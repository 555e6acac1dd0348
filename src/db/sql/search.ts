// The terms both dialects' search tables hold (docs/search.md): a word of a collection's search index
// written as a term of that collection alone. The match and the scores of each dialect are its own
// (sqlite/sql/search.ts, postgres/sql/search.ts).

/**
 * A collection's terms of `words`: each word with the collection's id and `_` before it, so that the
 * engines' indexes, which hold every collection's words, find the terms of one collection only, as a
 * collection's index would. A word holds no `_` and no space, so a term reads back as itself.
 */
export const searchTerms = (collectionId: number, words: readonly string[]) => words.map((word) => `${collectionId}_${word}`);
