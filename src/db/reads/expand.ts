// Expanded rows (openapi.yaml, `expand`; docs/relations.md): the rows related to those of a page, read in
// the page's own snapshot, or after it as one would read them (related.ts, expandedAlone), each set in the top-level member EXPANDED of the row it is related to: a
// to-one relation's row (or null), a to-many relation's rows (at most its limit; `$cut` names those cut
// short). Each relation of a level is one statement for the whole page (../engine/sql/related.ts): a
// to-one's rows by their ids, a to-many's through the relation field's sort index, at most its limit and
// one more of each row, in their order; filtered and held to their collection's rules as a page's rows
// are. Their JSON texts are set into the page's as they come, parsed only to read their own expansions,
// pick their selected fields or drop a stored field named EXPANDED.

import type { Filter } from '../../query/filter.ts';
import type { SortKey } from '../../query/order.ts';
import { CUT, EXPANDED, type Json, MAX_PAGE_BYTES, type Row } from '../../rows.ts';
import type { PageSource } from '../engine/read-port.ts';
import { byId, byName, type CollectionRef } from '../engine/sql/pages.ts';
import type { RelatedPart, RelatedRead } from '../engine/sql/related.ts';
import { bindRelations, relatedReadsOf } from '../relations/filters.ts';
import { pageTooLarge } from '../rows/rows.ts';
import { bindSearch } from '../search/indexes.ts';
import { elementTexts, numbersOf, withoutLast } from './page-rows.ts';
import { lookUpIndex } from './pages.ts';

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

const isId = (value: unknown): value is number => typeof value === 'number' && Number.isSafeInteger(value) && value >= 1;

/** A key's related rows as read: how many (at most the limit and one more), and the JSON texts of the first `limit`, joined by commas. */
type Related = { n: number; json: string };
/** Each key's Related rows. */
type ByKey = Map<number, Related>;

/**
 * The page's collection and the latest event seq its rows were read at, for expansions read outside any
 * snapshot: each relation's statement reads that seq again beside its rows (RelatedRead.keysSeq).
 */
export type ReadAt = { collection: CollectionRef; seq: number };

/** The page's rows changed between their read and their related rows' (ReadAt): the expansions are for a snapshot to read. */
export class PageMoved extends Error {}

/** An expanded page: its JSON text, and its last row's text as read (before its expansions were set in), for its cursor. */
export type ExpandedPage = { json: string; last?: string };

/**
 * The page `json` (an array of rows; with `versions`, of `{ etag, row }`) with `expansions` set into its
 * rows, then theirs into the related rows, and so on: each read from `source`, in the snapshot the page
 * was read in (related.ts, readRelatedPage), of the rows that live at `now`, as the page's. The page's
 * rows are not parsed: each one's id and the fields its to-one relations name are read off its text
 * (page-rows.ts), and its expansions set into that text; only a row holding a stored field named
 * EXPANDED (or a name written with an escape) is parsed and written again without it.
 */
export async function expandPage(
  source: PageSource,
  accountId: number,
  json: Json<unknown[]>,
  versions: boolean,
  expansions: readonly Expansion[],
  now: number,
  at?: ReadAt,
): Promise<ExpandedPage> {
  const items = elementTexts(json);
  const texts = versions ? items.map((item) => item.slice(rowAt(item), -1)) : items;
  const names = ['id', ...expansions.filter((expansion) => expansion.kind === 'to_one').map((expansion) => expansion.field)];
  const rows = texts.map((text, index) => {
    const numbers = numbersOf(text, names, EXPANDED);
    if (numbers) return numbers;
    const row = JSON.parse(text) as Fields;
    delete row[EXPANDED];
    texts[index] = JSON.stringify(row);
    return row;
  });
  const expanded = await expandedTexts(source, accountId, rows, expansions, now, at);
  const spliced = texts.map((text, index) => withExpanded(text, expanded[index]));
  const answered = versions ? items.map((item, index) => `${item.slice(0, rowAt(item))}${spliced[index]}}`) : spliced;
  return { json: `[${answered.join(',')}]`, last: texts.at(-1) };
}

/** Where the row starts in a versioned page's item (openapi.yaml, VersionedRow: `{"etag":…,"row":{…}}`), whose ETag never holds `"row":`. */
const rowAt = (item: string) => item.indexOf('"row":') + '"row":'.length;

/** `row` as JSON text with `expanded` as its member EXPANDED (none without): a stored field of that name is never answered as an expansion. */
function rowText(row: Fields, expanded: string | undefined): string {
  delete row[EXPANDED];
  return withExpanded(JSON.stringify(row), expanded);
}

/** A row's JSON text `text` (holding no member EXPANDED) with `expanded` set in as that member (none without). */
const withExpanded = (text: string, expanded: string | undefined) =>
  expanded === undefined ? text : `${text.slice(0, -1)}${text === '{}' ? '' : ','}"${EXPANDED}":${expanded}}`;

/**
 * The member EXPANDED of each of `rows` as JSON text, in their order: each of `expansions` read for all of
 * them at once (with `at`, PageMoved when `rows` have changed since).
 */
async function expandedTexts(
  source: PageSource,
  accountId: number,
  rows: Fields[],
  expansions: readonly Expansion[],
  now: number,
  at?: ReadAt,
): Promise<string[]> {
  const members: string[][] = rows.map(() => []);
  const cuts: string[][] = rows.map(() => []);
  for (const asked of expansions) {
    // A filter through relations of its own, bound once for every row it is read for.
    const filter = await bindRelations(relatedReadsOf(source), accountId, asked.collection, asked.filter);
    const expansion = {
      ...asked,
      filter: await bindSearch((sql, params) => source.read(sql, params, 'point'), accountId, asked.collection, filter),
    };
    const name = JSON.stringify(expansion.name);
    if (expansion.kind === 'to_one') {
      const found = await readRelated(
        source,
        accountId,
        expansion,
        [...new Set(rows.map((row) => row[expansion.field]).filter(isId))],
        now,
        at,
      );
      rows.forEach((row, index) => {
        const value = row[expansion.field];
        members[index].push(`${name}:${(isId(value) && found.get(value)?.json) || 'null'}`);
      });
      continue;
    }
    const found = await readRelated(source, accountId, expansion, [...new Set(rows.map((row) => row.id as number))], now, at);
    rows.forEach((row, index) => {
      const read = found.get(row.id as number);
      members[index].push(`${name}:[${read?.json ?? ''}]`);
      if (read && read.n > expansion.limit) cuts[index].push(expansion.name);
    });
  }
  return rows.map((_, index) => {
    const cut = cuts[index].length > 0 ? [`"${CUT}":${JSON.stringify(cuts[index])}`] : [];
    return `{${[...members[index], ...cut].join(',')}}`;
  });
}

/**
 * By each of `keys`, its related rows (readLevel), as the caller may see them: masked, their own
 * expansions set into them, only their selected fields.
 */
async function readRelated(
  source: PageSource,
  accountId: number,
  expansion: Expansion,
  keys: number[],
  now: number,
  at?: ReadAt,
): Promise<ByKey> {
  const found = await readLevel(source, accountId, expansion, keys, now, at);
  const { mask, select } = expansion;
  for (const related of found.values()) if (mask) related.json = mask(`[${related.json}]`).slice(1, -1);
  const groups = [...found.values()];
  if (expansion.expand.length === 0 && !select && !groups.some(({ json }) => json.includes(`"${EXPANDED}"`))) return found;
  const rows = groups.map(({ json }) => JSON.parse(`[${json}]`) as Fields[]);
  const all = rows.flat();
  const expanded = expansion.expand.length === 0 ? [] : await expandedTexts(source, accountId, all, expansion.expand, now);
  let next = 0;
  groups.forEach((related, index) => {
    related.json = rows[index]
      .map((row) => {
        if (select) selectIn(row, select);
        return rowText(row, expanded[next++]);
      })
      .join(',');
  });
  return found;
}

/**
 * By each of `keys`, the related rows of a relation in one statement (PageSource.relatedRows): a to-one's
 * row by its id; a to-many's rows naming it, through the relation field's sort index, in the expansion's
 * order, its limit and one more (when the collection has no such index, a second statement reads them by
 * the field of each row). With `at`, PageMoved when the rows holding the keys have changed since `at.seq`.
 */
async function readLevel(
  source: PageSource,
  accountId: number,
  expansion: Expansion,
  keys: number[],
  now: number,
  at?: ReadAt,
): Promise<ByKey> {
  const found = new Map<number, Related>();
  if (keys.length === 0) return found;
  const toMany = expansion.kind === 'to_many';
  const read: RelatedRead = {
    collection: byName(accountId, expansion.collection),
    keys,
    by: toMany ? { index: expansion.field } : 'id',
    where: expansion.filter && source.filterSql(expansion.filter),
    order: toMany ? expansion.order : BY_ID,
    each: toMany ? expansion.limit + 1 : 1,
    now,
    keysSeq: at?.collection.lastSeq,
  };
  let parts = await readParts(source, read);
  if (parts.some((part) => part.k === null)) {
    // No sort index of the field (the collection has as many as it may), or no collection (404).
    const { id } = await lookUpIndex(source, accountId, expansion.collection, [expansion.field]);
    parts = await readParts(source, { ...read, collection: byId(id), by: { field: expansion.field } });
  }
  let chars = 0;
  for (const part of parts) {
    if (at && part.k !== null && Number(part.k) === 0) {
      if (part.n === null || Number(part.n) !== at.seq) throw new PageMoved();
      continue;
    }
    const n = Number(part.n);
    // No text for rows that are there: PostgreSQL found them longer than a page may be.
    if (part.json === null && n > 0) throw pageTooLarge();
    // The row past the limit, read to tell that the rows were cut, is not answered.
    const json = toMany && n > expansion.limit ? withoutLast(part.json ?? '') : (part.json ?? '');
    chars += json.length;
    if (chars > MAX_PAGE_BYTES) throw pageTooLarge();
    found.set(Number(part.k), { n, json });
  }
  return found;
}

function readParts(source: PageSource, read: RelatedRead): Promise<RelatedPart[]> {
  const { sql, params } = source.relatedRows(read);
  return source.read<RelatedPart>(sql, params, 'related');
}

const BY_ID: SortKey[] = [{ field: 'id', direction: 'asc' }];

/** Keeps of `row` its id, the fields `select` names, and its expansions. */
function selectIn(row: Fields, select: readonly string[]): void {
  for (const name of Object.keys(row)) if (name !== 'id' && name !== EXPANDED && !select.includes(name)) delete row[name];
}
