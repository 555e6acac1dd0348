// The SQL each dialect runs, whole, for generated/sql/{sqlite,postgres}.sql: the statements of
// src/db/engine/sql/ (both dialects) and of the dialect's own sql/, each under its name, those made per
// shape (a page's direction, a patch's number of fields) once for each shape. A reader finds here the
// SQL of any request; the code that runs it names the same constants.

import type { SearchSql } from '../src/db/engine/dialect.ts';
import type { AggregateSource, PageSource } from '../src/db/engine/read-port.ts';
import * as accounts from '../src/db/engine/sql/accounts.ts';
import * as collections from '../src/db/engine/sql/collections.ts';
import * as events from '../src/db/engine/sql/events.ts';
import { byId, byName, type KeyRange, type LivePage, withinIndex } from '../src/db/engine/sql/pages.ts';
import * as reads from '../src/db/engine/sql/reads.ts';
import * as rows from '../src/db/engine/sql/rows.ts';
import * as rules from '../src/db/engine/sql/rules.ts';
import { raw } from '../src/db/engine/sql/template.ts';
import * as postgresCollections from '../src/db/postgres/sql/collections.ts';
import * as postgresEngine from '../src/db/postgres/sql/engine.ts';
import * as postgresEvents from '../src/db/postgres/sql/events.ts';
import * as postgresReads from '../src/db/postgres/sql/reads.ts';
import * as postgresRows from '../src/db/postgres/sql/rows.ts';
import { searchSql as postgresSearchSql } from '../src/db/postgres/sql/search.ts';
import * as sqliteCollections from '../src/db/sqlite/sql/collections.ts';
import * as sqliteEngine from '../src/db/sqlite/sql/engine.ts';
import * as sqliteEvents from '../src/db/sqlite/sql/events.ts';
import * as sqliteReads from '../src/db/sqlite/sql/reads.ts';
import * as sqliteRows from '../src/db/sqlite/sql/rows.ts';
import { searchSql as sqliteSearchSql } from '../src/db/sqlite/sql/search.ts';
import type { AggregateQuery } from '../src/query/aggregate.ts';
import type { Position } from '../src/query/cursor.ts';
import type { Direction } from '../src/query/order.ts';

type Listing = [name: string, sql: string][];

/** The statements both dialects run, of every area. */
const shared = { ...accounts, ...collections, ...events, ...reads, ...rows, ...rules };
/** SQLite's own statements, of every area. */
const sqlite = { ...sqliteCollections, ...sqliteEngine, ...sqliteEvents, ...sqliteReads, ...sqliteRows };
/** PostgreSQL's own statements, of every area. */
const postgres = { ...postgresCollections, ...postgresEngine, ...postgresEvents, ...postgresReads, ...postgresRows };

const directions: Direction[] = ['asc', 'desc'];
const ranges: KeyRange[] = ['all', 'present', 'missing'];
/** Places in a sort index's order, of each kind a page after one reads differently. */
const places: [string, Position][] = [
  ['a number', { values: [{ rank: 1, scalar: 2.5 }], id: 7 }],
  ['a string', { values: [{ rank: 2, scalar: 'a' }], id: 7 }],
  ['an object', { values: [{ rank: 4, scalar: null }], id: 7 }],
  ['a missing value', { values: [{ rank: 5, scalar: null }], id: 7 }],
];
/** The expiry now a listed statement binds (any: its text is the same). */
const NOW = 0;
const page = (field: string, direction: Direction): LivePage => ({ limit: 50, offset: 0, order: [{ field, direction }], now: NOW });
/** A page of a cursor's walk: ordered by two fields, after the place of a row whose first is a number and second a string. */
const walk = (direction: Direction): LivePage => ({
  now: NOW,
  limit: 50,
  offset: 0,
  order: [
    { field: 'n', direction },
    { field: 's', direction: 'asc' },
  ],
  after: {
    values: [
      { rank: 1, scalar: 1 },
      { rank: 2, scalar: 'a' },
    ],
    id: 1,
  },
});

/** A dialect's statements of search indexes (docs/search.md), a search of two words, the last a prefix, in a filter. */
const searchListing = (search: SearchSql): Listing => [
  ['searchSql.put', search.put],
  ['searchSql.removeAll', search.removeAll],
  ['searchSql.match (in a filter of the rows r)', search.match('r')],
  ['searchSql.query (its binding, of two words)', search.query(['17_red'], '17_sho')],
];

/** Two events of a change as a dialect's insertEventsSql writes them: an update's, and a delete's that expired. */
const eventsListing = (events: Pick<typeof sqliteEvents, 'insertEventsSql'>): Listing => {
  const rows = [
    { id: 1, json: '{"id":1}', previous: '{"id":1,"a":0}' },
    { id: 2, json: '{"id":2}' },
  ];
  const write = { collectionId: 1, first: 1, at: '2026-01-01T00:00:00.000Z', rows };
  return [
    ['insertEventsSql(2 events)', events.insertEventsSql({ ...write, type: 'update' }).sql],
    ['insertEventsSql(2 events, with a reason)', events.insertEventsSql({ ...write, type: 'delete', reason: 'expired' }).sql],
  ];
};

/** The statements both dialects run, with the clause that orders text by code point on the dialect. */
const sharedListing = (collate: string): Listing => [
  ['advanceSql', shared.advanceSql],
  ['lockAccountSql', shared.lockAccountSql],
  ['createCollectionSql', shared.createCollectionSql],
  ['collectionSql', shared.collectionSql],
  ['deleteRowSql', shared.deleteRowSql],
  ['deleteSortKeysSql', shared.deleteSortKeysSql],
  ['matchedRowsSql(a filter)', shared.matchedRowsSql('<filter>')],
  ['matchedByIdSql(ids, a condition)', shared.matchedByIdSql('<rowIdsSql>', '<condition>')],
  ['deleteRowsByIdSql(ids)', shared.deleteRowsByIdSql('<rowIdsSql>')],
  ['deleteKeysByIdSql(ids)', shared.deleteKeysByIdSql('<keyRowIdsSql>')],
  ['setSortedSql', shared.setSortedSql],
  ['presentCountSql', shared.presentCountSql(1, 0, NOW).sql],
  ['listCollectionsSql', shared.listCollectionsSql(collate)],
  ['getCollectionSql', shared.getCollectionSql],
  ['collectionIdSql', shared.collectionIdSql],
  ...shared.deleteCollectionSqls.map((sql, index): [string, string] => [`deleteCollectionSqls[${index}]`, sql]),
  ['ensureAccountSql', shared.ensureAccountSql],
  ['planExistsSql', shared.planExistsSql],
  ['setAccountPlanSql', shared.setAccountPlanSql],
  ['accountByNameSql', shared.accountByNameSql],
  ['accountByIdSql', shared.accountByIdSql],
  ['insertKeySql', shared.insertKeySql],
  ['listKeysSql(every account)', shared.listKeysSql(collate, false)],
  ['listKeysSql(one account)', shared.listKeysSql(collate, true)],
  ['listAccountKeysSql', shared.listAccountKeysSql],
  ['revokeKeysSql', shared.revokeKeysSql],
  ['revokeAccountKeySql', shared.revokeAccountKeySql],
  ['keyOfHashOrPrefixSql', shared.keyOfHashOrPrefixSql],
  ['liveKeyHashesSql(2)', shared.liveKeyHashesSql(2)],
  ['principalSql', shared.principalSql],
  ['noteKeyUseSql', shared.noteKeyUseSql],
  ['listPlansSql', shared.listPlansSql(collate)],
  ['setPlanSql(keeping the rate)', shared.setPlanSql(false)],
  ['setPlanSql(with a rate)', shared.setPlanSql(true)],
  ['accountPlanSql', shared.accountPlanSql],
  ['readUsageSql', shared.readUsageSql],
  ['addUsageSql', shared.addUsageSql],
  ['feedStartSql', shared.feedStartSql],
  ['latestSeqSql', shared.latestSeqSql],
  ['boundedEventsSql', shared.boundedEventsSql],
  ['eventsSql', shared.eventsSql],
  ['onceAnswerSql', shared.onceAnswerSql],
  ['recordOnceSql', shared.recordOnceSql],
  ['collectionsAfterSql', shared.collectionsAfterSql],
  ['oldestEventsSql', shared.oldestEventsSql],
  ['pruneEventsSql', shared.pruneEventsSql],
  ['exportedCollectionSql', shared.exportedCollectionSql],
  ['exportRowsSql', shared.exportRowsSql],
  ['importAdvanceSql', shared.importAdvanceSql],
  ['lastRowIdSql', shared.lastRowIdSql],
];

/** A dialect's pages in one direction: ordered whole, through a sort index, filtered, after a place. */
function pageListing(
  source: Pick<PageSource, 'orderedPage' | 'filteredSortedPage' | 'sortedPage' | 'sortedPageAfter'>,
  order: Direction,
): Listing {
  const plain = sortedListing(source, order, false);
  return [
    [`orderedPage(by id, ${order})`, source.orderedPage(byName(1, 'c'), page('id', order)).sql],
    [`orderedPage(by a field, ${order})`, source.orderedPage(byName(1, 'c'), page('n', order)).sql],
    [
      `orderedPage(by id, after a place, ${order})`,
      source.orderedPage(byName(1, 'c'), { ...page('id', order), after: { values: [null], id: 1 } }).sql,
    ],
    [`orderedPage(by two fields, after a place, ${order} then asc)`, source.orderedPage(byName(1, 'c'), walk(order)).sql],
    [
      `orderedPage(filtered, through a sort index, ${order})`,
      source.orderedPage(
        byId(1),
        { ...page('n', order), filter: { kind: 'and', filters: [] } },
        withinIndex(byId(1), 0, raw('<bounds>'), raw('<filter>')),
      ).sql,
    ],
    [
      `filteredSortedPage(${order})`,
      source.filteredSortedPage({ collectionId: 1, slot: 0, order, bounds: raw('<bounds>') }, raw('<filter>'), 50, 0, NOW).sql,
    ],
    ...plain,
    // Where the dialect writes a page of a collection with a time to live otherwise.
    ...sortedListing(source, order, true).filter(([, text], index) => text !== plain[index][1]),
  ];
}

/** The statements of pages through a sort index in `order`, of a collection last seen with a time to live when `expiring`. */
function sortedListing(source: Pick<PageSource, 'sortedPage' | 'sortedPageAfter'>, order: Direction, expiring: boolean): Listing {
  const collection = { id: 1, expiring };
  const of = expiring ? ', of a collection with a time to live' : '';
  return [
    ...ranges.map((range): [string, string] => [
      `sortedPage(${order}, ${range}${of})`,
      source.sortedPage(collection, 0, order, range, 50, 0, NOW).sql,
    ]),
    ...ranges.map((range): [string, string] => [
      `sortedPage(${order}, ${range}, past an offset${of})`,
      source.sortedPage(collection, 0, order, range, 50, 100, NOW).sql,
    ]),
    ...places.map(([kind, place]): [string, string] => [
      `sortedPageAfter(${order}, after ${kind}${of})`,
      source.sortedPageAfter(collection, 0, order, place, 50, NOW)?.sql ?? '',
    ]),
  ];
}

/**
 * The rows related to a page's, for a relation of the whole page: a to-one's by id, a to-many's through a
 * sort index or by its field, ordered by a field; and where the dialect reads them so, a page by id with a
 * to-one's rows set in by its own statement.
 */
const relatedListing = (source: Pick<PageSource, 'relatedRows' | 'pageWithRelated'>): Listing => {
  const read = { collection: byId(1), keys: [1, 2], where: raw('<filter>'), order: [], each: 1, now: NOW };
  const many = { ...read, order: [{ field: 'n', direction: 'desc' as const }], each: 11 };
  return [
    ['relatedRows(to-one, by id)', source.relatedRows({ ...read, by: 'id' }).sql],
    ['relatedRows(to-many, through a sort index, by a field desc)', source.relatedRows({ ...many, by: { index: 'post_id' } }).sql],
    ['relatedRows(to-many, by the field of each row, by a field desc)', source.relatedRows({ ...many, by: { field: 'post_id' } }).sql],
    ...(source.pageWithRelated
      ? [
          [
            'pageWithRelated(by id, asc, one to-one)',
            source.pageWithRelated(byName(1, 'c'), page('id', 'asc'), [
              { name: 'author', collection: byName(1, 'people'), field: 'author_id', where: raw('<filter>') },
            ]).sql,
          ] as [string, string],
          [
            'pageWithRelated(by id, asc, a to-one, then a to-many by id, its limit 10)',
            source.pageWithRelated(byName(1, 'c'), page('id', 'asc'), [
              { name: 'author', collection: byName(1, 'people'), field: 'author_id', where: raw('<filter>') },
              { name: 'comments', collection: byName(1, 'comments'), field: 'post_id', many: { direction: 'asc', limit: 10 } },
            ]).sql,
          ] as [string, string],
        ]
      : []),
  ];
};

/** An aggregate of every kind, grouped by two fields, filtered; and the count that reads a sort index's keys alone. */
const aggregate: AggregateQuery = {
  groupBy: ['status', 'owner'],
  aggregates: [
    { alias: 'n', op: 'count' },
    { alias: 'kinds', op: 'count_distinct', field: 'tag' },
    { alias: 'total', op: 'sum', field: 'points' },
    { alias: 'mean', op: 'avg', field: 'points' },
    { alias: 'first', op: 'min', field: 'due' },
    { alias: 'last', op: 'max', field: 'due' },
  ],
  order: [],
  limit: 100,
};
const aggregateListing = (source: Pick<AggregateSource, 'aggregateSql'>): Listing => [
  [
    'aggregateSql(grouped by two fields, every aggregate, filtered)',
    source.aggregateSql(byName(1, 'c'), aggregate, raw('<filter>'), 100_001, NOW).sql,
  ],
  [
    'aggregateSql(one group, a count)',
    source.aggregateSql(byName(1, 'c'), { ...aggregate, groupBy: [], aggregates: [aggregate.aggregates[0]] }, undefined, 100_001, NOW).sql,
  ],
  ['keyCountSql', shared.keyCountSql(byId(1), 0, raw('<bounds>'), NOW).sql],
];

function sqliteListing(): Listing {
  return [
    ...sharedListing(''),
    ...eventsListing(sqlite),
    ...aggregateListing(sqlite),
    ['rowsSql', sqlite.rowsSql],
    ['patchedRowSql', sqlite.patchedRowSql],
    ...directions.flatMap((order) => pageListing(sqlite, order)),
    ...relatedListing(sqlite),
    // SQLite reads a field by a JSON path; a name no path spells is read another way.
    ...directions.map((order): [string, string] => [
      `orderedPage(by a field no JSON path spells, ${order})`,
      sqlite.orderedPage(byName(1, 'c'), page('a"b', order)).sql,
    ]),
    ['insertSql', sqlite.insertSql],
    ['onceAnswersSql', sqlite.onceAnswersSql],
    ['pruneOnceSql', sqlite.pruneOnceSql],
    ...Array.from(
      { length: sqlite.MAX_FIELDS_BY_PATH + 1 },
      (_, n): Listing => [
        [`patchSql(${n} fields, a patch alone)`, sqlite.patchSql(n, 1)],
        [`patchSql(${n} fields, a group)`, sqlite.patchSql(n, 2)],
      ],
    ).flat(),
    ['keysSql(rows by id range)', sqlite.keysSql('n', 'r.id between ? and ?', 1).sql],
    ['keysSql(rows written after a seq)', sqlite.keysSql('n', `r.id in ${sqlite.touchedRows}`, 1).sql],
    ['keysSql(a pair, rows by id range)', sqlite.keysSql(['f', 'n'], 'r.id between ? and ?', 1).sql],
    ['carryTextsSql', sqlite.carryTextsSql],
    ['countersSql', sqlite.countersSql],
    ['dropKeysFromSlotSql', sqlite.dropKeysFromSlotSql],
    ['dropSlotKeysSql', sqlite.dropSlotKeysSql],
    ['dropTouchedKeysSql', sqlite.dropTouchedKeysSql],
    ['oldestEventSql', sqlite.oldestEventSql],
    ['importRowsSql', sqlite.importRowsSql],
    ['uniqueKeySql.fill', sqlite.uniqueKeySql.fill],
    ['uniqueKeySql.holders', sqlite.uniqueKeySql.holders],
    ['dropStringKeysSql', sqlite.dropStringKeysSql],
    ...searchListing(sqliteSearchSql),
    ...sqlite.knexTablesSql.map((sql, index): [string, string] => [`knexTablesSql[${index}]`, sql]),
    // The writer's views and triggers, made when its connection opens: one statement each.
    ...(sqlite.sqliteProcedures + sqlite.uniqueFillsProcedure)
      .split(/;\s*(?=create temp )/)
      .map((statement): [string, string] => [`writer setup: ${/create temp \w+ if not exists (\w+)/.exec(statement)?.[1]}`, statement]),
  ];
}

function postgresListing(): Listing {
  return [
    ...sharedListing(' collate "C"'),
    ...eventsListing(postgres),
    ...aggregateListing(postgres),
    ['getRowSql', postgres.getRowSql],
    ['advanceReadingRowSql', postgres.advanceReadingRowSql],
    ['updateRowSql', postgres.updateRowSql],
    ['updateRowsSql', postgres.updateRowsSql],
    ['notifySql', postgres.notifySql],
    ['holdOnceSql', postgres.holdOnceSql],
    ['pruneOnceSql', postgres.pruneOnceSql],
    ...directions.flatMap((order) => pageListing(postgres, order)),
    ...relatedListing(postgres),
    ['insertBatchSql', postgres.insertBatchSql],
    ['insertBatchWithAnswersSql', postgres.insertBatchWithAnswersSql],
    ['namingInsertBatchSql', postgres.namingInsertBatchSql],
    ['searchedInsertBatchSql', postgres.searchedInsertBatchSql],
    ['searchedInsertBatchWithAnswersSql', postgres.searchedInsertBatchWithAnswersSql],
    ['wordedInsertBatchSql', postgres.wordedInsertBatchSql],
    ...searchListing(postgresSearchSql),
    ['keysSql(rows by id range)', postgres.keysSql('n', 1).sql],
    ['keysSql(rows listed by id, replacing their keys)', postgres.keysSql('n', 1, postgres.idList, true).sql],
    ['keysSql(a pair, rows by id range)', postgres.keysSql(['f', 'n'], 1).sql],
    ['importRowsSql', postgres.importRowsSql],
    ['carryTextsSql', postgres.carryTextsSql],
    ['uniqueKeySql.fill', postgres.uniqueKeySql.fill],
    ['uniqueKeySql.holders', postgres.uniqueKeySql.holders],
  ];
}

/** The listing of a dialect as an .sql file, each statement under a comment with its name. */
export function sqlListing(dialect: 'sqlite' | 'postgres'): string {
  const listing = dialect === 'sqlite' ? sqliteListing() : postgresListing();
  const statements = listing.map(([name, sql]) => `-- ${name}\n${dedent(sql).trim()};\n`);
  return `-- Generated by \`npm run generate\` from src/db/engine/sql/ and src/db/${dialect}/sql/. Do not edit by hand.
-- Every statement the service runs on ${dialect === 'sqlite' ? 'SQLite' : 'PostgreSQL'}, under the name the code gives it (the
-- schema's migrations aside: src/db/engine/migrations.ts). Every value a client sends is a binding (?), never
-- part of the text.

${statements.join('\n')}`;
}

/** The text with the indentation its lines share after the first taken off. */
function dedent(sql: string): string {
  const lines = sql.split('\n');
  const indents = lines
    .slice(1)
    .filter((line) => line.trim() !== '')
    .map((line) => /^ */.exec(line)?.[0].length ?? 0);
  const common = Math.min(...indents, Number.POSITIVE_INFINITY);
  if (!Number.isFinite(common) || common === 0) return sql;
  return [lines[0], ...lines.slice(1).map((line) => line.slice(Math.min(common, /^ */.exec(line)?.[0].length ?? 0)))].join('\n');
}
