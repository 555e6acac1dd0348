// Relations between collections (openapi.yaml, the `relations` tag; docs/relations.md): declared of a
// collection, each a row of collection_relations, and kept with the schema rows of both collections
// they join (links.ts), which every write of rows is checked against. A declaration holds both
// collections' rows while it checks the stored rows, so no write of either commits in between.
import { ApiError, collectionNotFound, notFound, type SchemaViolation, validationFailed } from '../../errors.ts';
import type { Once } from '../../idempotency/answers.ts';
import { advance } from '../collections/collections.ts';
import { schemaRow, setSchemaRow } from '../collections/schemas.ts';
import { type AfterCommit, afterCommit } from '../engine/after-commit.ts';
import { retryDeadlocks } from '../engine/deadlocks.ts';
import type { Dialect, WriteTx } from '../engine/dialect.ts';
import { collectionIdSql } from '../engine/sql/collections.ts';
import {
  accountRelationsSql,
  collectionByIdSql,
  deleteRelationSql,
  dropRelationsSql,
  insertRelationSql,
  relationsOfSql,
} from '../engine/sql/relations.ts';
import { EXPORT_PAGE_ROWS, exportRowsSql } from '../engine/sql/rows.ts';
import { refuseRestrictOnExpiring } from '../expiry/ttl.ts';
import { beginOnce, recordOnce } from '../rows/idempotency.ts';
import type { Fields } from '../rows/rows.ts';
import { missingNamed, type OnDelete, type Relation, type RelationLinks, type StoredRelation, shownRelations } from './links.ts';

/** Relations a collection takes part in at most, both directions counted (a relation to itself twice). */
const MAX_RELATIONS = 16;
/** The most places a 409 lists, as a schema's. */
const MAX_LISTED = 100;

/** A relation as it is declared (openapi.yaml, RelationDeclaration). */
export interface RelationDeclaration {
  field: string;
  collection: string;
  on_delete?: OnDelete;
  reverse?: string | null;
}

export type RelationRow = {
  name: string;
  field: string;
  on_delete: string;
  reverse: string | null;
  collection_id: number | string;
  target_id: number | string;
  source_name: string;
  target_name: string;
};

export const storedOf = (row: RelationRow): StoredRelation => ({
  name: row.name,
  source: Number(row.collection_id),
  sourceName: row.source_name,
  field: row.field,
  target: Number(row.target_id),
  targetName: row.target_name,
  onDelete: row.on_delete as OnDelete,
  reverse: row.reverse,
});

/** The links of the collection `collectionId` among `relations`: those declared of it, and those naming it. */
function linksOf(collectionId: number, relations: readonly StoredRelation[]): RelationLinks {
  return {
    out: relations.filter((relation) => relation.source === collectionId),
    in: relations.filter((relation) => relation.target === collectionId),
  };
}

const relationNotFound = (collection: string, name: string) => notFound(`Collection ${collection} has no relation named ${name}.`);
const bodyError = (name: string, message: string) => ({ in: 'body' as const, name, message });

/** The collection's relations, both directions (openapi.yaml, listRelations); 404 for no such collection. */
export async function listRelations(db: Dialect, accountId: number, collection: string): Promise<Relation[]> {
  const [found] = await db.query<{ id: number | string }>(collectionIdSql, [accountId, collection]);
  if (!found) throw collectionNotFound(collection);
  const id = Number(found.id);
  const rows = await db.query<RelationRow>(relationsOfSql, [id, id]);
  return shownRelations(linksOf(id, rows.map(storedOf)));
}

/** One of the collection's relations, by name (a to-one declared of it, or the reverse of one naming it); 404 for none. */
export async function getRelation(db: Dialect, accountId: number, collection: string, name: string): Promise<Relation> {
  const found = (await listRelations(db, accountId, collection)).find((relation) => relation.name === name);
  if (!found) throw relationNotFound(collection, name);
  return found;
}

/**
 * Declares the relation `name` of the collection (openapi.yaml, putRelation), replacing the one of
 * that name it had: 400 naming the place for a relation to no collection, a name either collection
 * uses for another relation, a field another relation holds, more than MAX_RELATIONS of either
 * collection, or a cascade that would come back to where it started; 409 schema_conflict listing the
 * stored rows whose field names a row that does not exist (nothing changes).
 */
export async function putRelation(
  db: Dialect,
  accountId: number,
  collection: string,
  name: string,
  declaration: RelationDeclaration,
  once?: Once<Relation>,
): Promise<Relation> {
  let after: AfterCommit = [];
  // Tried again when PostgreSQL aborts it as a deadlock (../engine/deadlocks.ts): a batch holds the
  // collections it names in the order of their names, and two declarations in opposite directions each
  // the related collection first.
  const relation = await retryDeadlocks(db, () =>
    db.knex.transaction(async (trx) => {
      after = [];
      if (once) await beginOnce(db, trx, accountId, once);
      const shown = await putRelationIn(db, trx, after, accountId, collection, name, declaration);
      if (once) await recordOnce(db, trx, accountId, once, shown);
      return shown;
    }),
  );
  await afterCommit(after);
  return relation;
}

/**
 * The relations an apply declares (../declarations/apply.ts), as putRelationIn() takes them: `made`, the
 * collections the apply made, which hold no row (so no row names a missing one); `relinked`, the ids of the
 * collections whose links it gives a schema row anew once, at its end (relinkBatch), rather than at each
 * relation, where two new relations of a collection gave it two.
 */
export interface RelationBatch {
  made: ReadonlySet<string>;
  relinked: Set<number>;
}

/**
 * putRelation() inside the write `trx`; the schema ids of the collections it joins are noted after the
 * commit (`after`). Within an apply's `batch`, their links are refreshed by relinkBatch().
 */
export async function putRelationIn(
  db: Dialect,
  trx: WriteTx,
  after: AfterCommit,
  accountId: number,
  collection: string,
  name: string,
  declaration: RelationDeclaration,
  batch?: RelationBatch,
): Promise<Relation> {
  const onDelete = declaration.on_delete ?? 'restrict';
  const reverse = declaration.reverse ?? null;
  // Both collections held, the related one first: the order a delete of its rows holds them in (it
  // holds its own collection, then those its rows cascade into or set null in: ../rows/writes.ts,
  // holdFollowers), so that a delete of a related row and the declaration never wait for each other.
  const held = new Map<string, number>();
  for (const held_ of new Set([declaration.collection, collection])) {
    try {
      held.set(held_, (await advance(db, trx, accountId, held_, 0)).id);
    } catch (error) {
      if (held_ !== collection && (error as ApiError).code === 'not_found')
        throw validationFailed(`There is no collection named ${held_} to relate to.`, [bodyError('/collection', 'names no collection')]);
      throw error;
    }
  }
  const source = held.get(collection) as number;
  const target = held.get(declaration.collection) as number;
  const all = await accountRelations(db, trx, accountId);
  const replaced = all.find((relation) => relation.source === source && relation.name === name);
  const others = all.filter((relation) => relation !== replaced);
  const declared: StoredRelation = {
    name,
    source,
    sourceName: collection,
    field: declaration.field,
    target,
    targetName: declaration.collection,
    onDelete,
    reverse,
  };
  refuseClashes(others, declared);
  if (onDelete === 'restrict') await refuseRestrictOnExpiring(db, trx, target, declared.targetName);
  // A collection an apply has just made holds no rows: nothing missing, no keys to carry texts.
  const made = batch?.made.has(collection) ?? false;
  if (!made) await refuseMissing(db, trx, declared);
  if (replaced) await db.run(trx, deleteRelationSql, [source, name]);
  await db.run(trx, insertRelationSql, [source, name, declared.field, target, onDelete, reverse, new Date().toISOString()]);
  if (!made) await db.run(trx, db.carryTextsSql, [source, declared.field]);
  for (const id of new Set([source, target, replaced?.target ?? source])) {
    if (batch) batch.relinked.add(id);
    else noteLinks(db, after, accountId, await refreshLinks(db, trx, id));
  }
  const [shown] = shownRelations({ out: [declared], in: [] });
  return shown;
}

/** The links of the collections of an apply's `batch` (putRelationIn) given a schema row anew, each once; noted after the commit. */
export async function relinkBatch(db: Dialect, trx: WriteTx, after: AfterCommit, accountId: number, batch: RelationBatch): Promise<void> {
  for (const id of batch.relinked) noteLinks(db, after, accountId, await refreshLinks(db, trx, id));
  batch.relinked.clear();
}

/** Notes after the commit the schema id refreshLinks() gave a collection. */
function noteLinks(db: Dialect, after: AfterCommit, accountId: number, [name, schemaId]: [string, number]): void {
  after.push(() => db.schemas.note(accountId, name, schemaId));
}

/** The account's relations, as the write `trx` reads them: a batch holds its collections in their order (links.ts, holdingOrder). */
export async function accountRelations(db: Dialect, trx: WriteTx, accountId: number): Promise<StoredRelation[]> {
  return (await db.run<RelationRow>(trx, accountRelationsSql, [accountId])).map(storedOf);
}

/** 400 for a declaration that clashes with the relations `others` of the account (putRelation). */
function refuseClashes(others: readonly StoredRelation[], declared: StoredRelation): void {
  const after = [...others, declared];
  const namesOf = (collectionId: number, relations: readonly StoredRelation[]) => [
    ...relations.filter((r) => r.source === collectionId).map((r) => r.name),
    ...relations.filter((r) => r.target === collectionId && r.reverse !== null).map((r) => r.reverse as string),
  ];
  if (
    namesOf(declared.source, others).includes(declared.name) ||
    (declared.source === declared.target && declared.name === declared.reverse)
  )
    throw validationFailed(`Collection ${declared.sourceName} has another relation named ${declared.name}.`, [
      { in: 'path', name: 'relation_name', message: 'names another relation of the collection' },
    ]);
  if (declared.reverse !== null && namesOf(declared.target, others).includes(declared.reverse))
    throw validationFailed(`Collection ${declared.targetName} has a relation named ${declared.reverse} already.`, [
      bodyError('/reverse', 'names a relation the related collection has'),
    ]);
  const holder = others.find((r) => r.source === declared.source && r.field === declared.field);
  if (holder)
    throw validationFailed(`Field ${declared.field} of ${declared.sourceName} holds the relation ${holder.name} already.`, [
      bodyError('/field', `holds the relation ${holder.name}`),
    ]);
  for (const [id, place] of [
    [declared.source, 'relation_name'],
    [declared.target, '/collection'],
  ] as const) {
    const count = after.filter((r) => r.source === id).length + after.filter((r) => r.target === id).length;
    if (count > MAX_RELATIONS)
      throw validationFailed(`A collection takes part in ${MAX_RELATIONS} relations at most, both directions counted.`, [
        place === 'relation_name'
          ? { in: 'path', name: place, message: `would be relation ${count} of the collection` }
          : bodyError(place, `would take part in ${count} relations`),
      ]);
  }
  if (declared.onDelete === 'cascade' && cascadesTo(after, declared.source, declared.target))
    throw validationFailed(
      `Deleting a row of ${declared.targetName} would cascade back to ${declared.targetName} through this relation: declare it with restrict or set_null.`,
      [bodyError('/on_delete', 'makes a cycle of cascades')],
    );
}

/**
 * Whether deleting a row of `from` cascades, through `relations`, to a row of `to`; collections known by
 * their ids, or by their names (a declaration's, src/declarations/checks.ts).
 */
export function cascadesTo<K>(relations: readonly { onDelete: OnDelete; source: K; target: K }[], from: K, to: K): boolean {
  const seen = new Set<K>();
  const next = [from];
  while (next.length > 0) {
    const at = next.pop() as K;
    if (at === to) return true;
    if (seen.has(at)) continue;
    seen.add(at);
    for (const r of relations) if (r.onDelete === 'cascade' && r.target === at) next.push(r.source);
  }
  return false;
}

/** 409 schema_conflict when stored rows of the relation's collection name rows that do not exist (both collections held). */
async function refuseMissing(db: Dialect, trx: WriteTx, relation: StoredRelation): Promise<void> {
  const { total, violations } = await missingRows(db, trx, relation);
  if (total > 0)
    throw new ApiError(
      'schema_conflict',
      `${total === 1 ? '1 row' : `${total} rows`} of collection ${relation.sourceName} ${total === 1 ? 'names' : 'name'} rows of ${relation.targetName} that do not exist: the relation was not declared.`,
      { violations, total },
    );
}

/** The stored rows of the relation's collection whose field names a row that does not exist: how many, and the first MAX_LISTED. */
export async function missingRows(db: Dialect, trx: WriteTx, relation: StoredRelation) {
  const read = <T>(sql: string, params: (string | number | null)[]) => db.run<T>(trx, sql, params);
  const violations: SchemaViolation[] = [];
  let total = 0;
  for (let after = 0; ; ) {
    const page = await db.run<{ id: number | string; data: string }>(trx, exportRowsSql, [relation.source, after]);
    const rows = page.map((row) => JSON.parse(row.data) as Fields);
    for (const { index, message } of await missingNamed(read, db.schemas.existingSql, relation, rows)) {
      total++;
      if (violations.length < MAX_LISTED) violations.push({ id: Number(page[index].id), pointer: `/${relation.field}`, message });
    }
    if (page.length < EXPORT_PAGE_ROWS) break;
    after = Number(page[page.length - 1].id);
  }
  return { total, violations };
}

/** The collection's relation `name` gone (the values of its field stay); 404 for no such relation declared of it. */
export async function deleteRelation(db: Dialect, accountId: number, collection: string, name: string, once?: Once<void>): Promise<void> {
  let after: AfterCommit = [];
  await retryDeadlocks(db, () =>
    db.knex.transaction(async (trx) => {
      after = [];
      if (once) await beginOnce(db, trx, accountId, once);
      await deleteRelationIn(db, trx, after, accountId, collection, name);
      if (once) await recordOnce(db, trx, accountId, once, undefined);
    }),
  );
  await afterCommit(after);
}

/** deleteRelation() inside the write `trx`; the schema ids of the collections it joined are noted after the commit (`after`). */
export async function deleteRelationIn(db: Dialect, trx: WriteTx, after: AfterCommit, accountId: number, collection: string, name: string) {
  // The collection it relates to, held first, as putRelation holds it; read before, unheld, so it may be
  // another by then (the relation declared anew meanwhile), which is then held when its schema is.
  const related = (await accountRelations(db, trx, accountId)).find(
    (relation) => relation.sourceName === collection && relation.name === name,
  );
  if (related && related.targetName !== collection) await advance(db, trx, accountId, related.targetName, 0).catch(ignoreGone);
  const { id } = await advance(db, trx, accountId, collection, 0);
  const [deleted] = await db.run<{ target_id: number | string }>(trx, deleteRelationSql, [id, name]);
  if (!deleted) throw relationNotFound(collection, name);
  for (const changed of new Set([id, Number(deleted.target_id)])) noteLinks(db, after, accountId, await refreshLinks(db, trx, changed));
}

/** A collection gone meanwhile: nothing to hold. */
function ignoreGone(error: unknown): void {
  if ((error as ApiError).code !== 'not_found') throw error;
}

/** Every relation of and to the collection `collectionId`, gone with it (../collections/collections.ts, deleteCollection). */
export async function dropRelationsOf(db: Dialect, trx: WriteTx, collectionId: number): Promise<void> {
  const dropped = await db.run<{ collection_id: number | string; target_id: number | string }>(trx, dropRelationsSql, [
    collectionId,
    collectionId,
  ]);
  const others = new Set(dropped.flatMap((row) => [Number(row.collection_id), Number(row.target_id)]));
  others.delete(collectionId);
  for (const other of others) await refreshLinks(db, trx, other);
}

/**
 * Gives the collection `collectionId` a schema row anew that holds its relations as they now are, beside
 * its schema (../collections/schemas.ts): every write checked against its schema id before fails its
 * statement, and is checked again. Answers its name and its new schema id.
 */
async function refreshLinks(db: Dialect, trx: WriteTx, collectionId: number): Promise<[string, number]> {
  const [collection] = await db.run<{ schema_id: number | string; name: string }>(trx, collectionByIdSql, [collectionId]);
  const current = await schemaRow(db, trx, Number(collection.schema_id));
  const relations = (await db.run<RelationRow>(trx, relationsOfSql, [collectionId, collectionId])).map(storedOf);
  const links = relations.length === 0 ? null : JSON.stringify(linksOf(collectionId, relations));
  return [collection.name, await setSchemaRow(db, trx, collectionId, current?.schema ?? '', links)];
}
