// PostgreSQL's SQL of search indexes (docs/search.md, "How the databases are fed"): each row's words as
// a tsvector in search_rows, made of the words as they are, with their positions (the tsvector's text,
// which the cast neither splits nor folds, where to_tsvector would read them with the text search parser
// and the database's locale), with a GIN index of them.
import type { SearchSql } from '../../engine/dialect.ts';

/** The table, made by the migration 0021_search_indexes. */
export const searchTablesSql = [
  // A row's words go with it.
  `create table search_rows (collection_id integer not null, row_id bigint not null, words tsvector not null,
    primary key (collection_id, row_id), foreign key (collection_id, row_id) references rows (collection_id, id) on delete cascade)`,
  'create index search_rows_words on search_rows using gin (words)',
];

export const dropSearchTablesSql = ['drop table search_rows'];

/** Positions PostgreSQL keeps of one lexeme at most, and the highest position it keeps (PostgreSQL's MAXNUMPOS and MAXENTRYPOS). */
const MAX_POSITIONS = 256;
const MAX_POSITION = 16383;

/**
 * A row's terms as a tsvector's text, each quoted with its positions (`'17_red':1,3 '17_shoes':2`), which
 * the cast takes as it is: a term holds no quote, backslash or space. Positions let ts_rank count how
 * often a row holds a term; array_to_tsvector() would make a tsvector without them, where every row
 * ranks alike.
 */
function tsvectorText(terms: readonly string[]): string {
  const positions = new Map<string, number[]>();
  terms.forEach((term, index) => {
    const held = positions.get(term);
    if (!held) positions.set(term, [index + 1]);
    else if (held.length < MAX_POSITIONS && index < MAX_POSITION) held.push(index + 1);
  });
  return Array.from(positions, ([term, at]) => `'${term}':${at.map((n) => Math.min(n, MAX_POSITION)).join(',')}`).join(' ');
}

export const searchSql: SearchSql = {
  put: `insert into search_rows (collection_id, row_id, words)
    select ?, (e ->> 0)::bigint, (e ->> 1)::tsvector from jsonb_array_elements(?::jsonb) e
    on conflict (collection_id, row_id) do update set words = excluded.words`,
  words: tsvectorText,
  // ts_rank (docs/search.md, "Ranking"): how often the row holds the search's terms, divided by 1 + the
  // logarithm of how many words the row holds (normalization 1).
  scores: (query) => ({
    sql: '(select collection_id, row_id, ts_rank(words, (?)::tsquery, 1)::float8 as score from search_rows where words @@ (?)::tsquery)',
    params: [query, query],
  }),
  removeAll: 'delete from search_rows where collection_id = ?',
  // The terms of a collection are its own (searchTerms()): the GIN index finds that collection's rows
  // only. The row is named by its collection too, so that no plan, whatever the statistics say, looks a
  // row's words up by its id alone: a scan of the whole index for each row (search_rows' key leads with
  // the collection).
  match: (row) => `(${row}.collection_id, ${row}.id) in (select collection_id, row_id from search_rows where words @@ (?)::tsquery)`,
  // A tsquery's text, each lexeme quoted, which the cast takes as it is: a term holds no quote or backslash.
  query: (words, prefix) => [...words.map((word) => `'${word}'`), ...(prefix === undefined ? [] : [`'${prefix}':*`])].join(' & '),
};
