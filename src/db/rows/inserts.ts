// Inserts of rows (openapi.yaml, insertRows) and imports (`rowbase import`): each row checked against
// its bound and its collection's schema in Node, then written by the dialect (../engine/port.ts, RowPort:
// SQLite's writer merges the inserts into one collection queued side by side into one statement,
// PostgreSQL sends them as one statement that commits on its own), with one insert event each.
import { type OnceRequest, OnceTaken } from '../../idempotency/answers.ts';
import { overRowBound } from '../../rows.ts';
import type { Dialect } from '../engine/dialect.ts';
import { type ImportedRow, importRowsIn } from './imports.ts';
import { type Fields, type InsertedRows, insertedRows, rowTooLarge } from './rows.ts';
import { keepingUnique } from './unique.ts';

/**
 * Stores every row or none, each with the next id of the collection, and one insert event each;
 * answers the rows and their versions. `options.once`: its Idempotency-Key, whose answer the
 * statement that writes its rows stores with them (idempotency.ts), as openapi.yaml's insertRows has
 * it (201, the rows, and the ETag of a batch of one).
 *
 * `options.handOver`: `items` are the caller's to give away (a request's parsed body): once checked and
 * written as text, the array is emptied, so that a batch waiting for the write (SQLite's one writer,
 * PostgreSQL's connection) holds its rows' texts and not their objects, many times their bytes, which
 * the request would otherwise keep alive until it is answered (docs/performance.md, "A batch's rows let
 * go while it waits"). What needs the rows as fields again (a schema changed meanwhile, a unique value
 * held by an expired row) then reads them back from their texts. Without it, `items` are left as they are.
 */
export async function insertRows(
  db: Dialect,
  accountId: number,
  collection: string,
  items: Fields[],
  options?: { once?: OnceRequest; handOver?: boolean },
): Promise<InsertedRows> {
  // Node's work comes first: the write holds the collection (or SQLite's writer) from its first statement to its end.
  const texts = items.map((fields) => JSON.stringify(fields));
  if (texts.some(overRowBound)) throw rowTooLarge();
  // The rows as fields: those given, or, once handed over (the array emptied), read back from their texts.
  const fieldsOf = () => (items.length === texts.length ? items : texts.map((text) => JSON.parse(text) as Fields));
  const rows = () => fieldsOf().map((fields) => ({ fields }));
  const once = options?.once;
  // Checked against the collection's schema as last seen, which the statement makes sure is still its;
  // the rows they name, by the write (RowPort.insert).
  const insert = () =>
    db.schemas.retry(db.query, accountId, collection, async (schemaId) => {
      await db.schemas.validate(db.query, schemaId, collection, fieldsOf());
      if (options?.handOver) items.length = 0;
      try {
        return await keepingUnique(db, accountId, collection, rows, () => db.rows.insert(accountId, collection, schemaId, texts, once));
      } catch (error) {
        if (once && db.rows.isKeyTaken(error)) throw new OnceTaken();
        throw error;
      }
    });
  // A row that holds the values and has expired is deleted, with its event, and the insert tried again (unique.ts).
  return insertedRows(await insert(), texts);
}

/**
 * Stores every row or none, each with the id it gives (above the collection's last), and one insert
 * event each; moves the collection's last row id up to `lastRowId` if that is past them (imports.ts).
 */
export async function importRows(
  db: Dialect,
  accountId: number,
  collection: string,
  rows: ImportedRow[],
  lastRowId: number,
): Promise<void> {
  const written = () => rows.map(({ id, text }) => ({ id, fields: JSON.parse(text) }));
  await keepingUnique(db, accountId, collection, written, () =>
    db.rows.write((trx) => importRowsIn(db, trx, db.rows.importer, accountId, collection, rows, lastRowId)),
  );
}
