// What a page selects of its rows (`select`), and the search's relevance beside them.
import type { Json, Row } from '../rows.ts';
import { rowHighlight } from '../search/highlight.ts';
import type { SearchCondition } from './filter.ts';
import { HIGHLIGHT, SCORE } from './order.ts';
// The fields of a page's rows a client asks for (openapi.yaml, listRows `fields`): a rule on JSON text,
// applied to the page the data layer answers.

/** What a page read with its filter's search (Page.scored) knows of its rows beside them. */
export interface Relevance {
  /** Each row's score, in the page's order. */
  scores?: readonly number[];
  /** The search at the filter's top level, bound to the collection's search index. */
  search?: SearchCondition;
}

/**
 * `json`, a page's rows, with only the fields `fields` of each, and its id: a row without one of them
 * is answered without it. `_score` (SCORE) and `_highlight` (HIGHLIGHT), when selected, are each row's
 * score and highlights in `relevance` (a scored page's), whatever the row holds of a field of that name.
 */
export function selectFields(json: Json<Row[]>, fields: readonly string[], versions = false, relevance: Relevance = {}): Json<Row[]> {
  const { scores, search } = relevance;
  const member = (row: Record<string, unknown>, index: number, field: string) => {
    if (field === SCORE && scores) return [[field, scores[index]]];
    if (field === HIGHLIGHT && search?.index) return [[field, rowHighlight(row, search.index.fields, search.search)]];
    return Object.hasOwn(row, field) ? [[field, row[field]]] : [];
  };
  // Object.fromEntries defines each field as its own, `__proto__` too, where assigning it would not.
  const select = (row: Record<string, unknown>, index: number) =>
    Object.fromEntries([['id', row.id], ...fields.flatMap((field) => member(row, index, field))]);
  if (versions) {
    const rows = JSON.parse(json) as { etag: string; row: Record<string, unknown> }[];
    return JSON.stringify(rows.map(({ etag, row }, index) => ({ etag, row: select(row, index) })));
  }
  return JSON.stringify((JSON.parse(json) as Record<string, unknown>[]).map(select));
}
