// A collection read whole for `rowbase export` (docs/operations.md, "Export and import"): its
// description, then its rows by id in keyset pages, all in one snapshot, so that the rows are exactly
// those the events up to the stated seq made, whatever is written meanwhile. The caller takes each
// page before the next is read: one page is all that is held at once.

import { collectionNotFound } from '../../errors.ts';
import { expiryNow, type Ttl } from '../../expiry/ttl.ts';
import type { Rules } from '../../rules/rules.ts';
import type { RowSchema } from '../collections/schemas.ts';
import type { PagedDialect } from '../engine/read-port.ts';
import {
  EXPORT_PAGE_ROWS,
  exportedCollectionSql,
  exportedIndexesSql,
  exportedRelationsSql,
  exportLiveRowsSql,
} from '../engine/sql/rows.ts';
import type { RelationDeclaration } from '../relations/relations.ts';

/** A collection as an export describes it, as of the snapshot it was read in. */
export interface ExportedCollection {
  name: string;
  created_at: string;
  /** The latest seq of its events: the rows are what the events up to it made. */
  seq: number;
  /** The last row id handed out; the next row inserted takes the one after. */
  last_row_id: number;
  row_count: number;
  /** Its schema (openapi.yaml, RowSchema), when it has one. */
  schema?: RowSchema;
  /** Its declared indexes (openapi.yaml, NewIndex), when it has some. */
  indexes?: { fields: string[]; unique: boolean; type?: 'search' }[];
  /** Its rules (openapi.yaml, Rules), when it has some. */
  rules?: Rules;
  /** The relations declared of it (openapi.yaml, RelationDeclaration, each with its name), when it has some. */
  relations?: ExportedRelation[];
  /** Its time to live (openapi.yaml, Ttl), when it has one. */
  ttl?: Ttl;
}

/** A relation declared of an exported collection, as putRelation takes it, with its name. */
export type ExportedRelation = Required<RelationDeclaration> & { name: string };

/** A stored row: its id and its text (its fields but id, as JSON.stringify wrote them). */
interface StoredRow {
  id: number;
  data: string;
}

/** What an export hands its rows to; each promise settles once the part is taken (written out). */
export interface CollectionReader {
  collection(collection: ExportedCollection): Promise<void>;
  /** One page of rows, in id order, of EXPORT_PAGE_ROWS rows at most. */
  rows(rows: StoredRow[]): Promise<void>;
}

type CollectionRow = {
  id: number | string;
  name: string;
  created_at: string;
  row_count: number | string;
  last_row_id: number | string;
  last_seq: number | string;
  schema: string | null;
  rules: string | null;
  ttl_field: string | null;
};

/** Hands the collection `name` and then its rows, by id, to `reader`, all read in one snapshot; 404 when there is no such collection. */
export function exportCollection({ pages }: PagedDialect, accountId: number, name: string, reader: CollectionReader): Promise<void> {
  return pages.snapshot(async (read) => {
    // The rows that live at the export's start (docs/expiry.md), counted and written.
    const now = expiryNow();
    const [found] = await read<CollectionRow>(exportedCollectionSql, [now, accountId, name]);
    if (!found) throw collectionNotFound(name);
    const collectionId = Number(found.id);
    const described: ExportedCollection = {
      name: found.name,
      created_at: found.created_at,
      seq: Number(found.last_seq),
      last_row_id: Number(found.last_row_id),
      row_count: Number(found.row_count),
    };
    if (found.schema !== null) described.schema = JSON.parse(found.schema) as RowSchema;
    const indexes = await read<{ fields: string; is_unique: boolean | number; is_search: boolean | number }>(exportedIndexesSql, [
      collectionId,
    ]);
    if (indexes.length > 0) {
      described.indexes = indexes.map((index) => ({
        fields: JSON.parse(index.fields),
        unique: Boolean(index.is_unique),
        ...(index.is_search ? { type: 'search' as const } : {}),
      }));
    }
    if (found.rules !== null) described.rules = JSON.parse(found.rules) as Rules;
    if (found.ttl_field !== null) described.ttl = { field: found.ttl_field };
    const relations = await read<ExportedRelation>(exportedRelationsSql, [collectionId]);
    if (relations.length > 0)
      described.relations = relations.map(({ name, field, collection, on_delete, reverse }) => ({
        name,
        field,
        collection,
        on_delete,
        reverse,
      }));
    await reader.collection(described);
    for (let after = 0; ; ) {
      const page = await read<{ id: number | string; data: string }>(exportLiveRowsSql, [collectionId, after, now]);
      if (page.length === 0) return;
      const rows = page.map((row) => ({ id: Number(row.id), data: row.data }));
      await reader.rows(rows);
      if (page.length < EXPORT_PAGE_ROWS) return;
      after = rows[rows.length - 1].id;
    }
  });
}
