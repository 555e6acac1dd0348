// Rows written with the ids they had where they were exported (`rowbase import`; docs/operations.md,
// "Export and import"), a batch at a time, each batch all or nothing with its events: an insert event
// for each row, as if it had been inserted, so that the feed and the sort indexes see every imported
// row as they see any other. Ids only ever grow: a batch's ids must all be above the collection's last
// row id, which it moves up to its own last id (or further: an export's last row id may belong to a
// row deleted before it), so that the next row inserted takes the id it would have taken where it came
// from. Each dialect writes the rows and their sort keys in its own SQL (sqlite/rows.ts, postgres/rows.ts).
import { conflict } from '../../errors.ts';
import { assignable, eventRow, overRowBound } from '../../rows.ts';
import { collectionId } from '../collections/collections.ts';
import type { Dialect, SqlValue, UniqueIndexes, WriteTx } from '../engine/dialect.ts';
import type { ImportedRow, RowImporter } from '../engine/port.ts';
import type { SortedEntry } from '../engine/sorted.ts';
import { importAdvanceSql, lastRowIdSql } from '../engine/sql/rows.ts';
import { searchIndexOf } from '../engine/sql/search.ts';
import { appendEvents } from '../events/events.ts';
import { putWords } from '../search/indexes.ts';
import { type Fields, rowTooLarge } from './rows.ts';

export type { ImportedRow } from '../engine/port.ts';

/**
 * Writes `rows` (ids increasing, each above the collection's last row id) into the account's
 * collection `name` inside `trx`, with an insert event each and their sort and unique keys, and moves its last row
 * id up to `lastRowId` if that is past the last of them. 404 for no such collection; 409 when the
 * collection's ids reach the first of `rows` already (rows were inserted meanwhile, or imported before).
 */
export async function importRowsIn(
  db: Dialect,
  trx: WriteTx,
  importer: RowImporter,
  accountId: number,
  name: string,
  rows: ImportedRow[],
  lastRowId: number,
): Promise<void> {
  let last = 0;
  for (const { id, text } of rows) {
    if (!assignable(id) || id <= last)
      throw new Error(`imported row ids must be whole numbers from 1 that increase; ${id} follows ${last}`);
    if (overRowBound(text)) throw rowTooLarge();
    last = id;
  }
  const upTo = Math.max(last, lastRowId);
  // No rows: none can clash with the collection's, which only moves its last row id.
  const first = rows.length > 0 ? rows[0].id : Number.MAX_SAFE_INTEGER;
  const [counters] = await db.run<{
    id: number | string;
    last_seq: number | string;
    sorted: string;
    uniques: string;
    schema_id: number | string;
    search: string | null;
  }>(trx, importAdvanceSql, [rows.length, rows.length, upTo, upTo, accountId, name, first]);
  if (!counters) {
    await collectionId(db, accountId, name); // 404 when the collection is not there
    throw conflict(`The ids of collection ${name} reach ${first} already: imported rows take ids above its last one.`);
  }
  if (rows.length === 0) return;
  // The schema the rows commit under, the collection's row held (schemas.ts); each row named by its id.
  const read = <T>(sql: string, params: SqlValue[]) => db.run<T>(trx, sql, params);
  const fields = rows.map(({ text }) => JSON.parse(text) as Fields);
  await db.schemas.check(read, Number(counters.schema_id), name, fields, (index) => rows[index].id);
  const id = Number(counters.id);
  await importer.insertRows(trx, id, rows, Number(counters.last_seq) - rows.length + 1);
  const sorted = JSON.parse(counters.sorted) as SortedEntry[];
  for (const [slot, field] of sorted.entries()) await importer.keyRows(trx, id, slot, field, first, last);
  // A key another row holds fails the import: its 409 (unique.ts, keepingUnique).
  for (const [index, indexed] of JSON.parse(counters.uniques) as UniqueIndexes)
    await db.run(trx, db.uniqueKeySql.fill, [index, JSON.stringify(indexed), id, first, last]);
  const search = searchIndexOf(id, counters.search);
  if (search)
    await putWords(
      db,
      trx,
      search,
      rows.map((row, index) => ({ id: row.id, fields: fields[index] })),
    );
  await appendEvents(
    db,
    trx,
    id,
    Number(counters.last_seq),
    'insert',
    rows.map((row) => eventRow(row.id, row.text)),
  );
}

/** The last row id the account's collection `name` has handed out, or undefined when there is no such collection. */
export async function lastRowIdOf({ query }: Dialect, accountId: number, name: string): Promise<number | undefined> {
  const [found] = await query<{ last_row_id: number | string }>(lastRowIdSql, [accountId, name]);
  return found ? Number(found.last_row_id) : undefined;
}
