// What a row is outside any database (openapi.yaml, Row): its JSON text, which the service makes
// without parsing, the ids it may have, the most it (and a page of rows) may weigh, its version (ETag) and
// how an event carries it. The data layer, the CLI's import and
// export and the query rules share these.
import type { components } from '../generated/openapi.ts';

export type Row = components['schemas']['Row'];
/** JSON text of a value of type T. */
export type Json<T> = string & { readonly json?: T };

/** JSON text of a value of type T as its UTF-8 bytes, as a driver hands a blob over: answered as they are. */
export type JsonBytes<T> = Buffer & { readonly json?: T };

/**
 * Sets the member `name` of the object `target` (a row's fields, or any object of JSON) to `value` as its
 * own, as JSON.parse makes members: `__proto__` too, which an assignment would hand to the prototype.
 */
export function setMember(target: object, name: string, value: unknown): void {
  Object.defineProperty(target, name, { value, enumerable: true, writable: true, configurable: true });
}

/** The text of JSON held as text or as its bytes. */
export const jsonText = <T>(json: Json<T> | JsonBytes<T>): Json<T> => (typeof json === 'string' ? json : json.toString());

/**
 * A row's JSON text from its stored text (the fields but id, as JSON.stringify wrote them), the same
 * as JSON.stringify of the row, without parsing it. rowJsonWith() in db/engine/sql/reads.ts makes the same in SQL.
 */
export const rowJson = (id: number | string, data: string) => (data === '{}' ? `{"id":${id}}` : `{"id":${id},${data.slice(1)}`);

/**
 * The most a row may weigh, as the JSON text of its fields: 15 MiB, so that a page of one row always
 * fits. Patches add fields, so without a bound a row would grow by a body's worth with each one, until
 * answering it made a string longer than V8 can hold (db/rows/rows.ts, rowTooLarge()).
 */
export const MAX_ROW_BYTES = 15 * 1024 * 1024;

/** Whether `text` weighs more than a row may: only a text of over a third of it can (3 bytes a UTF-16 unit at most). */
export const overRowBound = (text: string) => text.length > MAX_ROW_BYTES / 3 && Buffer.byteLength(text) > MAX_ROW_BYTES;

/**
 * Whether `id` may name a row (or a webhook, or an attempt of its delivery log): the service assigns ids
 * from 1, and a JavaScript number names no integer past 2^53 − 1 exactly. Any other integer is one that is
 * absent (openapi.yaml, RowId, WebhookIdPath, DeliveryIdPath: 404), and is never sent to the database:
 * PostgreSQL's bigint refuses the largest.
 */
export const assignable = (id: number) => Number.isSafeInteger(id) && id >= 1;

/**
 * The top-level member of an answered row that holds the rows expanded into it (openapi.yaml, `expand`;
 * docs/relations.md): reserved, so that no stored field shares it. A write holding it is a 400.
 */
export const EXPANDED = '_expand';

/** The member of EXPANDED that lists the to-many relations whose rows were cut at their limit. */
export const CUT = '$cut';

/**
 * The most a page's rows may weigh, as JSON text: 16 MiB, sixteen rows of the largest body by default.
 * A page is one string, made in the database and answered whole: a thousand rows of 1 MiB would be a
 * string longer than V8 can hold. A larger page is refused (db/rows/rows.ts, pageTooLarge()).
 */
export const MAX_PAGE_BYTES = 16 * 1024 * 1024;

/**
 * A row's version as its ETag's opaque text (openapi.yaml, ETag): its collection's id, which a
 * collection made again under the same name does not share, and the seq of the change that made the
 * row as it is, which no other change of the collection takes.
 */
export const versionOf = (collectionId: number | string, seq: number | string) => `${collectionId}.${seq}`;

/** A row as an event carries it: its id, and the whole row (id included) as JSON text; an update's row before it too. */
export interface EventRow {
  id: number;
  json: string;
  previous?: string;
}

/** The event row of the row `id` whose stored text is `data`, and was `before` (an update's). */
export const eventRow = (id: number, data: string, before?: string): EventRow => ({
  id,
  json: rowJson(id, data),
  previous: before === undefined ? undefined : rowJson(id, before),
});
