import type { Json, Row } from '../rows.ts';
import { SCORE } from './order.ts';
// The fields of a page's rows a client asks for (openapi.yaml, listRows `fields`): a rule on JSON text,
// applied to the page the data layer answers.

/**
 * `json`, a page's rows, with only the fields `fields` of each, and its id: a row without one of them
 * is answered without it. `_score` (SCORE), when selected, is each row's score in `scores` (a scored
 * page's, in its order), whatever the row holds of a field of that name.
 */
export function selectFields(json: Json<Row[]>, fields: readonly string[], versions = false, scores?: readonly number[]): Json<Row[]> {
  const member = (row: Record<string, unknown>, index: number, field: string) =>
    field === SCORE && scores ? [[field, scores[index]]] : Object.hasOwn(row, field) ? [[field, row[field]]] : [];
  // Object.fromEntries defines each field as its own, `__proto__` too, where assigning it would not.
  const select = (row: Record<string, unknown>, index: number) =>
    Object.fromEntries([['id', row.id], ...fields.flatMap((field) => member(row, index, field))]);
  if (versions) {
    const rows = JSON.parse(json) as { etag: string; row: Record<string, unknown> }[];
    return JSON.stringify(rows.map(({ etag, row }, index) => ({ etag, row: select(row, index) })));
  }
  return JSON.stringify((JSON.parse(json) as Record<string, unknown>[]).map(select));
}
