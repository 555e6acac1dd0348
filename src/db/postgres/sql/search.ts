// PostgreSQL's SQL of search indexes (docs/search.md, "How the databases are fed"): each row's words as
// a tsvector in search_rows, made of the words as they are (array_to_tsvector neither splits nor folds
// them, where to_tsvector would read them with the text search parser and the database's locale), with
// a GIN index of them.
import type { SearchSql } from '../../engine/dialect.ts';

/** The table, made by the migration 0021_search_indexes. */
export const searchTablesSql = [
  // A row's words go with it.
  `create table search_rows (collection_id integer not null, row_id bigint not null, words tsvector not null,
    primary key (collection_id, row_id), foreign key (collection_id, row_id) references rows (collection_id, id) on delete cascade)`,
  'create index search_rows_words on search_rows using gin (words)',
];

export const dropSearchTablesSql = ['drop table search_rows'];

export const searchSql: SearchSql = {
  put: `insert into search_rows (collection_id, row_id, words)
    select ?, (e ->> 0)::bigint, array_to_tsvector(string_to_array(e ->> 1, ' ')) from jsonb_array_elements(?::jsonb) e
    on conflict (collection_id, row_id) do update set words = excluded.words`,
  removeAll: 'delete from search_rows where collection_id = ?',
  // The terms of a collection are its own (searchTerms()): the GIN index finds that collection's rows only.
  match: (row) => `${row}.id in (select row_id from search_rows where words @@ (?)::tsquery)`,
  // A tsquery's text, each lexeme quoted, which the cast takes as it is: a term holds no quote or backslash.
  query: (words, prefix) => [...words.map((word) => `'${word}'`), ...(prefix === undefined ? [] : [`'${prefix}':*`])].join(' & '),
};
