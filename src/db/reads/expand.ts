// Expanded rows (openapi.yaml, `expand`; docs/relations.md): the rows related to those of a page, read in
// the page's own snapshot (related.ts), each set in the top-level member EXPANDED of the row it is related to: a
// to-one relation's row (or null), a to-many relation's rows (at most its limit; `$cut` names those cut
// short). Each related row is read as a page of its own collection (readPage), so it is filtered,
// ordered, found through its indexes and held to its collection's rules as any page is.

import type { Filter } from '../../query/filter.ts';
import type { SortKey } from '../../query/order.ts';
import { EXPANDED, type Json, type Row } from '../../rows.ts';
import type { PageSource } from '../engine/read-port.ts';
import { bindRelations, relatedReadsOf } from '../relations/filters.ts';
import { readPage } from './pages.ts';

type Fields = Record<string, unknown>;

/** One relation expanded into rows, as the handler resolved it: its rules bound, its nested expansions under it. */
export interface Expansion {
  /** The relation's name: its member in EXPANDED. */
  name: string;
  kind: 'to_one' | 'to_many';
  /** The related collection. */
  collection: string;
  /** to_one: the field of the row holding the related row's id; to_many: the field of the related rows holding the row's id. */
  field: string;
  /** The related rows read: the caller's filter and the read rule of their collection, ANDed (to_many), or the rule alone (to_one). */
  filter?: Filter;
  /** A to-many's order, and how many rows of each row at most. */
  order: readonly SortKey[];
  limit: number;
  /** The related rows' JSON as the caller may see it (the rules' hidden fields gone). */
  mask?: (json: Json<Row[]>) => Json<Row[]>;
  /** Only these fields of the related rows (and id, and their own expansions). */
  select?: readonly string[];
  expand: readonly Expansion[];
}

/** The member of EXPANDED that lists the to-many relations whose rows were cut at their limit. */
const CUT = '$cut';

const expandedOf = (row: Fields) => row[EXPANDED] as Fields;

const isId = (value: unknown): value is number => typeof value === 'number' && Number.isSafeInteger(value) && value >= 1;
const both = (a: Filter, b: Filter | undefined): Filter => (b ? { kind: 'and', filters: [a, b] } : a);

/**
 * Sets each of `expansions` into `rows`, then theirs into the related rows, and so on: each read from
 * `source`, in the snapshot the rows were read in (related.ts, readRelatedPage).
 */
export async function expandRows(source: PageSource, accountId: number, rows: Fields[], expansions: readonly Expansion[]): Promise<void> {
  // The member made afresh (or, for rows expanding nothing, taken out): a field of that name stored
  // before it was reserved is never answered as an expansion.
  for (const row of rows) {
    if (expansions.length > 0) row[EXPANDED] = {};
    else delete row[EXPANDED];
  }
  for (const asked of expansions) {
    // A to-many's filter through relations of its own, bound once for every row it is read for.
    const filter = await bindRelations(relatedReadsOf(source), accountId, asked.collection, asked.filter);
    const expansion = { ...asked, filter };
    const related: Fields[] = [];
    if (expansion.kind === 'to_one') {
      const ids = [...new Set(rows.map((row) => row[expansion.field]).filter(isId))];
      const found = new Map<number, Fields>();
      if (ids.length > 0) {
        const filter = both({ kind: 'field', path: ['id'], op: '$in', operand: ids }, expansion.filter);
        const order: SortKey[] = [{ field: 'id', direction: 'asc' }];
        for (const row of await readRelated(source, accountId, expansion, filter, order, ids.length)) found.set(row.id as number, row);
      }
      for (const row of rows) {
        const value = row[expansion.field];
        expandedOf(row)[expansion.name] = (isId(value) && found.get(value)) || null;
      }
      related.push(...found.values());
    } else {
      const byParent = await readToMany(source, accountId, expansion, rows);
      for (const row of rows) {
        const read = byParent.get(row.id as number) ?? [];
        const kept = read.slice(0, expansion.limit);
        const expanded = expandedOf(row);
        expanded[expansion.name] = kept;
        if (read.length > expansion.limit) expanded[CUT] = [...((expanded[CUT] as string[] | undefined) ?? []), expansion.name];
        related.push(...kept);
      }
    }
    await expandRows(source, accountId, related, expansion.expand);
    if (expansion.select) for (const row of related) selectIn(row, expansion.select);
  }
}

/**
 * By the id of each of `rows`, its related rows of a to-many, in the expansion's order, at most its limit
 * and one more (which says it was cut). One read for the whole page: the rows naming any of them, at most
 * that many for each; when that read comes back full, a row it found fewer than that many for may have
 * more past the rows of others, and those rows alone are read again, one read each.
 */
async function readToMany(source: PageSource, accountId: number, expansion: Expansion, rows: Fields[]): Promise<Map<number, Fields[]>> {
  const ids = [...new Set(rows.map((row) => row.id as number))];
  const each = expansion.limit + 1;
  const byParent = new Map<number, Fields[]>(ids.map((id) => [id, []]));
  if (ids.length === 0) return byParent;
  const naming = (parents: number[]) => both({ kind: 'field', path: [expansion.field], op: '$in', operand: parents }, expansion.filter);
  const read = await readRelated(source, accountId, expansion, naming(ids), expansion.order, each * ids.length);
  for (const row of read) byParent.get(row[expansion.field] as number)?.push(row);
  if (read.length < each * ids.length) return byParent;
  for (const id of ids) {
    if ((byParent.get(id) as Fields[]).length >= each) continue;
    byParent.set(id, await readRelated(source, accountId, expansion, naming([id]), expansion.order, each));
  }
  return byParent;
}

/** The related rows `filter` keeps, in `order`, at most `limit`, as the caller may see them. */
async function readRelated(
  source: PageSource,
  accountId: number,
  expansion: Expansion,
  filter: Filter,
  order: readonly SortKey[],
  limit: number,
): Promise<Fields[]> {
  const { json } = await readPage(source, accountId, expansion.collection, { limit, offset: 0, order, filter });
  return JSON.parse(expansion.mask ? expansion.mask(json) : json) as Fields[];
}

/** Keeps of `row` its id, the fields `select` names, and its expansions. */
function selectIn(row: Fields, select: readonly string[]): void {
  for (const name of Object.keys(row)) if (name !== 'id' && name !== EXPANDED && !select.includes(name)) delete row[name];
}
