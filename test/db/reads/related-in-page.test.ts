// A page whose expansions are read as stored (to-ones, then a to-many by id), read by its own statement (PageSource.pageWithRelated,
// src/db/reads/related.ts): its answer is byte for byte the one of the page and its related rows read by
// statements of their own (the same dialect without that statement), whatever its rows' relation fields hold,
// for every cut of the page; a page holding a stored `_expand` is read apart, as before.
import { expect } from 'chai';
import { type OpenedDatabase, withDefaults } from '../../../src/db/engine/connect.ts';
import type { PageSource } from '../../../src/db/engine/read-port.ts';
import type { LivePage } from '../../../src/db/engine/sql/pages.ts';
import { areaParts } from '../../../src/db/open-store.ts';
import { openPostgres } from '../../../src/db/postgres/index.ts';
import type { Expansion } from '../../../src/db/reads/expand.ts';
import type { ListedPage } from '../../../src/db/reads/pages.ts';
import { readRelatedPage } from '../../../src/db/reads/related.ts';
import { openSqlite } from '../../../src/db/sqlite/index.ts';
import { assembleStore, type Store } from '../../../src/db/store.ts';
import type { Filter } from '../../../src/query/filter.ts';
import { jsonText } from '../../../src/rows.ts';
import { createDatabase, describeEachBackend, type TestDatabase } from '../../support/backends.ts';

/** People, one expired at the pages' now, one the rule below hides, one empty, strings hard to carry. */
const PEOPLE = [
  { name: 'ada', expires: '2999-01-01T00:00:00Z' },
  { name: 'bob', expires: '2000-01-01T00:00:00Z' },
  { name: 'hidden', secret: true },
  {},
  { name: 'é\ud800 "q" \\ \u0000 ?', nested: { a: [1, { b: null }] } },
];

/** Posts naming people by every kind of value a relation field may hold: ids, none, ids of no one, not ids at all. */
const POSTS = [
  { author_id: 1, editor_id: 5, title: 'one' },
  { author_id: 2, editor_id: 1 },
  { author_id: 3 },
  { author_id: 4, title: '}{"' },
  {},
  { author_id: null },
  { author_id: '1' },
  { author_id: 1.5, editor_id: 0 },
  { author_id: 3.5, editor_id: 2.0000001 },
  { author_id: -1, editor_id: 2 ** 53 },
  { author_id: 999 },
  { author_id: 5, editor_id: 4, nested: { author_id: 1 } },
  { author_id: 1e300 },
  { author_id: true, editor_id: [1] },
  { author_id: { id: 1 } },
];

const BY_ID = [{ field: 'id', direction: 'asc' as const }];
const NOW = Date.parse('2026-01-01T00:00:00Z');

/** The handler's expansions of `names` (src/handlers/expand.ts): to-ones read as stored, people held to `filter`. */
const toOnes = (names: string[], filter?: Filter): Expansion[] =>
  names.map((name) => ({
    name,
    kind: 'to_one',
    collection: 'people',
    field: `${name}_id`,
    filter,
    order: BY_ID,
    limit: 1,
    expand: [],
  }));

/**
 * Comments of the posts, as many as a post's id up to 6 (3 of each cut: the limit below), their texts of
 * one to four bytes a character, one of each post expired at the pages' now, one the rule hides, and
 * others naming no post by values a relation field may hold.
 */
const COMMENTS = [
  ...[1, 2, 3, 4, 5, 6].flatMap((post) =>
    Array.from({ length: post }, (_, n) => ({ post_id: post, body: `${n}é😀"\\${'x'.repeat(post * n)}` })),
  ),
  { post_id: 2, body: 'gone', expires: '2000-01-01T00:00:00Z' },
  { post_id: 5, body: 'kept', expires: '2999-01-01T00:00:00Z' },
  { post_id: 4, secret: true },
  { post_id: '1' },
  { post_id: 1.5 },
  { post_id: null },
  { post_id: 999 },
];

/** The handler's expansion of a post's comments (`collection`'s rows naming it), ordered by id `direction`, at most 3. */
const comments = (direction: 'asc' | 'desc', filter?: Filter, collection = 'comments'): Expansion => ({
  name: 'comments',
  kind: 'to_many',
  collection,
  field: 'post_id',
  filter,
  order: [{ field: 'id', direction }],
  limit: 3,
  expand: [],
});

/** The cuts of a page each test reads both ways: from the start, past it, empty, past the end, counted, by id desc. */
const PAGES = [
  { limit: 50, offset: 0 },
  { limit: 3, offset: 2 },
  { limit: 1, offset: 13 },
  { limit: 0, offset: 0 },
  { limit: 5, offset: 100 },
  { limit: 20, offset: 0, count: true },
  { limit: 4, offset: 1, order: [{ field: 'id', direction: 'desc' as const }] },
];

/** A rule that hides one person: `secret` is not true. */
const notSecret: Filter = { kind: 'not', filter: { kind: 'field', path: ['secret'], op: '$eq', operand: true } };

describeEachBackend('a page with its related rows read by its own statement', (backend) => {
  let database: TestDatabase;
  let opened: OpenedDatabase;
  let store: Store;
  let accountId: number;
  let source: PageSource;
  /** The same dialect with no such statement: every page's expansions read by statements of their own. */
  let apart: PageSource;
  let statements: number;

  before(async () => {
    database = await createDatabase(backend);
    const open = backend === 'sqlite' ? openSqlite : openPostgres;
    opened = await open(database.url, withDefaults({}), areaParts());
    store = assembleStore(opened.db, opened.backups, opened.codes, opened.close);
    const { key } = await store.createKey('reader');
    accountId = (await store.findPrincipal(key))!.accountId;
    for (const name of ['people', 'posts', 'comments', 'notes']) await store.createCollection(accountId, name);
    await store.insertRows(accountId, 'people', PEOPLE);
    await store.putTtl(accountId, 'people', { field: 'expires' });
    await store.insertRows(accountId, 'posts', POSTS);
    await store.insertRows(accountId, 'comments', COMMENTS);
    await store.putTtl(accountId, 'comments', { field: 'expires' });
    await opened.db.pages.makeSortIndex(accountId, 'comments', 'post_id', 8);
    // Notes name posts as comments do, with no sort index of the field.
    await store.insertRows(accountId, 'notes', COMMENTS);
    const pages = opened.db.pages;
    source = {
      ...pages,
      read: (sql, params, kind) => {
        statements++;
        return pages.read(sql, params, kind);
      },
    };
    apart = { ...source, pageWithRelated: undefined };
  });
  after(async () => {
    await opened?.close().catch(() => {});
    await database?.drop();
  });

  const read = (from: PageSource, page: Omit<LivePage, 'order' | 'now'> & Partial<LivePage>, expansions: Expansion[]) =>
    readRelatedPage(from, opened.db.schemas, accountId, 'posts', { order: BY_ID, now: NOW, ...page }, expansions);

  /** Stores `text` as row `id` of `collection` as it is, past every check a write makes. */
  async function storeAsIs(collection: string, id: number, text: string): Promise<void> {
    const sql = 'update rows set data = ? where id = ? and collection_id = (select id from collections where account_id = ? and name = ?)';
    await opened.db.query(sql, [text, id, accountId, collection]);
  }

  /** The page read both ways, its answers compared byte for byte; answers how many statements the first read took. */
  async function bothWays(page: Omit<LivePage, 'order' | 'now'> & Partial<LivePage>, expansions: Expansion[]): Promise<number> {
    statements = 0;
    const joined = await read(source, page, expansions);
    const taken = statements;
    const separate = await read(apart, page, expansions);
    expect(jsonText(joined.json), JSON.stringify(page)).to.equal(jsonText(separate.json));
    expect(joined.n).to.equal(separate.n);
    expect(joined.seq).to.equal(separate.seq);
    expect(joined.total).to.equal(separate.total);
    // The cursor's place: of a page by id, its last row's id.
    const lastId = ({ last }: ListedPage) => last && JSON.parse(last).id;
    expect(lastId(joined)).to.equal(lastId(separate));
    return taken;
  }

  it('answers every page as the page and its related rows read apart do, in one statement', async () => {
    for (const page of PAGES) {
      for (const expansions of [toOnes(['author']), toOnes(['author', 'editor']), toOnes(['editor', 'author'], notSecret)]) {
        expect(await bothWays(page, expansions), JSON.stringify(page)).to.equal(1);
      }
    }
    const [first] = JSON.parse(jsonText((await read(source, { limit: 1, offset: 0 }, toOnes(['author', 'editor']))).json));
    expect(first).to.deep.equal({ id: 1, ...POSTS[0], _expand: { author: { id: 1, ...PEOPLE[0] }, editor: { id: 5, ...PEOPLE[4] } } });
  });

  it('answers a page with a to-many after its to-ones as read apart, cut or not, in one statement', async () => {
    for (const page of PAGES) {
      for (const direction of ['asc', 'desc'] as const) {
        for (const expansions of [[comments(direction)], [...toOnes(['author']), comments(direction, notSecret)]]) {
          expect(await bothWays(page, expansions), JSON.stringify({ page, direction })).to.equal(1);
        }
      }
    }
    const [, , , fourth] = JSON.parse(jsonText((await read(source, { limit: 4, offset: 0 }, [comments('desc')])).json));
    const fourths = COMMENTS.map((comment, index) => ({ id: index + 1, ...comment })).filter((comment) => comment.post_id === 4);
    expect(fourth._expand).to.deep.equal({ comments: fourths.reverse().slice(0, 3), $cut: ['comments'] });
    // SQLite's statement answers the page as its bytes, answered as they are; PostgreSQL's driver, as text.
    const { json } = await read(source, { limit: 4, offset: 0 }, [comments('desc')]);
    expect(Buffer.isBuffer(json)).to.equal(backend === 'sqlite');
  });

  it('reads a to-many apart where it is not last, is ordered by a field, or has no sort index of its field', async () => {
    const page = { limit: 10, offset: 0 };
    const byBody: Expansion = { ...comments('asc'), order: [{ field: 'body', direction: 'asc' }] };
    for (const expansions of [[comments('asc'), ...toOnes(['author'])], [byBody], [comments('asc', undefined, 'notes')]]) {
      expect(await bothWays(page, expansions), JSON.stringify(expansions)).to.be.above(1);
    }
  });

  it('reads a page holding a stored _expand apart, which drops it', async () => {
    // Stored before the name was reserved: no write takes it now.
    await storeAsIs('posts', 3, '{"author_id":1,"_expand":{"x":1}}');
    const page = { limit: 10, offset: 0 };
    expect(await bothWays(page, toOnes(['author']))).to.be.above(1);
    const rows = JSON.parse(jsonText((await read(source, page, toOnes(['author']))).json));
    expect(rows[2]).to.deep.equal({ id: 3, author_id: 1, _expand: { author: { id: 1, ...PEOPLE[0] } } });
  });

  it('reads a page apart when a related row holds a stored _expand, or a row holds the name as a value', async () => {
    const page = { limit: 10, offset: 0 };
    await storeAsIs('posts', 3, '{"author_id":1,"title":"_expand"}');
    expect(await bothWays(page, toOnes(['author']))).to.be.above(1);
    // The name's end in another string is not the name.
    await storeAsIs('posts', 3, '{"author_id":1,"title":"my_expand","_expand_":1}');
    expect(await bothWays(page, toOnes(['author']))).to.equal(1);
    await storeAsIs('people', 1, JSON.stringify({ ...PEOPLE[0], _expand: { x: 1 } }));
    expect(await bothWays(page, toOnes(['author']))).to.be.above(1);
    const rows = JSON.parse(jsonText((await read(source, page, toOnes(['author']))).json));
    expect(rows[0]._expand.author).to.deep.equal({ id: 1, ...PEOPLE[0] });
  });
});
