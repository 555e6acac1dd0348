// Upserts (openapi.yaml, insertRows with `on_conflict`): each row whose values of a unique index's fields
// a stored row holds patches that row (a top-level merge), every other is inserted, in the order sent,
// all in one transaction that holds the collection's row from its start, so that no other write of the
// collection comes between a row's look-up and its write. Each dialect writes a row with the statements
// of its inserts and patches (UpsertWrites), events and sort keys with them.
import { type FieldError, validationFailed } from '../../errors.ts';
import type { Once } from '../../idempotency/answers.ts';
import type { Patch } from '../../patches/index.ts';
import { type Json, overRowBound, type Row, rowJson, versionOf } from '../../rows.ts';
import { advance } from '../collections/collections.ts';
import { rowsHolding, uniqueIndexesOf, type WrittenRow } from '../collections/indexes.ts';
import type { Dialect, SqlValue, WriteTx } from '../engine/dialect.ts';
import { sweptIfExpired } from '../expiry/sweep.ts';
import { beginOnce, recordOnce } from './idempotency.ts';
import { type Fields, type RowGuard, rowTooLarge, type VersionedRow } from './rows.ts';
import { keepingUnique } from './unique.ts';
import { type RowWrites, rowWritesIn } from './writes.ts';

/** How a dialect writes one row of an upsert inside its transaction. */
export interface UpsertWrites {
  /** Inserts `fields` as a new row, checked against the schema `schemaId` already. */
  insert(schemaId: number, fields: Fields): Promise<VersionedRow>;
  /** Patches the row `rowId` with `patch`, checking it as patched against the schema, its errors naming the row `place`. */
  patch(rowId: number, patch: Patch, place: number): Promise<VersionedRow>;
  /** Told the rows tried so far, as a unique index would see them (unique.ts, keepingUnique). */
  tried(rows: WrittenRow[]): void;
}

/** What an upsert answers: the rows as stored, in the order sent, their versions, and its collection. */
export interface Upserted {
  json: Json<Row[]>;
  versions: string[];
  collectionId: number;
}

/**
 * Upserts `items` into the account's collection in one write transaction, with its Idempotency-Key's
 * answer (`options.once`): each row whose values of the unique index of `onConflict` a stored row holds
 * patches it, every other is inserted, in order, all or none, one event each; answers the rows as
 * stored, in the order sent. A unique index the rows break is its 409 (unique.ts, keepingUnique).
 */
export async function upsertRows(
  db: Dialect,
  accountId: number,
  collection: string,
  items: readonly Fields[],
  onConflict: readonly string[],
  options?: { once?: Once<Upserted>; guard?: RowGuard },
): Promise<Upserted> {
  if (items.some((fields) => overRowBound(JSON.stringify(fields)))) throw rowTooLarge();
  let tried: WrittenRow[] = [];
  try {
    return await keepingUnique(
      db,
      accountId,
      collection,
      () => tried,
      () =>
        db.rows.write(async (trx) => {
          if (options?.once) await beginOnce(db, trx, accountId, options.once);
          const writes = {
            ...upsertWritesOf(rowWritesIn(db, trx, accountId), collection, options?.guard),
            tried: (rows: WrittenRow[]) => (tried = rows),
          };
          const upserted = await upsertRowsIn(db, trx, accountId, collection, items, onConflict, writes);
          if (options?.once) await recordOnce(db, trx, accountId, options.once, upserted);
          return upserted;
        }),
    );
  } catch (error) {
    throw db.rows.isRowTooLarge(error) ? rowTooLarge() : error;
  }
}

/** An upsert's writes of one collection, made with the writes of rows inside its transaction (writes.ts, RowWrites). */
export function upsertWritesOf(writes: RowWrites, collection: string, guard?: RowGuard): Omit<UpsertWrites, 'tried'> {
  return {
    async insert(schemaId, fields) {
      guard?.creating(fields);
      const text = JSON.stringify(fields);
      const [first] = await writes.insert(collection, schemaId, [[text]]);
      return { json: rowJson(first.id, text), version: versionOf(first.collectionId, first.seq) };
    },
    patch: (rowId, patch, place) =>
      writes.patch(collection, 0, rowId, patch, undefined, place, guard && ((row, before) => guard.updating(rowId, before, row))),
  };
}

/**
 * Upserts `items` into the account's collection by the unique index whose fields are `onConflict` (400
 * naming `onConflictAt` when it has none of exactly those fields); 404 for no such collection.
 */
export async function upsertRowsIn(
  db: Dialect,
  trx: WriteTx,
  accountId: number,
  collection: string,
  items: readonly Fields[],
  onConflict: readonly string[],
  writes: UpsertWrites,
  onConflictAt: Omit<FieldError, 'message'> = { in: 'query', name: 'on_conflict' },
): Promise<Upserted> {
  const read = <T>(sql: string, params: SqlValue[]) => db.run<T>(trx, sql, params);
  const { id, schemaId, ttlField } = await advance(db, trx, accountId, collection, 0);
  const index = (await uniqueIndexesOf(read, id)).find(
    ({ fields }) => fields.length === onConflict.length && fields.every((field) => onConflict.includes(field)),
  );
  if (!index) {
    throw validationFailed(`on_conflict names the fields of a unique index of collection ${collection}, and it has none of those.`, [
      { ...onConflictAt, message: 'must name the fields of a unique index' },
    ]);
  }
  const rows: string[] = [];
  const versions: string[] = [];
  const tried: WrittenRow[] = [];
  for (const [place, fields] of items.entries()) {
    const values = index.fields.map((field) => fields[field]);
    const absent = values.some((value) => value === undefined || value === null);
    let holder: number | undefined = absent ? undefined : (await rowsHolding(db, read, id, index, values, 1))[0];
    // A holder that has expired is gone (docs/expiry.md): deleted now, with its event, and the row inserted.
    // Only a collection with a time to live has rows that expire: the others' upserts ask nothing more.
    if (holder !== undefined && ttlField !== null && (await sweptIfExpired(db, trx, accountId, collection, id, holder))) holder = undefined;
    tried.push({ id: holder, fields });
    writes.tried(tried);
    let written: VersionedRow;
    if (holder === undefined) {
      await db.schemas.check(read, schemaId, collection, [fields], () => place);
      written = await writes.insert(schemaId, fields);
    } else {
      // A top-level merge of the row's fields, as PATCH with application/json.
      written = await writes.patch(holder, { format: 'merge', fields }, place);
    }
    rows.push(written.json);
    versions.push(written.version);
  }
  return { json: `[${rows.join(',')}]`, versions, collectionId: id };
}
