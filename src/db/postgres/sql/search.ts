// PostgreSQL's SQL of search indexes (docs/search.md, "How the databases are fed"): each row's words as
// a tsvector in search_rows, made of the words as they are, with their positions (the tsvector's text,
// which the cast neither splits nor folds, where to_tsvector would read them with the text search parser
// and the database's locale), with a GIN index of them.
import type { SearchSql } from '../../engine/dialect.ts';
import type { DialectSchema } from '../../engine/migrations.ts';

/** The table, made by the migration 0021_search_indexes, and how it is dropped. */
export const searchTables: DialectSchema['searchTables'] = {
  make: [
    // A row's words go with it.
    `create table search_rows (collection_id integer not null, row_id bigint not null, words tsvector not null,
    primary key (collection_id, row_id), foreign key (collection_id, row_id) references rows (collection_id, id) on delete cascade)`,
    'create index search_rows_words on search_rows using gin (words)',
  ],
  drop: ['drop table search_rows'],
};

/** Positions PostgreSQL keeps of one lexeme at most, and the highest position it keeps (PostgreSQL's MAXNUMPOS and MAXENTRYPOS). */
const MAX_POSITIONS = 256;
const MAX_POSITION = 16383;

/**
 * A row's terms as a tsvector's text, each quoted with its positions (`'17_red':1,3 '17_shoes':2`), which
 * the cast takes as it is: a term holds no quote, backslash or space. Positions let bm25() count how
 * often a row holds a term, and how many words it holds; array_to_tsvector() would make a tsvector
 * without them.
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

/** A tsquery's text, each lexeme quoted, which the cast takes as it is: a term holds no quote or backslash. */
const query = (words: readonly string[], prefix?: string) =>
  [...words.map((word) => `'${word}'`), ...(prefix === undefined ? [] : [`'${prefix}':*`])].join(' & ');

/** BM25's k1 and b, FTS5's (docs/search.md, "Ranking"), and how many words a row holds on average, taken as known. */
const K1 = 1.2;
const B = 0.75;
const AVERAGE_WORDS = 16;
/** Weights of 1 for every class of position: ts_rank_cd() of one term is how many times the row holds it. */
const TIMES = `'{1,1,1,1}'::float4[]`;

/**
 * The BM25 score of each row holding the terms (docs/search.md, "Ranking"): each term adds
 * tf (k1 + 1) / (tf + k1 (1 - b + b words / AVERAGE_WORDS)), `tf` how many times the row holds it (at
 * least once: it matched), `words` how many words the row holds. Every term is as rare as any other, and
 * a row's score reads the row alone. `tf` is ts_rank_cd() of that term alone, which counts the term's
 * positions in the row; `words` that count divided by the first term's ts_rank_cd() under normalization
 * 2 (divided by the row's words), or the row's distinct words where they were written without positions.
 * The counts are made once a row, in a LATERAL that OFFSET 0 keeps from being merged into the sum.
 */
function bm25(words: readonly string[], prefix?: string): { sql: string; params: string[] } {
  const terms = [...words.map((word) => query([word])), ...(prefix === undefined ? [] : [query([], prefix)])];
  const counts = terms.map((_, n) => `greatest(ts_rank_cd(${TIMES}, s.words, (?)::tsquery), 1)::float8 as tf${n}`);
  const held = 'coalesce(round(t.tf0 / nullif(t.share, 0)), length(s.words))';
  const sum = terms.map((_, n) => `t.tf${n} * ${K1 + 1} / (t.tf${n} + ${K1} * (1 - ${B} + ${B} * ${held} / ${AVERAGE_WORDS}))`);
  return {
    sql: `(select s.collection_id, s.row_id, ${sum.join(' + ')} as score
      from search_rows s, lateral (select ${counts.join(', ')}, ts_rank_cd(${TIMES}, s.words, (?)::tsquery, 2)::float8 as share offset 0) t
      where s.words @@ (?)::tsquery)`,
    params: [...terms, terms[0], query(words, prefix)],
  };
}

export const searchSql: SearchSql = {
  put: `insert into search_rows (collection_id, row_id, words)
    select ?, (e ->> 0)::bigint, (e ->> 1)::tsvector from jsonb_array_elements(?::jsonb) e
    on conflict (collection_id, row_id) do update set words = excluded.words`,
  words: tsvectorText,
  scores: bm25,
  removeAll: 'delete from search_rows where collection_id = ?',
  // The terms of a collection are its own (searchTerms()): the GIN index finds that collection's rows
  // only. The row is named by its collection too, so that no plan, whatever the statistics say, looks a
  // row's words up by its id alone: a scan of the whole index for each row (search_rows' key leads with
  // the collection).
  match: (row) => `(${row}.collection_id, ${row}.id) in (select collection_id, row_id from search_rows where words @@ (?)::tsquery)`,
  query,
};
