// Collections' schemas (openapi.yaml, RowSchema; docs/schemas.md): each stored as a row of its own, under
// an id that no schema of any collection takes again, which the collection names (`schema_id`, 0 for
// none). A schema is compiled into a validator once per id (RowSchemas), never per request.
//
// Every write of rows checks them against the schema of the collection it commits into: a write that
// checks its rows before its transaction (an insert) names the schema id it checked them with in the
// statement that writes them, which writes nothing when the collection's schema is another by then
// (StaleSchema: the write looks the schema up again and starts over); a write that reads its rows in
// its transaction (a patch) reads the schema id there too. Setting a schema holds the collection's row
// while it checks every stored row, so no write of the collection commits in between.
import { ApiError, collectionNotFound, notFound, type RowError, type SchemaViolation } from '../../errors.ts';
import { checkTtlField } from '../../expiry/ttl.ts';
import type { Once } from '../../idempotency/answers.ts';
import type { RowSchema } from '../../schema/check.ts';
import { compileRowSchema, type RowValidator } from '../../schema/compile.ts';
import { type AfterCommit, afterCommit } from '../engine/after-commit.ts';
import type { Dialect, Read, SchemaCache, WriteTx } from '../engine/dialect.ts';
import { StaleSchema } from '../engine/errors.ts';
import { dropOtherSchemasSql, insertSchemaSql, schemaIdSql, schemaTextSql, setSchemaIdSql } from '../engine/sql/collections.ts';
import { ttlOfCollectionSql } from '../engine/sql/expiry.ts';
import { EXPORT_PAGE_ROWS, exportRowsSql } from '../engine/sql/rows.ts';
import { checkNamed, namedRows, type RelationLinks } from '../relations/links.ts';
import { beginOnce, recordOnce } from '../rows/idempotency.ts';
import type { Fields } from '../rows/rows.ts';
import { advance } from './collections.ts';

export type { RowSchema } from '../../schema/check.ts';

/** The most places a 422 or a 409 lists (openapi.yaml, RowInvalid and SchemaConflict). */
const MAX_LISTED = 100;

/** Validators kept at most; the least recently used is dropped first (and compiled again if needed). */
const MAX_VALIDATORS = 1000;

/** Collections whose schema id is remembered at most. */
const MAX_HINTS = 10_000;

/** What a schema id stands for: the collection's schema compiled (none for a collection with relations and no schema), and its relations. */
interface Compiled {
  validate?: RowValidator;
  links?: RelationLinks;
}

/** A store's schemas: the validators compiled, by schema id, and each collection's schema id as last seen. */
export class RowSchemas implements SchemaCache {
  /** The schemas compiled, by schema id, in order of use. */
  private readonly validators = new Map<number, Compiled>();
  /** The schema id last in `validators`, when known. */
  private lastUsed?: number;
  /** By `<account id>/<collection>`: the schema id last seen, for collections that had one. */
  private readonly hints = new Map<string, number>();

  /** `existingSql`: the dialect's read of which ids are rows of a collection (../relations/links.ts, checkNamed). */
  constructor(readonly existingSql: string) {}

  /**
   * The schema id an insert into the collection checks its rows with: the one last seen, or 0 (none)
   * for a collection never seen with a schema. A guess: the insert's statement checks it.
   */
  hint(accountId: number, collection: string): number {
    return this.hints.get(`${accountId}/${collection}`) ?? 0;
  }

  /**
   * Runs `write` with the collection's schema id as last seen, and again with the one stored whenever it
   * throws StaleSchema; 404 once there is no such collection.
   */
  async retry<T>(read: Read, accountId: number, collection: string, write: (schemaId: number) => Promise<T>): Promise<T> {
    let schemaId = this.hint(accountId, collection);
    let confirmed = false;
    for (;;) {
      try {
        return await write(schemaId);
      } catch (error) {
        // Rows refused by a schema last seen, which may be the collection's no more: refused once it is.
        const refused = error instanceof ApiError && error.code === 'row_invalid';
        if (!(error instanceof StaleSchema) && !(refused && !confirmed)) throw error;
        const [found] = await read<{ schema_id: number | string }>(schemaIdSql, [accountId, collection]);
        if (!found) throw collectionNotFound(collection);
        const stored = Number(found.schema_id);
        this.note(accountId, collection, stored);
        if (refused && stored === schemaId) throw error;
        // The same id again after StaleSchema: the statement found no collection, which was there when
        // looked up again (deleted and made anew in between). The next try finds it, or its absence.
        schemaId = stored;
        confirmed = true;
      }
    }
  }

  /** Remembers the collection's schema id (0: none). */
  note(accountId: number, collection: string, schemaId: number): void {
    const key = `${accountId}/${collection}`;
    this.hints.delete(key);
    if (schemaId === 0) return;
    this.hints.set(key, schemaId);
    if (this.hints.size > MAX_HINTS) this.hints.delete(this.hints.keys().next().value as string);
  }

  /**
   * The schema `schemaId` compiled, from its text the first time it is asked for. The text
   * is read with the caller's own `read`, never awaited from another caller's read: a write in a
   * transaction reads on the connection it holds, and waiting for a read that waits for that very
   * connection (SQLite's one writer, or a pool of one) would hold every write until the driver gave up.
   * Callers that miss at once each read the text; the first back compiles it, the others find it kept.
   * StaleSchema when the schema is gone (replaced and dropped since its id was seen).
   */
  private async compiled(read: Read, schemaId: number): Promise<Compiled> {
    const kept = this.kept(schemaId);
    if (kept) return kept;
    const [row] = await read<{ schema: string; relations: string | null }>(schemaTextSql, [schemaId]);
    if (!row) throw new StaleSchema();
    const compiled = this.kept(schemaId) ?? {
      validate: row.schema === '' ? undefined : compileRowSchema(JSON.parse(row.schema) as RowSchema),
      links: row.relations === null ? undefined : (JSON.parse(row.relations) as RelationLinks),
    };
    this.validators.set(schemaId, compiled);
    this.lastUsed = schemaId;
    if (this.validators.size > MAX_VALIDATORS) this.validators.delete(this.validators.keys().next().value as number);
    return compiled;
  }

  /**
   * The schema of `schemaId` if it is compiled, moved last (the map is in order of use) unless it is last
   * already. A move of a map's only entry makes its table anew (V8 shrinks it as the entry is deleted): at
   * every write of a typed collection, the churn ../../http/responses.ts keeps out of the collector's way.
   */
  private kept(schemaId: number): Compiled | undefined {
    const kept = this.validators.get(schemaId);
    if (kept && this.lastUsed !== schemaId) {
      this.validators.delete(schemaId);
      this.validators.set(schemaId, kept);
      this.lastUsed = schemaId;
    }
    return kept;
  }

  /** The relations of and to the collection whose schema id is `schemaId` (none for 0). */
  async links(read: Read, schemaId: number): Promise<RelationLinks | undefined> {
    return schemaId === 0 ? undefined : (await this.compiled(read, schemaId)).links;
  }

  /** Whether rows checked against `schemaId` may name rows of other collections: true when its relations are not known yet. */
  names(schemaId: number): boolean {
    if (schemaId === 0) return false;
    const links = this.validators.get(schemaId)?.links;
    return links === undefined ? !this.validators.has(schemaId) : links.out.length > 0;
  }

  /** 422 row_invalid when any of `rows` names a row that does not exist in a relation of the schema `schemaId` (checkNamed). */
  async namedRows(read: Read, schemaId: number, rows: readonly Fields[]): Promise<{ collections: number[]; ids: number[] } | undefined> {
    // As links() reads them, in one step: an insert that names rows waits no longer than it did.
    const links = schemaId === 0 ? undefined : (await this.compiled(read, schemaId)).links;
    return namedRows(links?.out ?? [], rows);
  }

  async named(read: Read, schemaId: number, collection: string, rows: readonly Fields[], rowOf = (index: number) => index): Promise<void> {
    const links = await this.links(read, schemaId);
    if (links && links.out.length > 0) await checkNamed(read, this.existingSql, links.out, collection, rows, rowOf);
  }

  /**
   * 422 row_invalid when any of `rows` breaks the schema `schemaId` (none for 0), or names a row that
   * does not exist in one of its relations: each row is named by `rowOf(index)`, its index by default.
   */
  async check(read: Read, schemaId: number, collection: string, rows: readonly Fields[], rowOf = (index: number) => index): Promise<void> {
    if (schemaId === 0) return;
    const { links } = await this.compiled(read, schemaId);
    if (links && links.out.length > 0) await checkNamed(read, this.existingSql, links.out, collection, rows, rowOf);
    await this.validate(read, schemaId, collection, rows, rowOf);
  }

  /**
   * 422 row_invalid when any of `rows` breaks the schema `schemaId` (none for 0), as check() does, but
   * the rows they name left for the write's own transaction to look up: an insert's (named()), which
   * checks them where no delete can come between the look-up and the write.
   */
  async validate(
    read: Read,
    schemaId: number,
    collection: string,
    rows: readonly Fields[],
    rowOf = (index: number) => index,
  ): Promise<void> {
    if (schemaId === 0) return;
    const { validate } = await this.compiled(read, schemaId);
    if (!validate) return;
    const errors: RowError[] = [];
    let failing = 0;
    for (let index = 0; index < rows.length; index++) {
      const issues = validate(rows[index]);
      if (issues.length === 0) continue;
      failing++;
      for (const issue of issues) if (errors.length < MAX_LISTED) errors.push({ row: rowOf(index), ...issue });
    }
    if (failing > 0) throw rowInvalid(collection, failing, errors);
  }
}

/** 422 for rows that break their collection's schema: nothing of the write is stored. */
const rowInvalid = (collection: string, failing: number, errors: RowError[]) =>
  new ApiError(
    'row_invalid',
    `${failing === 1 ? '1 row breaks' : `${failing} rows break`} the schema of collection ${collection}: nothing was written.`,
    { errors },
  );

const noSchema = (collection: string) => notFound(`Collection ${collection} has no schema.`);

/** The collection's schema; 404 when it has none, or there is no such collection. */
export async function getSchema({ query }: Dialect, accountId: number, collection: string): Promise<RowSchema> {
  const [found] = await query<{ schema_id: number | string }>(schemaIdSql, [accountId, collection]);
  if (!found) throw collectionNotFound(collection);
  if (Number(found.schema_id) === 0) throw noSchema(collection);
  const [row] = await query<{ schema: string }>(schemaTextSql, [Number(found.schema_id)]);
  // Deleted between the two reads: as if read after. '': relations and no schema.
  if (!row || row.schema === '') throw noSchema(collection);
  return JSON.parse(row.schema) as RowSchema;
}

/**
 * Makes `schema` (checked already: checkRowSchema) the collection's, once every stored row matches
 * it: else 409 schema_conflict, listing the first rows that do not, and nothing changes. The
 * collection's row is held from the start (advance()), so no write of the collection commits while
 * its rows are read; reads go on.
 */
export async function putSchema(db: Dialect, accountId: number, collection: string, schema: RowSchema, once?: Once<RowSchema>) {
  let after: AfterCommit = [];
  await db.knex.transaction(async (trx) => {
    after = [];
    if (once) await beginOnce(db, trx, accountId, once);
    await putSchemaIn(db, trx, after, accountId, collection, schema);
    if (once) await recordOnce(db, trx, accountId, once, schema);
  });
  await afterCommit(after);
  return schema;
}

/** putSchema() inside the write `trx`; the collection's new schema id is noted after the commit (`after`). */
export async function putSchemaIn(db: Dialect, trx: WriteTx, after: AfterCommit, accountId: number, collection: string, schema: RowSchema) {
  const { id, schemaId: current } = await advance(db, trx, accountId, collection, 0);
  // A schema that could not hold the date-time of the collection's time to live (docs/expiry.md) is a 400.
  const [ttl] = await db.run<{ ttl_field: string | null }>(trx, ttlOfCollectionSql, [id]);
  if (ttl?.ttl_field) checkTtlField(ttl.ttl_field, schema as Record<string, unknown>, 'schema');
  const { total, violations } = await schemaViolations(db, trx, id, schema);
  if (total > 0) throw schemaConflict(collection, total, violations);
  const schemaId = await setSchemaRow(db, trx, id, JSON.stringify(schema), (await schemaRow(db, trx, current))?.relations ?? null);
  after.push(() => db.schemas.note(accountId, collection, schemaId));
}

/** The stored rows of the collection `collectionId` that break `schema`: how many, and the first MAX_LISTED, read inside `trx`. */
export async function schemaViolations(db: Dialect, trx: WriteTx, collectionId: number, schema: RowSchema) {
  const validate = compileRowSchema(schema);
  const violations: SchemaViolation[] = [];
  let total = 0;
  for (let after = 0; ; ) {
    const page = await db.run<{ id: number | string; data: string }>(trx, exportRowsSql, [collectionId, after]);
    for (const row of page) {
      const issues = validate(JSON.parse(row.data) as Fields);
      if (issues.length === 0) continue;
      total++;
      if (violations.length < MAX_LISTED) violations.push({ id: Number(row.id), pointer: issues[0].pointer, message: issues[0].message });
    }
    if (page.length < EXPORT_PAGE_ROWS) break;
    after = Number(page[page.length - 1].id);
  }
  return { total, violations };
}

/** The collection is schemaless again; 404 when it has no schema. */
export async function deleteSchema(db: Dialect, accountId: number, collection: string, once?: Once<void>): Promise<void> {
  let after: AfterCommit = [];
  await db.knex.transaction(async (trx) => {
    after = [];
    if (once) await beginOnce(db, trx, accountId, once);
    await deleteSchemaIn(db, trx, after, accountId, collection);
    if (once) await recordOnce(db, trx, accountId, once, undefined);
  });
  await afterCommit(after);
}

/** deleteSchema() inside the write `trx`; the collection's new schema id is noted after the commit (`after`). */
export async function deleteSchemaIn(db: Dialect, trx: WriteTx, after: AfterCommit, accountId: number, collection: string) {
  const { id, schemaId: current } = await advance(db, trx, accountId, collection, 0);
  const row = await schemaRow(db, trx, current);
  if (!row || row.schema === '') throw noSchema(collection);
  // Its relations stay: kept with no schema.
  const schemaId = await setSchemaRow(db, trx, id, '', row.relations);
  after.push(() => db.schemas.note(accountId, collection, schemaId));
}

/** The schema row `schemaId` (none for 0), read inside `trx`: its schema text ('' for none) and relations (null for none). */
export async function schemaRow(db: Dialect, trx: WriteTx, schemaId: number) {
  if (schemaId === 0) return undefined;
  const [row] = await db.run<{ schema: string; relations: string | null }>(trx, schemaTextSql, [schemaId]);
  return row;
}

/**
 * Gives the collection `collectionId` (its row held) a schema row anew, holding `schema` ('' for none)
 * and `relations` (null for none), and drops the others; none (0) for neither. Answers its schema id.
 */
export async function setSchemaRow(db: Dialect, trx: WriteTx, collectionId: number, schema: string, relations: string | null) {
  let schemaId = 0;
  if (schema !== '' || relations !== null) {
    const [stored] = await db.run<{ id: number | string }>(trx, insertSchemaSql, [collectionId, schema, relations]);
    schemaId = Number(stored.id);
  }
  await db.run(trx, setSchemaIdSql, [schemaId, collectionId]);
  await db.run(trx, dropOtherSchemasSql, [collectionId, schemaId]);
  return schemaId;
}

/** 409 for a schema that stored rows break: it was not set. */
const schemaConflict = (collection: string, total: number, violations: SchemaViolation[]) =>
  new ApiError(
    'schema_conflict',
    `${total === 1 ? '1 row' : `${total} rows`} of collection ${collection} ${total === 1 ? 'breaks' : 'break'} this schema: it was not set.`,
    { violations, total },
  );
