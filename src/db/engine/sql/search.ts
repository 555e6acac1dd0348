// The terms both dialects' search tables hold (docs/search.md): a word of a collection's search index
// written as a term of that collection alone. The match and the scores of each dialect are its own
// (sqlite/sql/search.ts, postgres/sql/search.ts). A collection's index is its fields, in the `search`
// column of its row, which every write reads (../collections/collections.ts, advance()).

/**
 * A collection's terms of `words`: each word with the collection's id and `_` before it, so that the
 * engines' indexes, which hold every collection's words, find the terms of one collection only, as a
 * collection's index would. A word holds no `_` and no space, so a term reads back as itself.
 */
export const searchTerms = (collectionId: number, words: readonly string[]) => words.map((word) => `${collectionId}_${word}`);

/** A collection's search index as its writes keep it: the collection's id and the index's fields. */
export interface SearchIndex {
  collectionId: number;
  fields: readonly string[];
}

/** The search index of the collection `collectionId` whose `search` column holds `search` (its fields' JSON text, or null: none). */
export const searchIndexOf = (collectionId: number, search: string | null | undefined): SearchIndex | undefined =>
  search ? { collectionId, fields: JSON.parse(search) as string[] } : undefined;
