import type { Json, Row } from '../rows.ts';
// The fields of a page's rows a client asks for (openapi.yaml, listRows `fields`): a rule on JSON text,
// applied to the page the data layer answers.

/**
 * `json`, a page's rows, with only the fields `fields` of each, and its id: a row without one of them
 * is answered without it.
 */
export function selectFields(json: Json<Row[]>, fields: readonly string[], versions = false): Json<Row[]> {
  // Object.fromEntries defines each field as its own, `__proto__` too, where assigning it would not.
  const select = (row: Record<string, unknown>) =>
    Object.fromEntries([['id', row.id], ...fields.filter((field) => Object.hasOwn(row, field)).map((field) => [field, row[field]])]);
  if (versions) {
    const rows = JSON.parse(json) as { etag: string; row: Record<string, unknown> }[];
    return JSON.stringify(rows.map(({ etag, row }) => ({ etag, row: select(row) })));
  }
  return JSON.stringify((JSON.parse(json) as Record<string, unknown>[]).map(select));
}
