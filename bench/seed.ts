// The data every measurement reads: one account `bench` on a plan without a rate limit, and the
// collection `bench` of `settings.rows` rows, each `{ score, name, text, owner }`, every one the bench
// user's (end-user.ts). Rows are a pure function of their id, so the in-memory baseline answers exactly
// what rowbase stores. Before the keyed inserts,
// the answers of Idempotency-Keys the account keeps. The typed collection's schema and its rows. The
// search corpus (issue 55) and its search index.
import pg from 'pg';
import { words as popularWords } from 'popular-english-words';
import sqlite3 from 'sqlite3';
import type { Settings } from './settings.ts';

export interface BenchRow {
  /** A whole number from 0 to 999,999, scattered so that ordering by it is not ordering by id. */
  score: number;
  name: string;
  text: string;
}

/**
 * The collections the workloads use: reads and patches, insert-1, insert-batch, insert-1-typed,
 * insert-1-search; the large one of filters and long walks; and the search corpus.
 */
export const collections = {
  rows: 'bench',
  inserts: 'inserts',
  batches: 'batches',
  typed: 'typed',
  notes: 'notes',
  million: 'million',
  corpus: 'corpus',
  changes: 'changes',
  people: 'people',
  posts: 'posts',
  comments: 'comments',
  linked: 'linked',
  parents: 'parents',
  children: 'children',
} as const;

/**
 * The plan of the bench account: no rate, and a quota no run comes near (a full run sends a few million
 * requests). Within V8's small integers (up to 2^31 − 1), as a real plan's quota is (free 10,000, pro
 * 1,000,000): at 10^12 every answer's RateLimit-Limit and -Remaining were doubles made into text the
 * slow way, which showed in a row read's CPU profile (rateLimitHeaders).
 */
export const plan = { name: 'bench', quota: 1_000_000_000, period: 'month' } as const;

const words = ['alpha', 'bravo', 'charlie', 'delta', 'echo', 'foxtrot', 'golf', 'hotel', 'india', 'juliet', 'kilo', 'lima'];

/** The fields of row `id` (1-based), as the workloads that write send them. */
export function benchRow(id: number): BenchRow {
  const h = scramble(id);
  const text = Array.from({ length: 8 }, (_, i) => words[(h >>> (i * 3)) % words.length]).join(' ');
  return { score: h % 1_000_000, name: `row ${id}`, text };
}

/**
 * The end user every row of `bench` belongs to: the `sub` of the token get-row-app and list-app send
 * (end-user.ts), whose rule reads the rows a user owns. All of them, so that a user's token reads the
 * rows the secret key's get-row and list read, and its page of 50 is theirs.
 */
export const BENCH_USER = 'bench-user';

/** Row `id` of `bench` as seeded: benchRow()'s fields and its owner. */
export const ownedRow = (id: number): BenchRow & { owner: string } => ({ ...benchRow(id), owner: BENCH_USER });

/** The distinct tags of the rows of `million`: an equality on one keeps about settings.millionRows / MILLION_TAGS rows. */
export const MILLION_TAGS = 20_000;

/** A tag of 80 rows of the first 1,000,000 of `million`, the most of any: a filter on it fills a page of 50. */
export const FULL_PAGE_TAG = 't14150';

/** The distinct kinds of the rows of `million`, which the grouped aggregates group by. */
export const MILLION_KINDS = 100;

/**
 * The fields of row `id` of `million`: benchRow()'s, a tag shared with about 1 in MILLION_TAGS rows, and
 * a kind shared with 1 in MILLION_KINDS.
 */
export function millionRow(id: number): BenchRow & { tag: string; kind: string } {
  return { ...benchRow(id), tag: `t${scramble(id ^ 0x5bd1e995) % MILLION_TAGS}`, kind: `k${scramble(id ^ 0x27d4eb2f) % MILLION_KINDS}` };
}

/** The teams fanout-rules' writer spreads its rows over (writer.ts): row `id`'s is fanoutTeam(id). */
export const FANOUT_TEAMS = 10;
export const fanoutTeam = (id: number) => `team-${id % FANOUT_TEAMS}`;

/** The claims of fanout-rules' subscriber `socket` (0-based): two teams of ten, whose rows its rule grants it (end-user.ts, fanoutRules). */
export function fanoutClaims(socket: number): { teams: string[] } {
  return { teams: [fanoutTeam(socket), fanoutTeam(socket + 3)] };
}

/**
 * The filter of fanout-filtered's subscriber `socket` (0-based), each different: a tenth of the scores
 * from its own start, or the names of a ninth of the rows. A row as benchRow() makes it matches about
 * one subscriber in five.
 */
export function fanoutFilter(socket: number): Record<string, unknown> {
  const from = (socket * 1000) % 1_000_000;
  return { $or: [{ score: { $gte: from, $lt: from + 100_000 } }, { name: { $prefix: `row ${1 + (socket % 9)}` } }] };
}

/** A 32-bit integer hash (Murmur3's finaliser): deterministic, and far from monotonic in `n`. */
function scramble(n: number): number {
  let h = n >>> 0;
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

/**
 * The schema of the collection `typed` (docs/schemas.md): ten fields as a service's users table might
 * declare them, each kind of check a row schema is written with: strings with a maxLength, an email,
 * integers with bounds, a boolean, an enum, a nested object, an array of strings, a date-time. `email`
 * is unique (typedIndex).
 */
export const typedSchema = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  type: 'object',
  required: ['name', 'email', 'age', 'score', 'active', 'plan', 'created_at'],
  additionalProperties: false,
  properties: {
    name: { type: 'string', minLength: 1, maxLength: 80 },
    email: { type: 'string', format: 'email', maxLength: 254 },
    age: { type: 'integer', minimum: 0, maximum: 150 },
    score: { type: 'integer', minimum: 0, maximum: 999_999 },
    active: { type: 'boolean' },
    plan: { enum: ['free', 'pro', 'team', 'enterprise'] },
    address: {
      type: 'object',
      required: ['city', 'country'],
      additionalProperties: false,
      properties: {
        street: { type: 'string', maxLength: 120 },
        city: { type: 'string', maxLength: 60 },
        country: { type: 'string', minLength: 2, maxLength: 2 },
      },
    },
    tags: { type: 'array', maxItems: 10, items: { type: 'string', maxLength: 20 } },
    created_at: { type: 'string', format: 'date-time' },
    bio: { type: 'string', maxLength: 500 },
  },
} as const;

/** The unique index of `typed` (POST /v1/collections/typed/indexes): no two rows with one email. */
export const typedIndex = { fields: ['email'], unique: true } as const;

/**
 * Row `id`'s fields (benchRow()'s values) as `typedSchema` has them, its email made of `unique`: the
 * row is valid when the email is, and collides with no other row whose `unique` differs.
 */
export function typedRow(id: number, unique: string): Record<string, unknown> {
  const { score, name, text } = benchRow(id);
  return {
    name,
    email: `${unique}@example.com`,
    age: id % 100,
    score,
    active: id % 2 === 1,
    plan: 'pro',
    address: { street: '1 Main Street', city: 'Springfield', country: 'US' },
    tags: text.split(' ').slice(0, 3),
    created_at: '2026-11-25T12:00:00.000Z',
    bio: text,
  };
}

/** The search index of `corpus` and of `notes` (docs/search.md): over both their fields. */
export const searchIndex = { type: 'search', fields: ['title', 'body'] } as const;

/**
 * The words of `corpus` (issue 55, "Speed"): the 5,000 most popular English words of the package
 * popular-english-words, most popular first, as ranked there.
 */
export const VOCABULARY: readonly string[] = popularWords.getMostPopular(5000);

/** Words of a corpus row's title and of its body. */
export const TITLE_WORDS = 5;
export const BODY_WORDS = 25;

/**
 * Zipf's law of exponent 1 over VOCABULARY: the word of rank r (1-based) drawn with a probability of
 * 1 / (r × H), H the sum of 1/r; here as the running totals of those probabilities, for a binary search.
 */
const zipfTotals = (() => {
  const totals = VOCABULARY.map((_, index) => 1 / (index + 1));
  for (let i = 1; i < totals.length; i++) totals[i] += totals[i - 1];
  return totals.map((total) => total / totals[totals.length - 1]);
})();

/** The word of VOCABULARY whose share of zipfTotals holds `u` (from 0 to 1). */
function zipfWord(u: number): string {
  let low = 0;
  let high = zipfTotals.length - 1;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if (zipfTotals[middle] > u) high = middle;
    else low = middle + 1;
  }
  return VOCABULARY[low];
}

/** A seeded pseudo-random generator of numbers from 0 to 1 (mulberry32): the same seed, the same numbers. */
function seeded(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = Math.imul(state ^ (state >>> 15), state | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/**
 * Row `id` of `corpus` (and what insert-1-search writes): a title of TITLE_WORDS words and a body of
 * BODY_WORDS, each word drawn by zipfWord() from a generator seeded with the id.
 */
export function corpusRow(id: number): { title: string; body: string } {
  const next = seeded(scramble(id ^ 0x9e3779b9));
  const draw = (count: number) => Array.from({ length: count }, () => zipfWord(next())).join(' ');
  return { title: draw(TITLE_WORDS), body: draw(BODY_WORDS) };
}

/** Person `id` of `people`. */
export const personRow = (id: number) => ({ name: `person ${id}`, email: `person${id}@example.com` });

/** The person (of `people` of them) who wrote post `id`, or whom row `id` of `linked` names: scattered over them all. */
export const personOf = (id: number, people: number) => 1 + (scramble(id ^ 0x1b873593) % people);

/** Post `id` of `posts`, naming its author among `people`. */
export const postRow = (id: number, people: number) => ({
  title: benchRow(id).name,
  text: benchRow(id).text,
  author_id: personOf(id, people),
});

/** Comment `id` of `comments`: the first `perPost` name post 1, the next post 2, and so on. */
export const commentRow = (id: number, perPost: number) => ({ text: benchRow(id).text, post_id: 1 + Math.floor((id - 1) / perPost) });

/** Row `id` of `linked` (insert-1-related): insert-1's fields, and a person of `people` it names. */
export const linkedRow = (id: number, people: number) => ({ ...benchRow(1), person_id: personOf(id, people) });

/**
 * The relations of the related rows (docs/relations.md), each declared of the first collection: a post's
 * author, a comment's post (deleting a post deletes its comments), insert-1-related's one relation, and
 * cascade-1000's parent, which deleting a parent cascades through.
 */
export const benchRelations = [
  [collections.posts, 'author', { field: 'author_id', collection: collections.people, on_delete: 'restrict', reverse: 'posts' }],
  [collections.comments, 'post', { field: 'post_id', collection: collections.posts, on_delete: 'cascade', reverse: 'comments' }],
  [collections.linked, 'person', { field: 'person_id', collection: collections.people, on_delete: 'restrict', reverse: 'linked' }],
  [collections.children, 'parent', { field: 'parent_id', collection: collections.parents, on_delete: 'cascade', reverse: 'children' }],
] as const;

/**
 * The related rows (issue 54) over HTTP: `people` (their emails uniquely indexed), `posts` naming them, `comments` naming the posts (fill()),
 * the empty `linked`, `parents` and `children`, then the relations between them (benchRelations), each
 * declared over the rows already in. Returns the seconds it took.
 */
export async function seedRelations(url: string, key: string, settings: Settings): Promise<number> {
  const started = performance.now();
  await fill(url, key, settings, collections.people, settings.people, personRow);
  // A person's email is unique (list-posts-match-author finds a person's posts through it).
  await send(url, key, 'POST', `/v1/collections/${collections.people}/indexes`, { fields: ['email'], unique: true });
  await fill(url, key, settings, collections.posts, settings.posts, (id) => postRow(id, settings.people));
  await fill(url, key, settings, collections.comments, settings.posts * settings.commentsPerPost, (id) =>
    commentRow(id, settings.commentsPerPost),
  );
  await createCollections(url, key, [collections.linked, collections.parents, collections.children]);
  for (const [collection, name, declaration] of benchRelations)
    await send(url, key, 'PUT', `/v1/collections/${collection}/relations/${name}`, declaration);
  return (performance.now() - started) / 1000;
}

/** Rows `first`..`first + count - 1`, as one request body. */
export const batchOf = (first: number, count: number): BenchRow[] => Array.from({ length: count }, (_, i) => benchRow(first + i));

/**
 * Creates the four collections over HTTP (`typed` with its schema and unique index), fills `bench` with
 * `settings.rows` rows, `batchSize` per request, one request at a time, and has it indexed by score, by owner and by the pair (owner, score).
 * Returns the seconds it took.
 */
export async function seedCollections(url: string, key: string, settings: Settings): Promise<number> {
  const started = performance.now();
  for (const name of [collections.rows, collections.inserts, collections.batches])
    await send(url, key, 'POST', '/v1/collections', { name });
  await send(url, key, 'POST', '/v1/collections', { name: collections.typed, schema: typedSchema });
  await send(url, key, 'POST', `/v1/collections/${collections.typed}/indexes`, typedIndex);
  await send(url, key, 'POST', '/v1/collections', { name: collections.notes });
  await send(url, key, 'POST', `/v1/collections/${collections.notes}/indexes`, searchIndex);
  for (let first = 1; first <= settings.rows; first += settings.batchSize) {
    const count = Math.min(settings.batchSize, settings.rows - first + 1);
    const rows = Array.from({ length: count }, (_, i) => ownedRow(first + i));
    const stored = (await send(url, key, 'POST', `/v1/collections/${collections.rows}/rows`, rows)) as { id: number }[];
    // The workloads pick ids 1..rows: the collection must be fresh.
    if (stored[0].id !== first) throw new Error(`seeding: expected id ${first}, got ${stored[0].id}`);
  }
  // The first page ordered by score makes the collection's sort index on it (src/db/collections/sort-indexes.ts), as a
  // production collection ordered by a field has: list reads through it, and every patch of a score
  // moves its key. Made here, every run measures list and patch with it, `--only=patch` too.
  await send(url, key, 'GET', `/v1/collections/${collections.rows}/rows?order_by=score&order=desc&limit=1`, undefined);
  // And the first filter by owner its index on owner, which the rule of the app's user (end-user.ts) reads
  // through: made here, every rowbase serves every workload with both, from its first request.
  const byOwner = encodeURIComponent(JSON.stringify({ owner: BENCH_USER }));
  await send(url, key, 'GET', `/v1/collections/${collections.rows}/rows?filter=${byOwner}&limit=1`, undefined);
  // And the first such filter with the order by score the pair (owner, score) (src/db/engine/sorted.ts),
  // which the app's user's pages read (list-app): made here too, so that every workload writes its keys.
  await send(url, key, 'GET', `/v1/collections/${collections.rows}/rows?filter=${byOwner}&order_by=score&order=desc&limit=1`, undefined);
  return (performance.now() - started) / 1000;
}

/**
 * Creates `collection` over HTTP and fills it with `rows` rows, `rowOf` of each id,
 * `batchSize` per request, two requests under way at a time (a server merges the inserts of one collection).
 */
async function fill(url: string, key: string, settings: Settings, collection: string, rows: number, rowOf: (id: number) => object) {
  await send(url, key, 'POST', '/v1/collections', { name: collection });
  const firsts = Array.from({ length: Math.ceil(rows / settings.batchSize) }, (_, i) => 1 + i * settings.batchSize);
  const insertNext = async (): Promise<void> => {
    for (let first = firsts.shift(); first !== undefined; first = firsts.shift()) {
      const count = Math.min(settings.batchSize, rows - first + 1);
      await send(
        url,
        key,
        'POST',
        `/v1/collections/${collection}/rows`,
        Array.from({ length: count }, (_, i) => rowOf(first + i)),
      );
    }
  };
  await Promise.all([insertNext(), insertNext()]);
}

/**
 * Creates `million` and fills it with `settings.millionRows` rows (fill()); then has it
 * indexed by score (as list's collection is) and by tag (its first filter by tag makes the index,
 * docs/api.md "Filters and indexes"), so that no measurement waits for an index. Returns the seconds it took.
 */
export async function seedMillion(url: string, key: string, settings: Settings): Promise<number> {
  const started = performance.now();
  const path = `/v1/collections/${collections.million}/rows`;
  await fill(url, key, settings, collections.million, settings.millionRows, millionRow);
  await send(url, key, 'GET', `${path}?order_by=score&order=desc&limit=1`, undefined);
  await send(url, key, 'GET', `${path}?limit=1&filter=${encodeURIComponent(JSON.stringify({ tag: 't0' }))}`, undefined);
  return (performance.now() - started) / 1000;
}

/**
 * Creates `changes` and fills it with `settings.changesLog` rows, one insert event each: the log
 * changes-catch-up walks (its rowbase retains them all, run.ts). Returns the seconds it took.
 */
export async function seedChanges(url: string, key: string, settings: Settings): Promise<number> {
  const started = performance.now();
  await fill(url, key, settings, collections.changes, settings.changesLog, benchRow);
  return (performance.now() - started) / 1000;
}

/**
 * Creates `corpus` and fills it with `settings.millionRows` rows of corpusRow() (fill()), then
 * declares its search index over them: the seconds each took, the index's those of its one request.
 */
export async function seedCorpus(url: string, key: string, settings: Settings): Promise<{ seedSeconds: number; indexSeconds: number }> {
  const started = performance.now();
  await fill(url, key, settings, collections.corpus, settings.millionRows, corpusRow);
  const seeded = performance.now();
  await send(url, key, 'POST', `/v1/collections/${collections.corpus}/indexes`, searchIndex);
  return { seedSeconds: (seeded - started) / 1000, indexSeconds: (performance.now() - seeded) / 1000 };
}

/**
 * Stores `count` answers of Idempotency-Keys for the account of `bench` in the database `url` (`sqlite:`
 * a file no server has open, or `postgres://`), each under a random key as long as a UUID and expiring
 * long after any run, with insert-1's answer of one row. Written straight into rowbase's table in one
 * statement: sent over HTTP, a million keyed requests take minutes. Returns the seconds it took.
 */
export async function seedAnswers(url: string, count: number): Promise<number> {
  const started = performance.now();
  const answer = [JSON.stringify([{ id: 1, ...benchRow(1) }]), new Date().toISOString(), '9999-12-31T23:59:59.999Z'];
  const columns = 'idempotency_keys (account_id, key, request_hash, status, headers, body, created_at, expires_at)';
  const account = `(select account_id from collections where name = '${collections.rows}')`;
  if (url.startsWith('sqlite:')) {
    const db = new sqlite3.Database(url.slice('sqlite:'.length));
    const run = (sql: string, params: unknown[] = []) =>
      new Promise<void>((resolve, reject) => db.run(sql, params, (error) => (error ? reject(error) : resolve())));
    try {
      await run(
        `insert into ${columns}
          with recursive n(i) as (select 1 union all select i + 1 from n where i < ?)
          select ${account}, lower(hex(randomblob(18))), lower(hex(randomblob(32))), 201, '{}', ?, ?, ? from n`,
        [count, ...answer],
      );
      await run('pragma wal_checkpoint(truncate)');
    } finally {
      await new Promise((resolve) => db.close(resolve));
    }
  } else {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      await client.query(
        `insert into ${columns}
          select ${account}, gen_random_uuid()::text, md5(random()::text) || md5(random()::text), 201, '{}', $2, $3, $4
          from generate_series(1, $1::integer)`,
        [count, ...answer],
      );
    } finally {
      await client.end();
    }
  }
  return (performance.now() - started) / 1000;
}

/** Creates collections over HTTP (the feed's, and the one the bare pg client writes to). */
export async function createCollections(url: string, key: string, names: string[]): Promise<void> {
  for (const name of names) await send(url, key, 'POST', '/v1/collections', { name });
}

/** One request of the harness's own to rowbase, its answer's JSON (none for a 204); any other than a 2xx throws. */
export async function send(url: string, key: string, method: string, path: string, body: unknown): Promise<unknown> {
  const response = await fetch(url + path, {
    method,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (!response.ok) throw new Error(`bench: ${method} ${path} answered ${response.status}: ${await response.text()}`);
  return response.status === 204 ? undefined : response.json();
}
