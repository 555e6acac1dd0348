// The filtered feed keeps a client's view exact (asyncapi.yaml, "Filtered subscriptions"): through
// random inserts, patches and deletes, clients with random filters that apply every message to the rows
// they hold, some of them closing and resuming with since, some starting from a filtered page and its
// Rowbase-Seq, end up holding exactly the rows that matches() (src/query/evaluate.ts) keeps of the
// collection read back over HTTP. And each message is the one the rule gives for that change, none is
// missing, and none is sent that the rule leaves out. fast-check prints the seed and the shrunk
// counterexample of any failure.
import { expect } from 'chai';
import fc from 'fast-check';
import { matches } from '../../src/query/evaluate.ts';
import { parseFilter, readFilter } from '../../src/query/filter.ts';
import { describeEachBackend } from '../support/backends.ts';
import type { Client } from '../support/client.ts';
import { applyToView, FeedClient, type FeedMessage, type FeedRow } from '../support/feed.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

type Fields = Record<string, unknown>;
type Change = Extract<FeedMessage, { type: 'insert' | 'update' | 'delete' }>;

const value = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(null, true, false, 0, 1, 2, -1, 2.5, '', 'a', 'ab', 'b', '1') },
  fc.constantFrom([], [1], ['a', 1], [{ x: 1 }], { x: 1 }, { x: 'a' }, { x: { y: 1 } }, { y: 1 }),
);
const comparable = fc.constantFrom(true, false, 0, 1, 2, -1, 2.5, '', 'a', 'ab', 'b', '1');
const fields = (minKeys: number) => fc.dictionary(fc.constantFrom('a', 'b', 'c'), value, { minKeys, maxKeys: 3 });
const condition = fc.oneof(
  { weight: 3, arbitrary: value },
  fc.record({ $ne: value }),
  fc.record({ $gt: comparable }),
  fc.record({ $gte: comparable }),
  fc.record({ $lt: comparable }),
  fc.record({ $lte: comparable }),
  fc.record({ $in: fc.array(value, { maxLength: 3 }) }),
  fc.record({ $nin: fc.array(value, { maxLength: 3 }) }),
  fc.record({ $exists: fc.boolean() }),
  fc.record({ $prefix: fc.constantFrom('', 'a', 'b') }),
  fc.record({ $contains: value }),
);
const leaf = fc
  .tuple(fc.constantFrom('a', 'b', 'c', 'c.x', 'c.x.y', 'id', 'z'), condition)
  .map(([path, test]): Fields => ({ [path]: test }));
const { filter: randomFilter } = fc.letrec<{ filter: Fields }>((tie) => ({
  filter: fc.oneof(
    { maxDepth: 3, depthSize: 'small' },
    leaf,
    fc.array(tie('filter'), { minLength: 1, maxLength: 3 }).map(($and) => ({ $and })),
    fc.array(tie('filter'), { minLength: 1, maxLength: 3 }).map(($or) => ({ $or })),
    tie('filter').map(($not) => ({ $not })),
  ),
}));
/**
 * A random filter, widened to the marker row the run inserts last, which every client then receives as
 * its last message: the end of the run, for every client, even one that was replaying.
 */
const filter = randomFilter.map((test) => ({ $or: [test, { marker: true }] })).filter((sent) => readFilter(sent).errors === undefined);

type Op =
  | { kind: 'insert'; rows: Fields[] }
  | { kind: 'patch'; pick: number; fields: Fields }
  | { kind: 'delete'; pick: number }
  | { kind: 'resume'; client: number }
  | { kind: 'join'; filter: number };
const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('insert' as const), rows: fc.array(fields(0), { minLength: 1, maxLength: 3 }) }) },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('patch' as const), pick: fc.nat(), fields: fields(1) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('delete' as const), pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('resume' as const), client: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('join' as const), filter: fc.nat() }) },
);

/** One client of the feed: its filter, the rows it holds, where to resume from, and its socket now. */
interface Follower {
  filter: Fields;
  view: Map<number, FeedRow>;
  /** The seq up to which the view is known to be exact: resuming from here loses nothing. */
  position: number;
  feed: FeedClient;
  /** The `position` the socket now open started from. */
  start: number;
}

describeEachBackend('the filtered feed against the in-memory evaluation', (backend) => {
  let server: TestServer;
  let client: Client;
  let runs = 0;
  before(async () => {
    server = await startTestServer({}, { backend });
    client = await server.client();
  });
  after(() => server?.stop());

  it('keeps every client view equal to the rows its filter matches, through random writes, resumes and late joins', async function () {
    this.timeout(300_000);
    await fc.assert(
      fc.asyncProperty(fc.array(filter, { minLength: 1, maxLength: 3 }), fc.array(op, { maxLength: 40 }), async (filters, ops) => {
        const name = `p${++runs}`;
        await client.post('/v1/collections', { name });
        const rowsPath = `/v1/collections/${name}/rows`;
        const open = (sent: Fields, since?: number) =>
          FeedClient.open(server.url, client.key, { collection: name, filter: JSON.stringify(sent), since });
        const everything = await FeedClient.open(server.url, client.key, { collection: name });
        const followers: Follower[] = [];
        for (const sent of filters) {
          const feed = await open(sent);
          followers.push({ filter: sent, view: new Map(), position: feed.ready.seq, start: feed.ready.seq, feed });
        }
        /** Takes what the follower's socket has brought into its view, and its position. */
        const absorb = (follower: Follower) => {
          for (const message of follower.feed.changes) {
            applyToView(follower.view, message);
            if ('seq' in message) follower.position = Math.max(follower.position, message.seq);
          }
        };
        const ids: number[] = [];
        try {
          for (const step of ops) {
            if (step.kind === 'insert') {
              const inserted = await client.post<FeedRow[]>(rowsPath, step.rows);
              expect(inserted.status, inserted.text).to.equal(201);
              ids.push(...inserted.body.map((row) => row.id));
            } else if (step.kind === 'patch' && ids.length > 0) {
              const patched = await client.patch(`${rowsPath}/${ids[step.pick % ids.length]}`, step.fields);
              expect(patched.status, patched.text).to.equal(200);
            } else if (step.kind === 'delete' && ids.length > 0) {
              const [id] = ids.splice(step.pick % ids.length, 1);
              expect((await client.delete(`${rowsPath}/${id}`)).status).to.equal(204);
            } else if (step.kind === 'resume') {
              // Closed at any point, messages still on their way lost: the resume replays them.
              const follower = followers[step.client % followers.length];
              await follower.feed.close();
              absorb(follower);
              follower.feed = await open(follower.filter, follower.position);
              follower.start = follower.position;
            } else if (step.kind === 'join') {
              // Rows, then changes: the filtered page, then the feed from its Rowbase-Seq.
              const sent = filters[step.filter % filters.length];
              const page = await client.get<FeedRow[]>(
                `${rowsPath}?${new URLSearchParams({ filter: JSON.stringify(sent), limit: '1000' })}`,
              );
              expect(page.status, page.text).to.equal(200);
              const since = Number(page.headers.get('rowbase-seq'));
              const view = new Map(page.body.map((row) => [row.id, row]));
              followers.push({ filter: sent, view, position: since, start: since, feed: await open(sent, since) });
            }
          }
          const [marker] = (await client.post<FeedRow[]>(rowsPath, [{ marker: true }])).body;
          const listed = await client.get<FeedRow[]>(`${rowsPath}?limit=1000`);
          const last = Number(listed.headers.get('rowbase-seq'));
          const all = (await everything.seqReached(last)) as Change[];
          for (const follower of followers) {
            await follower.feed.until(
              () => follower.feed.changes.some((message) => 'row' in message && message.row.id === marker.id),
              'the marker row',
            );
            const test = parseFilter(follower.filter);
            // The messages of the socket open now: exactly those the rule keeps of every change since it started.
            const expected = all.filter((message) => message.seq > follower.start).flatMap((message) => expectedOf(message, test));
            expect(follower.feed.changes, JSON.stringify(follower.filter)).to.deep.equal(expected);
            absorb(follower);
            const matching = listed.body.filter((row) => matches(test, row));
            expect(
              [...follower.view.values()].sort((x, y) => x.id - y.id),
              `the view of ${JSON.stringify(follower.filter)}`,
            ).to.deep.equal(matching);
          }
        } finally {
          await Promise.all([everything, ...followers.map((follower) => follower.feed)].map((feed) => feed.close()));
        }
      }),
      { numRuns: 100 },
    );
  });
});

/** The message a subscriber with filter `test` gets of the change an unfiltered subscriber got as `message`, if any. */
function expectedOf(message: Change, test: ReturnType<typeof parseFilter>): Change[] {
  if (matches(test, message.row)) return [message];
  if (message.type !== 'update' || !message.previous || !matches(test, message.previous)) return [];
  return [{ ...message, matches: false }];
}
