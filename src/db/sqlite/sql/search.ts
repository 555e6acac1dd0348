// SQLite's SQL of search indexes (docs/search.md, "How the databases are fed"): each row's words in
// search_rows, and FTS5's index of them in search_words, an external content table over search_rows kept
// by search_rows' triggers (the FTS5 documentation's pattern), so that every change of a row's words is
// one statement of ours.
import type { SearchSql } from '../../engine/dialect.ts';
import type { DialectSchema } from '../../engine/migrations.ts';

/**
 * The tables, made by the migration 0021_search_indexes, and how they are dropped. FTS5's `ascii`
 * tokenizer splits at ASCII characters that are not letters or digits only, here also not `_`
 * (tokenchars), and takes every other character as part of a token: the words written (searchTerms(),
 * ../../sql/search.ts) read back as themselves.
 */
export const searchTables: DialectSchema['searchTables'] = {
  make: [
    // A row's words go with it (the writer's connection enforces foreign keys), its FTS5 entry with them (search_rows_deleted).
    `create table search_rows (id integer primary key, collection_id integer not null, row_id integer not null, words text not null,
    foreign key (collection_id, row_id) references rows (collection_id, id) on delete cascade)`,
    'create unique index search_rows_row on search_rows (collection_id, row_id)',
    `create virtual table search_words using fts5(words, content = 'search_rows', content_rowid = 'id', tokenize = "ascii tokenchars '_'")`,
    `create trigger search_rows_inserted after insert on search_rows begin
    insert into search_words (rowid, words) values (new.id, new.words);
  end`,
    `create trigger search_rows_deleted after delete on search_rows begin
    insert into search_words (search_words, rowid, words) values ('delete', old.id, old.words);
  end`,
    `create trigger search_rows_updated after update of words on search_rows begin
    insert into search_words (search_words, rowid, words) values ('delete', old.id, old.words);
    insert into search_words (rowid, words) values (new.id, new.words);
  end`,
  ],
  drop: ['drop table search_words', 'drop table search_rows'],
};

/** FTS5's query of each term quoted, the prefix with `*`. */
const query = (words: readonly string[], prefix?: string) =>
  [...words.map((word) => `"${word}"`), ...(prefix === undefined ? [] : [`"${prefix}"*`])].join(' ');

export const searchSql: SearchSql = {
  put: `insert into search_rows (collection_id, row_id, words) select ?, value ->> 0, value ->> 1 from json_each(?)
    where true on conflict (collection_id, row_id) do update set words = excluded.words`,
  words: (terms) => terms.join(' '),
  // FTS5's BM25 (bm25(), its k1 1.2 and b 0.75), lower the more relevant: negated. Fenced (SQLite merges
  // no subquery with an OFFSET into the query around it), so that the search runs once, whatever the
  // statistics say, never once for each row a page reads.
  scores: (words, prefix) => ({
    sql: `(select s.collection_id, s.row_id, -bm25(search_words) as score from search_words join search_rows s on s.id = search_words.rowid
      where search_words match ? limit -1 offset 0)`,
    params: [query(words, prefix)],
  }),
  removeAll: 'delete from search_rows where collection_id = ?',
  // The terms of a collection are its own (searchTerms()): FTS5 finds that collection's rows only.
  match: (row) =>
    `${row}.id in (select s.row_id from search_rows s where s.id in (select rowid from search_words where search_words match ?))`,
  query,
};
