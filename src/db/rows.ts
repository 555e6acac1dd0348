import type { Knex } from 'knex';
import type { components } from '../../generated/openapi.ts';
import { ApiError, notFound, validationFailed } from '../errors.ts';
import { announceChange, announceCommitted, type DatabaseParams, notifyParams } from './changes.ts';
import { advance, collectionId, collectionIdQuery, collectionNotFound } from './collections.ts';
import { appendEvents, type EventRow } from './events.ts';
import { mergedInsert } from './merged-inserts.ts';
import {
  type Direction,
  MAX_PAGE_BYTES,
  MAX_ROW_BYTES,
  orderedRowsQuery,
  overRowBound,
  type Page,
  pathSafe,
  postgresJsonb,
  rowJsonSql,
} from './ordering.ts';
import { query, queryAlone, type WriteTx } from './query.ts';
import {
  deleteSortKeys,
  type KeyRange,
  makeSortIndex,
  postgresKeyColumns,
  presentCountQuery,
  rekeyPatchedRowPostgres,
  sortedPageQuery,
} from './sort-keys.ts';
import { insertSql, MAX_FIELDS_BY_PATH, patchSql, ROW_TOO_LARGE } from './sqlite-procedures.ts';
import type { ReadKind, SnapshotRead, SqlValue } from './sqlite-statements.ts';
import { mergedWrite, writeTransaction } from './writes.ts';

export type Row = components['schemas']['Row'];
export type Fields = Record<string, unknown>;
type StoredRow = { id: number | string; data: string };
type CollectionRow = { id: number | string; row_count: number | string; sorted: string };

/**
 * A row's JSON text from its stored text (the fields but id, as JSON.stringify wrote them), the same
 * as JSON.stringify of the row, without parsing it.
 */
const rowJson = (id: number | string, data: string) => (data === '{}' ? `{"id":${id}}` : `{"id":${id},${data.slice(1)}`);
const eventRow = (id: number, data: string): EventRow => ({ id, json: rowJson(id, data) });
/** JSON text of a value of type T. */
export type Json<T> = string & { readonly json?: T };
/**
 * Rows of a page as orderedRowsQuery and sortedPageQuery answer them: how many, their JSON texts joined
 * by commas (null for none), and the collection's latest event seq in the same snapshot (null when
 * the collection is gone).
 */
type PagePart = { n: number | string; json: string | null; seq: number | string | null; exact?: boolean };
/**
 * A page of rows as JSON text, and `seq`, the collection's latest event seq as of the snapshot the rows
 * were read from: the rows are exactly what the events up to it made, so a feed resumed with
 * `since=seq` brings every later change and none the page already shows (openapi.yaml, Rowbase-Seq).
 */
export type RowsPage = { json: Json<Row[]>; seq: number };
/**
 * A page made of its parts, in order (all read in one snapshot), how many rows it has, the seq of
 * that snapshot (null when the collection is gone), and whether its order is exact (false when a
 * PostgreSQL sort index cut a key it reads: sort-keys.ts, POSTGRES_KEY_CHARS).
 */
function joinParts(parts: PagePart[]): { count: number; json: Json<Row[]>; seq: number | null; exact: boolean } {
  // No text for rows that are there: PostgreSQL found them longer than a page may be (ordering.ts).
  if (parts.some((part) => part.json === null && Number(part.n) > 0)) throw pageTooLarge();
  const texts = parts.flatMap((part) => (part.json === null ? [] : [part.json]));
  const seq = parts[0].seq === null ? null : Number(parts[0].seq);
  const exact = parts[0].exact !== false;
  return { count: parts.reduce((count, part) => count + Number(part.n), 0), json: `[${texts.join(',')}]`, seq, exact };
}
/** 413 for a write that would make a row weigh more than MAX_ROW_BYTES (ordering.ts): nothing of it is stored. */
const rowTooLarge = () =>
  new ApiError('payload_too_large', `A row may weigh ${MAX_ROW_BYTES} bytes at most, as the JSON text of its fields.`);
const rowNotFound = (collection: string, id: number) => notFound(`There is no row ${id} in collection ${collection}.`);

/**
 * Whether `id` may name a row: the service assigns ids from 1, and a JavaScript number names no integer
 * past 2^53 − 1 exactly. Any other integer is a row that is absent (openapi.yaml, RowId: 404), and is
 * never sent to the database: PostgreSQL's bigint refuses the largest.
 */
const assignable = (id: number) => Number.isSafeInteger(id) && id >= 1;

/** The 404 of a row id that is not assignable(): of the collection, when that is absent too. */
async function noSuchRow(knex: Knex, accountId: number, collection: string, rowId: number): Promise<never> {
  await collectionId(knex, accountId, collection);
  throw rowNotFound(collection, rowId);
}

/**
 * Stores every row or none, each with the next id of the collection, and one insert event each.
 * Answers the rows as JSON text, made from the stored texts.
 */
export async function insertRows(knex: Knex, accountId: number, collection: string, items: Fields[]): Promise<Json<Row[]>> {
  // Node's work comes first: the write holds the collection's row from its first statement to its
  // commit, and every other writer of the collection waits for it.
  const texts = items.map((fields) => JSON.stringify(fields));
  if (texts.some(overRowBound)) throw rowTooLarge();
  const { sqlite } = knex.userParams as DatabaseParams;
  const insert = sqlite ? insertInOneStatementSqlite : insertInOneStatementPostgres;
  const firstId = await insert(knex, accountId, collection, texts);
  return rowsJson(firstId, texts);
}

/**
 * Rows of consecutive ids from `firstId` as rowJson() makes each, as one JSON array. Appended one
 * by one, not mapped and joined: less garbage, and less time.
 */
function rowsJson(firstId: number, texts: string[]): string {
  let json = '[';
  for (let index = 0; index < texts.length; index++) {
    if (index > 0) json += ',';
    json += rowJson(firstId + index, texts[index]);
  }
  return `${json}]`;
}

/**
 * SQLite: the rows, their events and sort keys, and the collection's counters in one statement
 * (sqlite-procedures.ts), with the rows of other inserts into the collection queued beside it
 * (writes.ts). Answers the first id.
 */
async function insertInOneStatementSqlite(knex: Knex, accountId: number, collection: string, rows: string[]): Promise<number> {
  return mergedWrite(knex, `insert/${accountId}/${collection}`, rows.length, rows, async (trx, batches: string[][]) => {
    const texts = batches.flat();
    const params = [accountId, collection, texts.length, JSON.stringify(texts), new Date().toISOString()];
    const [written] = await query<{ id: number | null; last_row_id: number }>(trx, insertSql, params);
    if (written.id === null) throw collectionNotFound(collection);
    await announceChange(trx, written.id);
    // Each request's first id: its rows follow those of the requests before it.
    const firsts: number[] = [];
    let next = written.last_row_id - texts.length + 1;
    for (const batch of batches) {
      firsts.push(next);
      next += batch.length;
    }
    return firsts;
  });
}

/**
 * PostgreSQL: the whole write in one statement, which commits on its own: the collection's row is
 * held for PostgreSQL's work alone, with no round trip to Node in between. Merged with the other
 * inserts into the collection waiting their turn in this process (merged-inserts.ts). Answers the
 * first id.
 */
function insertInOneStatementPostgres(knex: Knex, accountId: number, collection: string, texts: string[]): Promise<number> {
  return mergedInsert(knex, `${accountId}/${collection}`, texts, async (rows) => {
    // JSON.stringify's output never holds a line feed (it escapes every control character), so the
    // lines of one string are the rows: one parameter, where an array would be escaped item by item.
    const params = [accountId, collection, rows.length, rows.join('\n'), ...notifyParams(knex)];
    const [written] = await queryAlone<{ id: number; first_id: number | string }>(knex, insertBatchSql, params);
    if (!written) throw collectionNotFound(collection);
    announceCommitted(knex, Number(written.id));
    return Number(written.first_id);
  });
}

/**
 * advance(), the rows, appendEvents() and writeSortKeys() as one statement (the keys of every indexed
 * field, read from `sorted` as advance() answers it, strings escaped as ordering.ts's postgresJsonb() does).
 * $1 the account, $2 the collection's name, $3 the number of rows, $4 their texts, one a line; $5 and $6 the NOTIFY's (notifyParams). No such
 * collection: no row answered, and nothing written. Each event's row is made from the row's text as
 * eventRow() makes it. The events' time is PostgreSQL's clock once the collection's row is held (where
 * appendEvents() takes Node's, after advance()): a batch that waited its turn is not stamped before
 * the one it waited for.
 *
 * The keys read the batch once per indexed field, from inside the field's lateral subquery (`offset 0`
 * keeps the planner from flattening it into a join it may turn around): a collection with no sort
 * index then reads no row of the batch for them. Written as a join of the batch with the fields, the
 * plan would scan the whole batch against an empty list of fields, all while holding the collection's
 * row.
 */
const insertBatchSql = `with counters as (
    update collections set last_row_id = last_row_id + $3, last_seq = last_seq + $3, row_count = row_count + $3
      where account_id = $1 and name = $2
      returning id, last_row_id - $3 as before_id, last_seq - $3 as before_seq, sorted,
        to_char(clock_timestamp() at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as at
  ), batch as (
    select c.id as collection_id, c.before_id + t.ord as id, c.before_seq + t.ord as seq, t.data, c.at
      from counters c, unnest(string_to_array($4::text, chr(10))) with ordinality as t(data, ord)
  ), stored as (
    insert into rows (collection_id, id, data) select collection_id, id, data from batch
  ), logged as (
    insert into events (collection_id, seq, type, row_id, row, at)
      select collection_id, seq, 'insert', id, ${rowJsonSql}, at
        from batch
  ), keyed as (
    insert into sort_keys (collection_id, slot, row_id, rank, num, str)
      select k.collection_id, f.slot - 1, k.id, ${postgresKeyColumns('k.j')}
        from counters c,
          jsonb_array_elements_text(${postgresJsonb('c.sorted')}) with ordinality as f(field, slot),
          lateral (select b.collection_id, b.id, ${postgresJsonb('b.data')} -> f.field as j from batch b offset 0) k
  )
  select id, before_id + 1 as first_id, pg_notify($5, $6 || ' ' || id) from counters`;

/**
 * One page of rows, as JSON text (read as stored: never parsed), with the collection's latest event
 * seq read by the same statement (or, for a page of two parts, in the same snapshot); 404 when the
 * collection does not exist. A page ordered by a field reads the collection's sort index for it
 * (sort-keys.ts), made now if the collection is large enough and has none; otherwise it sorts the
 * whole collection (ordering.ts).
 */
export async function listRows(knex: Knex, accountId: number, collection: string, page: Page): Promise<RowsPage> {
  try {
    return await readPage(knex, accountId, collection, page);
  } catch (error) {
    // SQLite's page connections make no string longer than a page may be (sqlite-statements.ts).
    if ((error as { code?: string }).code === 'SQLITE_TOOBIG') throw pageTooLarge();
    throw error;
  }
}

/**
 * 400 for a page whose rows weigh more than MAX_PAGE_BYTES (ordering.ts): fewer rows at a time can be
 * read, where the whole page would not fit in memory.
 */
const pageTooLarge = () =>
  validationFailed('The rows of this page are too large to answer at once.', [
    { in: 'query', name: 'limit', message: `asks for rows that add up to more than ${MAX_PAGE_BYTES} bytes; ask for fewer` },
  ]);

async function readPage(knex: Knex, accountId: number, collection: string, page: Page): Promise<RowsPage> {
  const { sqlite, sortIndexes, knownIndexes } = knex.userParams as DatabaseParams;
  if (page.orderBy !== 'id' && sortIndexes && knownIndexes) {
    const indexed = await indexedPage(knex, { sortIndexes, knownIndexes }, accountId, collection, page);
    if (indexed) return indexed;
  }
  const { sql, params } = orderedRowsQuery(sqlite ? 'sqlite' : 'postgres', accountId, collection, page);
  const [part] = await readRows<PagePart>(knex, sql, params);
  const { json, seq } = joinParts([part]);
  if (seq === null) throw collectionNotFound(collection);
  return { json, seq };
}

/**
 * A page's reads: on SQLite on a read-only connection of `kind`, so that a page that reads a whole
 * collection to order it holds up neither row reads nor writes; through Knex on PostgreSQL.
 *
 * The functions of a page are declared here, not made in readPage() (`const read = () => …`): under
 * tsx every function made with a name is named again each time, by Object.defineProperty, which cost
 * a page more than all it did between its reads (writes.ts, hold()).
 */
async function readRows<T = StoredRow>(knex: Knex, sql: string, params: SqlValue[], kind: ReadKind = 'scan'): Promise<T[]> {
  const { sqlite } = knex.userParams as DatabaseParams;
  return sqlite ? sqlite.read<T>(sql, params, kind) : (await knex.raw(sql, params)).rows;
}

/**
 * listRows()'s page from the sort index of its field, made now if the collection is large enough and
 * has none; undefined when there is no index to read, or when its order would not be exact (a string
 * its PostgreSQL keys cut: sort-keys.ts, POSTGRES_KEY_CHARS): then the collection is sorted whole.
 */
async function indexedPage(
  knex: Knex,
  { sortIndexes, knownIndexes }: Required<Pick<DatabaseParams, 'sortIndexes' | 'knownIndexes'>>,
  accountId: number,
  collection: string,
  page: Page,
): Promise<RowsPage | undefined> {
  // A collection known to have the index: its page at once, unless the collection of that id is
  // gone (ids are never reused: the name may now be another collection's, or none).
  const known = knownIndexes.get(accountId, collection);
  const knownSlot = known?.sorted.indexOf(page.orderBy) ?? -1;
  if (known && knownSlot >= 0) {
    const { json, seq, exact } = await sortedPage(knex, known.id, knownSlot, page);
    if (seq !== null) return exact ? { json, seq } : undefined;
  }
  const [found] = await readRows<CollectionRow>(knex, collectionSql, [accountId, collection], 'point');
  if (!found) throw collectionNotFound(collection);
  const sorted = JSON.parse(found.sorted) as string[];
  let slot = sorted.indexOf(page.orderBy);
  if (slot < 0 && Number(found.row_count) >= sortIndexes.minRows && sortIndexes.max > 0) {
    slot = await makeSortIndex(knex, accountId, collection, page.orderBy, sortIndexes.max);
    if (slot === sorted.length) sorted.push(page.orderBy);
  }
  knownIndexes.set(accountId, collection, Number(found.id), sorted);
  if (slot < 0) return undefined;
  const { json, seq, exact } = await sortedPage(knex, Number(found.id), slot, page);
  // No seq: the collection was deleted since it was looked up (and maybe made again): read by name.
  return seq !== null && exact ? { json, seq } : undefined;
}

/**
 * A page from the sort index in `slot`. An ascending page, and a descending one that ends before the
 * rows missing the field, is one statement. One that reaches them reads the rest from the missing
 * ones, in the same snapshot, so that a change made meanwhile never shows half. Answers the page's
 * JSON text, made in the database (sortedPageQuery), how many rows it has, and the collection's
 * latest event seq in that snapshot (null when the collection is gone).
 */
async function sortedPage(knex: Knex, collectionId: number, slot: number, page: Page): Promise<ReturnType<typeof joinParts>> {
  const { sqlite } = knex.userParams as DatabaseParams;
  const index: SortIndex = { dialect: sqlite ? 'sqlite' : 'postgres', collectionId, slot, order: page.order };
  const present = await firstPart((sql, params) => readRows(knex, sql, params), index, page);
  if (page.order === 'asc' || Number(present.n) === page.limit) return joinParts([present]);
  // Made only for the pages that need it, which are few.
  const inSnapshot = async (read: SnapshotRead) => {
    const present = await firstPart(read, index, page);
    if (Number(present.n) === page.limit) return joinParts([present]);
    // Past the present values: the missing ones start at the offset's remainder, 0 on this page's own.
    let offset = 0;
    if (Number(present.n) === 0) {
      const count = presentCountQuery(collectionId, slot);
      const [{ n }] = await read<{ n: number | string }>(count.sql, count.params);
      offset = page.offset - Number(n);
    }
    return joinParts([present, await readPart(read, index, 'missing', page.limit - Number(present.n), offset)]);
  };
  if (sqlite) return sqlite.snapshot(inSnapshot);
  return knex.transaction((trx) => inSnapshot(async (sql, params) => (await trx.raw(sql, params)).rows), {
    isolationLevel: 'repeatable read',
    readOnly: true,
  });
}

/** Where sortedPage() reads: the index of one collection's field, in the page's order. */
interface SortIndex {
  dialect: 'sqlite' | 'postgres';
  collectionId: number;
  slot: number;
  order: Direction;
}

/** A page's first part: all of it when ascending; descending, its rows that have the field. */
const firstPart = (read: SnapshotRead, index: SortIndex, page: Page) =>
  readPart(read, index, page.order === 'asc' ? 'all' : 'present', page.limit, page.offset);

/** The rows of `range` in the sort index, from `offset`, at most `limit`, as one part of a page. */
async function readPart(
  read: SnapshotRead,
  { dialect, collectionId, slot, order }: SortIndex,
  range: KeyRange,
  limit: number,
  offset: number,
) {
  const { sql, params } = sortedPageQuery(dialect, collectionId, slot, order, range, limit, offset);
  const [joined] = await read<PagePart>(sql, params);
  return joined;
}

// The hot statements: the first two are SQLite's row reads (the read-only connection), the others run
// in a write transaction through query(), the same SQL on both backends.
/**
 * Row reads merged (SqliteStatements.readMerged): `?` is `[[account id, collection, row id], …]`. CROSS
 * JOIN keeps SQLite's planner from reading collections first: each read is two primary key lookups.
 */
const rowsSql = `select j.key as i, r.data from json_each(?) j
  cross join collections c on c.account_id = j.value ->> 0 and c.name = j.value ->> 1
  cross join rows r on r.collection_id = c.id and r.id = j.value ->> 2`;
const collectionSql = 'select id, row_count, sorted from collections where account_id = ? and name = ?';
const updateSql = 'update rows set data = ? where collection_id = ? and id = ?';
/** SQLite: a row to patch, on the writer's connection, found with its collection by name. */
const patchedRowSql = `select r.data from rows r join collections c on c.id = r.collection_id
  where c.account_id = ? and c.name = ? and r.id = ?`;
const deleteSql = 'delete from rows where collection_id = ? and id = ? returning data';

/** The row as JSON text, found with its collection in one statement; 404 for a missing row or collection. */
export async function getRow(knex: Knex, accountId: number, collection: string, rowId: number): Promise<Json<Row>> {
  if (!assignable(rowId)) return noSuchRow(knex, accountId, collection, rowId);
  const { sqlite } = knex.userParams as DatabaseParams;
  if (sqlite) {
    const [row] = await sqlite.readMerged<{ data: string }>(rowsSql, [accountId, collection, rowId]);
    if (row) return rowJson(rowId, row.data);
    const [found] = await sqlite.read(collectionSql, [accountId, collection]);
    throw found ? rowNotFound(collection, rowId) : collectionNotFound(collection);
  }
  const row = await knex('rows')
    .where({ collection_id: collectionIdQuery(knex, accountId, collection), id: rowId })
    .first('data');
  if (row) return rowJson(rowId, row.data);
  await collectionId(knex, accountId, collection);
  throw rowNotFound(collection, rowId);
}

/**
 * Top-level merge: each given field replaces the old value whole. Emits one update event; answers the
 * row as JSON text. On SQLite merged with the patches queued beside it (patchSqlite); on
 * PostgreSQL a transaction of its own.
 */
export async function updateRow(knex: Knex, accountId: number, collection: string, rowId: number, patch: Fields): Promise<Json<Row>> {
  if (!assignable(rowId)) return noSuchRow(knex, accountId, collection, rowId);
  if ((knex.userParams as DatabaseParams).sqlite) return patchSqlite(knex, accountId, collection, rowId, patch);
  return knex.transaction(async (trx) => {
    const { id, lastSeq, sorted, current } = await advance(trx, accountId, collection, 1, 0, 0, rowId);
    if (!current) throw rowNotFound(collection, rowId);
    const data = JSON.stringify({ ...JSON.parse(current), ...patch });
    if (overRowBound(data)) throw rowTooLarge();
    // One after another: pg sends a client's queries one at a time whatever the caller does (sent side
    // by side, it queued them itself, which pg 9 will no longer do).
    await query(trx, updateSql, [data, id, rowId]);
    await rekeyPatchedRowPostgres(trx, id, sorted, rowId, patch, data);
    await appendEvents(trx, id, lastSeq, 'update', [eventRow(rowId, data)]);
    return rowJson(rowId, data);
  });
}

/**
 * SQLite: the patch, merged with the other patches of the collection queued beside it into one
 * statement (writes.ts, writePatches()): json_set sets each field in the stored text, which keeps the
 * text JSON.stringify({ ...row, ...patch }) gives. Not for a field name that a JSON path cannot spell
 * (settableByPath()), nor for more than MAX_FIELDS_BY_PATH fields: then the row is read and the patch
 * made in Node, in a transaction (nothing changes the row between the two), and the whole text set at
 * `$` by the same statement.
 */
async function patchSqlite(knex: Knex, accountId: number, collection: string, rowId: number, patch: Fields): Promise<Json<Row>> {
  const names = Object.keys(patch);
  const byPath = names.length <= MAX_FIELDS_BY_PATH && names.every(settableByPath);
  // Merged with the patches that set as many fields: a statement sets a number of them (patchSql).
  const key = `patch/${accountId}/${collection}/${names.length}`;
  let answer: Json<Row> | ApiError;
  try {
    answer = byPath
      ? await mergedWrite(knex, key, 1, { rowId, fields: fieldsOf(patch) }, (trx, patches: FieldPatch[]) =>
          writePatches(trx, accountId, collection, patches),
        )
      : await writeTransaction(knex, async (trx) => {
          const [stored] = await query<{ data: string }>(trx, patchedRowSql, [accountId, collection, rowId]);
          // No row: no field to set, and writePatches() answers the 404, of the row or its collection.
          const fields = stored ? [['$', JSON.stringify({ ...JSON.parse(stored.data), ...patch })]] : [];
          return (await writePatches(trx, accountId, collection, [{ rowId, fields }]))[0];
        });
  } catch (error) {
    // The statement's trigger found the row heavier than a row may be, and stored nothing of the patch.
    if (error instanceof Error && error.message.includes(ROW_TOO_LARGE)) throw rowTooLarge();
    throw error;
  }
  if (answer instanceof ApiError) throw answer;
  return answer;
}

/** A name that JavaScript orders as an array index: before every other name of an object, in numeric order. */
const arrayIndex = /^(0|[1-9][0-9]*)$/;

/**
 * Whether json_set can set the field `name` at the path `$."name"` and keep the text JSON.stringify
 * gives. Not a name a path cannot spell (pathSafe); not an array index, which JavaScript puts before
 * the other names where json_set adds it last; and not a name that is not well-formed UTF-16 (a lone
 * surrogate): the path spells the name decoded, and SQLite would write its surrogate's bytes into the
 * text (invalid UTF-8), where JSON.stringify writes the escape `\udbff`, so the name would neither read
 * back as sent nor match the same name inserted or patched before.
 */
const settableByPath = (name: string) => pathSafe.test(name) && !arrayIndex.test(name) && name.isWellFormed();

/** A patch of row `rowId` as row_patches takes it: its fields as `[JSON path, JSON text]`. */
type FieldPatch = { rowId: number; fields: string[][] };

const fieldsOf = (patch: Fields) => Object.entries(patch).map(([name, value]) => [`$."${name}"`, JSON.stringify(value)]);

/**
 * SQLite: patches, each of one row and all of as many fields, in one statement (sqlite-procedures.ts),
 * in the order they came: each answers its row as it left it, or the 404 it met (the others are
 * stored all the same).
 */
async function writePatches(trx: WriteTx, accountId: number, collection: string, patches: FieldPatch[]) {
  const params = [accountId, collection, JSON.stringify(patches.map(({ rowId, fields }) => [rowId, fields])), new Date().toISOString()];
  const sql = patchSql(patches[0].fields.length, patches.length);
  const written = await query<{ id: number | null; i: number; data: string | null }>(trx, sql, params);
  const byIndex = new Map(written.map((row) => [Number(row.i), row]));
  let changed: number | undefined;
  const answers = patches.map(({ rowId }, index): Json<Row> | ApiError => {
    const { id = null, data = null } = byIndex.get(index) ?? {};
    if (id === null) return collectionNotFound(collection);
    if (data === null) return rowNotFound(collection, rowId);
    changed = id;
    return rowJson(rowId, data);
  });
  if (changed !== undefined) await announceChange(trx, changed);
  return answers;
}

/** Deletes the row and emits one delete event carrying the row as it was. */
export async function deleteRow(knex: Knex, accountId: number, collection: string, rowId: number): Promise<void> {
  if (!assignable(rowId)) return noSuchRow(knex, accountId, collection, rowId);
  await writeTransaction(knex, async (trx) => {
    const { id, lastSeq, sorted } = await advance(trx, accountId, collection, 1, 0, -1);
    const [deleted] = await query<{ data: string }>(trx, deleteSql, [id, rowId]);
    if (!deleted) throw rowNotFound(collection, rowId);
    if (sorted.length > 0) await deleteSortKeys(trx, id, rowId);
    await appendEvents(trx, id, lastSeq, 'delete', [eventRow(rowId, deleted.data)]);
  });
}
