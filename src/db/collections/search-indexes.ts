// The words of a collection's search index (docs/search.md), as both dialects write and search them:
// each row's words made by the one tokenization (src/search/words.ts), written beside the row in the
// write's own transaction, in the dialect's tables (Dialect.searchSql).

/**
 * A collection's terms of `words`: each word with the collection's id and `_` before it, so that the
 * engines' indexes, which hold every collection's words, find the terms of one collection only, as a
 * collection's index would. A word holds no `_` and no space, so a term reads back as itself.
 */
export const searchTerms = (collectionId: number, words: readonly string[]) => words.map((word) => `${collectionId}_${word}`);
