// What each HTTP measurement sends, and to which server. The load worker (load.ts) builds its autocannon
// requests from here; the orchestrator (run.ts) resolves the server to its url.
import { randomUUID } from 'node:crypto';
import type { Request } from 'autocannon';
import { batchOf, benchRow, collections, corpusRow, FULL_PAGE_TAG, linkedRow, personRow, typedRow, VOCABULARY } from './seed.ts';
import type { Settings } from './settings.ts';

/** The processes a workload can be aimed at (see run.ts). */
export type ServerName =
  | 'memory'
  | 'sqlite'
  | 'sqlite-patch'
  | 'rowbase'
  | 'rowbase-million'
  | 'rowbase-corpus'
  | 'rowbase-metering-on'
  | 'rowbase-metering-off'
  | 'rowbase-metrics'
  | 'rowbase-postgres'
  | 'rowbase-postgres-million'
  | 'rowbase-postgres-corpus'
  | 'rowbase-changes'
  | 'postgres-read';

/** What the orchestrator hands one load worker, as JSON in its first argument. */
export interface LoadJob {
  workload: string;
  url: string;
  /** The secret key; a publishable one for a workload of an app's user (HttpWorkload.endUser). */
  key: string;
  /** With a publishable key, the end user's token (end-user.ts), sent beside it. */
  token?: string;
  settings: Settings;
}

export interface HttpWorkload {
  server: ServerName;
  /** Rows each request reads or writes: the table reports rows/s from it. */
  rowsPerRequest(settings: Settings): number;
  /** The requests to send; worked out before the warm-up, against the server itself if need be. */
  requests(job: LoadJob): Request[] | Promise<Request[]>;
  /** The load generator's connections, when not settings.connections: fewer for a request that reads a whole collection. */
  connections?: number;
  /**
   * Seconds of its measurement and of its warm-up, when not the settings': longer, and none, for a request
   * of seconds, which a short window would not see answered, and a warm-up would leave running into it.
   */
  durationSeconds?: number;
  warmupSeconds?: number;
  /**
   * Sent as an app's user sends it (issue 53): the account's publishable key in `x-api-key` and the user's
   * token in `Authorization` (end-user.ts), not the secret key; its server and data are its twin's. Default false.
   */
  endUser?: boolean;
}

/**
 * The job's key, as a server sends it (`Authorization: Bearer <secret key>`), or as an app does (the
 * publishable key in `x-api-key`, the user's token in `Authorization`).
 */
export const authHeaders = ({ key, token }: Pick<LoadJob, 'key' | 'token'>): Record<string, string> =>
  token === undefined ? { authorization: `Bearer ${key}` } : { 'x-api-key': key, authorization: `Bearer ${token}` };
const json = (job: LoadJob) => ({ ...authHeaders(job), 'content-type': 'application/json' });
const randomId = (rows: number) => 1 + Math.floor(Math.random() * rows);
const rowsPath = (collection: string) => `/v1/collections/${collection}/rows`;

/** GET one row by a random id among the seeded ones. */
const getRandomRow = (job: LoadJob): Request[] => [
  {
    method: 'GET',
    path: rowsPath(collections.rows),
    headers: json(job),
    setupRequest: (request) => ({ ...request, path: `${rowsPath(collections.rows)}/${randomId(job.settings.rows)}` }),
  },
];

/** GET one page of `pageSize` rows ordered by score, highest first, from `offset`. */
const listPage =
  (offset: (settings: Settings) => number) =>
  (job: LoadJob): Request[] => [
    {
      method: 'GET',
      path: `${rowsPath(collections.rows)}?limit=${job.settings.pageSize}&offset=${offset(job.settings)}&order_by=score&order=desc`,
      headers: json(job),
    },
  ];

/** The first page of a cursor walk of `collection`: `pageSize` rows by score, highest first (openapi.yaml, listRows `Link`). */
const walkStart = (job: LoadJob, collection: string) => `${rowsPath(collection)}?limit=${job.settings.pageSize}&order_by=score&order=desc`;

/**
 * GET the `page`-th page of a cursor walk of `collection` by score, highest first: its path is found
 * by following the Links of the pages before it, once, before the measurement.
 */
const cursorPage =
  (page: number, collection: string = collections.rows) =>
  async (job: LoadJob): Promise<Request[]> => {
    let path = walkStart(job, collection);
    for (let before = 1; before < page; before++) {
      const response = await fetch(`${job.url}${path}`, { headers: json(job) });
      await response.arrayBuffer();
      const next = /^<([^>]+)>; rel="next"$/.exec(response.headers.get('link') ?? '')?.[1];
      if (!next) throw new Error(`page ${before} of the walk has no next page (${response.status})`);
      path = next;
    }
    return [{ method: 'GET', path, headers: json(job) }];
  };

/**
 * GET a page of `pageSize` rows of `million` under `filter`, with `more` (the order). One filter, as
 * list reads one page: a filter of a value chosen anew for each request reads rows spread over the
 * whole file, and measures the page cache more than rowbase (BENCHMARKS.md).
 */
const filteredPage =
  (filter: object, more = '') =>
  (job: LoadJob): Request[] => [
    {
      method: 'GET',
      path: `${rowsPath(collections.million)}?limit=${job.settings.pageSize}&filter=${encodeURIComponent(JSON.stringify(filter))}${more}`,
      headers: json(job),
    },
  ];

const one = () => 1;

/** POST an aggregate query of `million` (openapi.yaml, aggregateRows). */
const aggregate =
  (body: object) =>
  (job: LoadJob): Request[] => [
    { method: 'POST', path: `/v1/collections/${collections.million}/aggregate`, headers: json(job), body: JSON.stringify(body) },
  ];
/** The grouped count and sum of every row of `million`: 100 groups (seed.ts, MILLION_KINDS). */
const groupedCountAndSum = aggregate({ group_by: ['kind'], aggregates: { rows: { count: {} }, score: { sum: 'score' } } });
/**
 * A grouped aggregate reads the whole collection, seconds each: two at a time (SQLite runs them one at a
 * time anyway), so that none waits past the load generator's timeout.
 */
const GROUPED_CONNECTIONS = 2;
/** Reported in the rows read a second (report.ts, ratedByRows): a fraction of a request a second reads as 0. */
const grouped = {
  rowsPerRequest: (settings: Settings) => settings.millionRows,
  requests: groupedCountAndSum,
  connections: GROUPED_CONNECTIONS,
  durationSeconds: 30,
  warmupSeconds: 0,
};

/** PATCH one field of a random row: its score, which the collection is indexed by, so its key moves. */
const patchRandomRow = (job: LoadJob): Request[] => [
  {
    method: 'PATCH',
    path: rowsPath(collections.rows),
    headers: json(job),
    setupRequest: (request) => ({
      ...request,
      path: `${rowsPath(collections.rows)}/${randomId(job.settings.rows)}`,
      body: JSON.stringify({ score: Math.floor(Math.random() * 1_000_000) }),
    }),
  },
];

/**
 * PATCH by filter the rows of a random range of ten scores (one row of `bench` on average, found through
 * its index on score: docs/api.md, "Changes by filter"), each given a random score as patch's row is.
 */
const patchRandomRange = (job: LoadJob): Request[] => [
  {
    method: 'PATCH',
    path: rowsPath(collections.rows),
    headers: json(job),
    setupRequest: (request) => {
      const from = Math.floor(Math.random() * 1_000_000);
      const filter = encodeURIComponent(JSON.stringify({ score: { $gte: from, $lt: from + 10 } }));
      return {
        ...request,
        path: `${rowsPath(collections.rows)}?filter=${filter}`,
        body: JSON.stringify({ score: Math.floor(Math.random() * 1_000_000) }),
      };
    },
  },
];

/** POST one batch of `batchSize` rows, on SQLite or on PostgreSQL. */
const insertBatch: Omit<HttpWorkload, 'server'> = {
  rowsPerRequest: (s) => s.batchSize,
  requests: (job) => [
    {
      method: 'POST',
      path: rowsPath(collections.batches),
      headers: json(job),
      body: JSON.stringify(batchOf(1, job.settings.batchSize)),
    },
  ],
};

/**
 * A batch (POST /v1/batch) of `batchOperations` single-row inserts, alternately into two collections, and
 * the same rows as one insert of them all into one: what a transaction of many writes costs against the
 * one statement of a plain batch (issue 44).
 */
const batchOfInserts: Omit<HttpWorkload, 'server'> = {
  rowsPerRequest: (s) => s.batchOperations,
  requests: (job) => {
    const operations = batchOf(1, job.settings.batchOperations).map((row, index) => ({
      op: 'insert',
      collection: index % 2 === 0 ? collections.inserts : collections.batches,
      rows: [row],
    }));
    return [{ method: 'POST', path: '/v1/batch', headers: json(job), body: JSON.stringify({ operations }) }];
  },
};
const insertAsOne: Omit<HttpWorkload, 'server'> = {
  rowsPerRequest: (s) => s.batchOperations,
  requests: (job) => [
    {
      method: 'POST',
      path: rowsPath(collections.inserts),
      headers: json(job),
      body: JSON.stringify(batchOf(1, job.settings.batchOperations)),
    },
  ],
};

/**
 * POST of one row, on SQLite or on PostgreSQL, each request carrying a UUID of its own in `header`.
 * insert-1 sends it in a header the service ignores, its keyed twin as the Idempotency-Key (as clients
 * send one), so that the two differ in that header's name alone: the load generator builds every
 * request of both as it sends it (autocannon reuses a request's bytes only when nothing changes them,
 * and that work shares the host's cores with the service), as it does get-row's and patch's. Into
 * `collection`, the bodies of `bodies()` in turn (insert-1's: one, of benchRow(1)).
 */
const insertOne = (
  header: string,
  collection: string = collections.inserts,
  bodies: (settings: Settings) => string[] = () => [JSON.stringify([benchRow(1)])],
): Omit<HttpWorkload, 'server'> => ({
  rowsPerRequest: one,
  requests: (job) => {
    const sent = bodies(job.settings);
    let next = 0;
    return [
      {
        method: 'POST',
        path: rowsPath(collection),
        headers: json(job),
        body: sent[0],
        setupRequest: (request) => ({
          ...request,
          headers: { ...request.headers, [header]: randomUUID() },
          body: sent[next++ % sent.length],
        }),
      },
    ];
  },
});
const plainInsertOne = insertOne('x-bench-request');
const keyedInsertOne = insertOne('idempotency-key');

/** Rows of `corpus` insert-1-search writes into `notes` in turn, each request's JSON text made before the warm-up. */
const SEARCHED_ROWS = 1000;
/**
 * insert-1 into `notes`, whose search index is over `title` and `body` (seed.ts, searchIndex): insert-1's
 * headers, and the first SEARCHED_ROWS rows of `corpus` in turn (about 30 words, 180 bytes against
 * insert-1's 91), so that the index takes words of a real text, not one row's again and again.
 */
const searchedInsertOne = insertOne('x-bench-request', collections.notes, () =>
  Array.from({ length: SEARCHED_ROWS }, (_, i) => JSON.stringify([corpusRow(i + 1)])),
);

/** Rows of `linked` insert-1-related writes in turn, each naming another person (seed.ts, linkedRow). */
const LINKED_ROWS = 1000;
/**
 * insert-1 into `linked`, whose one relation (`person`, restrict) names a row of `people`: insert-1's
 * headers and row, with the id of an existing person beside its fields, LINKED_ROWS persons in turn (issue 54).
 */
const relatedInsertOne = insertOne('x-bench-request', collections.linked, (settings) =>
  Array.from({ length: LINKED_ROWS }, (_, i) => JSON.stringify([linkedRow(i + 1, settings.people)])),
);

/** The path of the first page of `pageSize` posts (by id), expanding `expand` when given (issue 54). */
export const postsPath = (settings: Settings, expand?: string) =>
  `${rowsPath(collections.posts)}?limit=${settings.pageSize}${expand ? `&expand=${expand}` : ''}`;

/** GET the first page of posts: alone, with each post's author, or with each post's comments (10 each, the default limit). */
const postsPage = (expand?: string): Omit<HttpWorkload, 'server'> => ({
  rowsPerRequest: (s) => s.pageSize,
  requests: (job) => [{ method: 'GET', path: postsPath(job.settings, expand), headers: json(job) }],
});

/** Persons whose posts the filtered pages of posts ask for, in turn. */
const FILTERED_PERSONS = 1000;

/**
 * GET the first page of one person's posts, each request another person's: named by the post's own field
 * (`author_id`), or through the relation by the person's email, which a unique index of `people` holds
 * (`{"author": {"$match": {"email": …}}}`; issue 63: ≥ 0.25 × the former, side by side).
 */
const postsOfPerson = (through: 'field' | 'relation'): Omit<HttpWorkload, 'server'> => ({
  rowsPerRequest: (s) => Math.min(s.pageSize, Math.max(1, Math.round(s.posts / s.people))),
  requests: (job) =>
    Array.from({ length: Math.min(FILTERED_PERSONS, job.settings.people) }, (_, i) => {
      const person = 1 + ((i * 7919) % job.settings.people);
      const filter = through === 'field' ? { author_id: person } : { author: { $match: { email: personRow(person).email } } };
      return { method: 'GET', path: `${postsPath(job.settings)}&filter=${encodeURIComponent(JSON.stringify(filter))}`, headers: json(job) };
    }),
});

/** The order of search's page (issue 55: "its first 20 by relevance"). */
export const SEARCH_ORDER_BY = '_score';
/** Rows of search's page. */
export const SEARCH_PAGE = 20;
/**
 * The ranks (0-based, from, to excluded) of VOCABULARY that search's words are drawn from, uniformly:
 * past the hundred commonest words, which nearly every row holds, and within the thousand commonest, so
 * that a pair finds a page or more (docs/performance.md, "Search").
 */
export const SEARCH_BAND = { from: 100, to: 1000 } as const;
/**
 * Connections of search: a latency target, so a few searches at once, not a queue of 64. Four keep both
 * cores busy (SQLite's reads run on the driver's four threads; on PostgreSQL each on a backend of its
 * own), each search answered in its own time plus a short wait.
 */
export const SEARCH_CONNECTIONS = 4;

/** Two different words drawn at random from SEARCH_BAND of VOCABULARY, as a search: `w1 w2`. */
export function searchWords(): string {
  const draw = () => VOCABULARY[SEARCH_BAND.from + Math.floor(Math.random() * (SEARCH_BAND.to - SEARCH_BAND.from))];
  const first = draw();
  let second = draw();
  while (second === first) second = draw();
  return `${first} ${second}`;
}

/** The path of search's page of `corpus` for `words`. */
export const searchPath = (words: string) =>
  `${rowsPath(collections.corpus)}?filter=${encodeURIComponent(JSON.stringify({ $search: words }))}&order_by=${SEARCH_ORDER_BY}&limit=${SEARCH_PAGE}`;

/** GET the first SEARCH_PAGE rows of `corpus` holding two words of a random pair, each request its own pair. */
const searchCorpus: Omit<HttpWorkload, 'server'> = {
  rowsPerRequest: () => SEARCH_PAGE,
  connections: SEARCH_CONNECTIONS,
  requests: (job) => [
    {
      method: 'GET',
      path: searchPath(searchWords()),
      headers: json(job),
      setupRequest: (request) => ({ ...request, path: searchPath(searchWords()) }),
    },
  ],
};

/**
 * insert-1 into `typed`, whose schema has ten fields and whose `email` is unique (seed.ts, typedSchema):
 * each request's UUID in `X-Bench-Request`, as insert-1's, and in its row's email, so that every row is
 * valid and none collides. The row's JSON text is made once, around the UUID, so that the load generator
 * builds each request as it builds insert-1's, and joins three strings more.
 */
const typedInsertOne: Omit<HttpWorkload, 'server'> = {
  rowsPerRequest: one,
  requests: (job) => {
    const marker = '{{unique}}';
    const [before, after] = JSON.stringify([typedRow(1, marker)]).split(marker);
    return [
      {
        method: 'POST',
        path: rowsPath(collections.typed),
        headers: json(job),
        body: before + randomUUID() + after,
        setupRequest: (request) => {
          const unique = randomUUID();
          return { ...request, headers: { ...request.headers, 'x-bench-request': unique }, body: before + unique + after };
        },
      },
    ];
  },
};

/** get-row's and list's requests, on any server. */
const rowRead: Omit<HttpWorkload, 'server'> = { rowsPerRequest: one, requests: getRandomRow };
const firstPage: Omit<HttpWorkload, 'server'> = { rowsPerRequest: (s) => s.pageSize, requests: listPage(() => 0) };
/**
 * list as an app's user makes it: its rule's equality on `owner` holds every row of `bench` (the user's),
 * so the page reads the index on score and tests each row, as list reads it (docs/api.md, "Filters and indexes").
 */
const appPage: Omit<HttpWorkload, 'server'> = { ...firstPage, endUser: true };

export const httpWorkloads: Record<string, HttpWorkload> = {
  /** Baseline (a): node:http answering the same row from memory. */
  'baseline-memory': { server: 'memory', ...rowRead },
  /** Baseline (b): node:http reading the row through the sqlite3 driver, one prepared statement. */
  'baseline-sqlite': { server: 'sqlite', ...rowRead },
  /** Baseline (b) for patch: node:http running rowbase's patch statement through the sqlite3 driver, and nothing else. */
  'baseline-sqlite-patch': { server: 'sqlite-patch', rowsPerRequest: one, requests: patchRandomRow },
  'get-row': { server: 'rowbase', ...rowRead },
  /** get-row and list as an app's user makes them, with a publishable key, a token and a one-field rule (issue 53). */
  'get-row-app': { server: 'rowbase', ...rowRead, endUser: true },
  'list-app': { server: 'rowbase', ...appPage },
  'get-row-metering-on': { server: 'rowbase-metering-on', ...rowRead },
  'get-row-metering-off': { server: 'rowbase-metering-off', ...rowRead },
  /** get-row with metering on and METRICS_PORT set: beside get-row-metering-on, the cost of the metrics. */
  'get-row-metrics-on': { server: 'rowbase-metrics', ...rowRead },
  list: { server: 'rowbase', ...firstPage },
  'list-deep': { server: 'rowbase', rowsPerRequest: (s) => s.pageSize, requests: listPage((s) => s.deepOffset) },
  /** A cursor walk's first page and its hundredth, each read again and again: the second no slower than the first. */
  'cursor-page-1': { server: 'rowbase', rowsPerRequest: (s) => s.pageSize, requests: cursorPage(1) },
  'cursor-page-100': { server: 'rowbase', rowsPerRequest: (s) => s.pageSize, requests: cursorPage(100) },
  /** On 1,000,000 rows: a page under a selective equality (one tag of 20,000), and under a range of a tenth ordered by its field. */
  'filter-equal': { server: 'rowbase-million', rowsPerRequest: (s) => s.pageSize, requests: filteredPage({ tag: FULL_PAGE_TAG }) },
  'filter-range': {
    server: 'rowbase-million',
    rowsPerRequest: (s) => s.pageSize,
    requests: filteredPage({ score: { $gte: 500_000, $lt: 600_000 } }, '&order_by=score&order=desc'),
  },
  /**
   * On 1,000,000 rows (issue 46): the count of filter-equal's rows (its tag's keys counted, no row read),
   * beside filter-equal; and a grouped count and sum of every row, 100 groups, on each backend.
   */
  'aggregate-count-equal': {
    server: 'rowbase-million',
    rowsPerRequest: one,
    requests: aggregate({ filter: { tag: FULL_PAGE_TAG }, aggregates: { rows: { count: {} } } }),
  },
  'aggregate-grouped': { server: 'rowbase-million', ...grouped },
  'aggregate-grouped-postgres': { server: 'rowbase-postgres-million', ...grouped },
  /** cursor-page-1 and cursor-page-100 on 1,000,000 rows. */
  'million-cursor-page-1': { server: 'rowbase-million', rowsPerRequest: (s) => s.pageSize, requests: cursorPage(1, collections.million) },
  'million-cursor-page-100': {
    server: 'rowbase-million',
    rowsPerRequest: (s) => s.pageSize,
    requests: cursorPage(100, collections.million),
  },
  'insert-1': { server: 'rowbase', ...plainInsertOne },
  /** insert-1, each request with an Idempotency-Key of its own: what a key costs (its answer stored with the row). */
  'insert-1-idempotent': { server: 'rowbase', ...keyedInsertOne },
  /** insert-1 and its keyed twin against rowbase on PostgreSQL. */
  'insert-1-postgres': { server: 'rowbase-postgres', ...plainInsertOne },
  'insert-1-idempotent-postgres': { server: 'rowbase-postgres', ...keyedInsertOne },
  /** insert-1 into a collection with a schema of ten fields and a unique index: what they cost an insert, on each backend. */
  'insert-1-typed': { server: 'rowbase', ...typedInsertOne },
  'insert-1-typed-postgres': { server: 'rowbase-postgres', ...typedInsertOne },
  /**
   * Issue 55, on each backend: a two-word search of `corpus` (1,000,000 rows of about 30 words), its first
   * SEARCH_PAGE; and insert-1 into a collection with a search index over two fields.
   */
  search: { server: 'rowbase-corpus', ...searchCorpus },
  'search-postgres': { server: 'rowbase-postgres-corpus', ...searchCorpus },
  'insert-1-search': { server: 'rowbase', ...searchedInsertOne },
  'insert-1-search-postgres': { server: 'rowbase-postgres', ...searchedInsertOne },
  /** Issue 54, on each backend: insert-1 into a collection with one enforced relation. */
  'insert-1-related': { server: 'rowbase', ...relatedInsertOne },
  'insert-1-related-postgres': { server: 'rowbase-postgres', ...relatedInsertOne },
  /** Issue 54, on each backend: a page of 50 posts, and the same page expanding each post's author, or its 10 comments. */
  'list-posts': { server: 'rowbase', ...postsPage() },
  'list-posts-author': { server: 'rowbase', ...postsPage('author') },
  'list-posts-comments': { server: 'rowbase', ...postsPage('comments') },
  'list-posts-postgres': { server: 'rowbase-postgres', ...postsPage() },
  'list-posts-author-postgres': { server: 'rowbase-postgres', ...postsPage('author') },
  'list-posts-comments-postgres': { server: 'rowbase-postgres', ...postsPage('comments') },
  /** Issue 63, on each backend: one person's posts, by the relation's field, and through the relation by the person's email. */
  'list-posts-by-author': { server: 'rowbase', ...postsOfPerson('field') },
  'list-posts-match-author': { server: 'rowbase', ...postsOfPerson('relation') },
  'list-posts-by-author-postgres': { server: 'rowbase-postgres', ...postsOfPerson('field') },
  'list-posts-match-author-postgres': { server: 'rowbase-postgres', ...postsOfPerson('relation') },
  'insert-batch': { server: 'rowbase', ...insertBatch },
  /** insert-batch against rowbase on PostgreSQL (its ratio is to baseline (c), a bare pg client). */
  'insert-batch-postgres': { server: 'rowbase-postgres', ...insertBatch },
  patch: { server: 'rowbase', rowsPerRequest: one, requests: patchRandomRow },
  /** A change by filter of about one row through an index, beside patch, on each backend. */
  'patch-by-filter': { server: 'rowbase', rowsPerRequest: one, requests: patchRandomRange },
  'patch-postgres': { server: 'rowbase-postgres', rowsPerRequest: one, requests: patchRandomRow },
  'patch-by-filter-postgres': { server: 'rowbase-postgres', rowsPerRequest: one, requests: patchRandomRange },
  /** A batch of 100 single-row inserts over two collections, beside the same rows inserted as one request, on each backend. */
  'batch-100': { server: 'rowbase', ...batchOfInserts },
  'insert-100': { server: 'rowbase', ...insertAsOne },
  'batch-100-postgres': { server: 'rowbase-postgres', ...batchOfInserts },
  'insert-100-postgres': { server: 'rowbase-postgres', ...insertAsOne },
  /** Baseline (d): node:http reading the row from rowbase's PostgreSQL database through pg, one named statement. */
  'baseline-pg-get-row': { server: 'postgres-read', ...rowRead },
  /** Baseline (d) for list: the same page through the same sort index, one named statement. */
  'baseline-pg-list': { server: 'postgres-read', ...firstPage },
  /** get-row and list against rowbase on PostgreSQL, seeded as the SQLite one is (each judged by its (d)). */
  'get-row-postgres': { server: 'rowbase-postgres', ...rowRead },
  'list-postgres': { server: 'rowbase-postgres', ...firstPage },
  'get-row-app-postgres': { server: 'rowbase-postgres', ...rowRead, endUser: true },
  'list-app-postgres': { server: 'rowbase-postgres', ...appPage },
};

/**
 * Issue 54's cascade-1000 (cascade.ts), not an HTTP load: one client deleting, one request at a time, a row
 * of `parents` that `cascadeNaming` rows of `children` name, on the rowbase of each backend.
 */
export const cascadeWorkloads: Record<string, ServerName> = {
  'cascade-1000': 'rowbase',
  'cascade-1000-postgres': 'rowbase-postgres',
};

/** declaration-100 (declarations.ts), planned and applied onto a new account of the server, on each backend. */
export const declarationWorkloads: Record<string, ServerName> = {
  'declaration-100': 'rowbase',
  'declaration-100-postgres': 'rowbase-postgres',
};

/**
 * Issue 65's expiry workloads (expiry.ts), not an HTTP load: two collections of `expiryRows` rows, one
 * whose tenth expires over a minute, read side by side; then the sweeper's rate over a burst of expired
 * rows, and get-row's p99 while it sweeps; on the rowbase of each backend.
 */
export const expiryWorkloads: Record<string, ServerName> = {
  expiry: 'rowbase',
  'expiry-postgres': 'rowbase-postgres',
};

/**
 * Issue 63's idle server (idle-server.ts), not a load: the service started on an empty database of each
 * backend (not the seeded one: a server of its own), one collection made, then seconds of nothing.
 */
export const idleServerWorkloads: Record<string, 'sqlite' | 'postgres'> = {
  'idle-server': 'sqlite',
  'idle-server-postgres': 'postgres',
};

/** Whether the workload reads or writes the related rows (seed.ts, seedRelations): its server is seeded with them. */
export const usesRelations = (workload: string) =>
  workload in cascadeWorkloads || workload.startsWith('list-posts') || workload.startsWith('insert-1-related');

/** Whether the workload is measured only when a PostgreSQL server answers: baseline (c), the webhooks' on PostgreSQL, and those on its servers. */
export const needsPostgres = (workload: string) =>
  workload === 'baseline-postgres' ||
  cascadeWorkloads[workload] === 'rowbase-postgres' ||
  declarationWorkloads[workload] === 'rowbase-postgres' ||
  expiryWorkloads[workload] === 'rowbase-postgres' ||
  workload === 'webhook-latency-postgres' ||
  workload === 'webhook-throughput-postgres' ||
  idleServerWorkloads[workload] === 'postgres' ||
  ['rowbase-postgres', 'rowbase-postgres-million', 'rowbase-postgres-corpus', 'postgres-read'].includes(httpWorkloads[workload]?.server);
