// A collection's changes read by a page of another origin in a real headless Chromium, with the browser's
// own EventSource, which sets no headers (openapi.yaml, getChanges; docs/feed.md, "From a browser"): the
// publishable key in `api_key` and the end user's token in `access_token`. The page sees only its user's
// rows, as the collection's rules grant, resumes by itself after the server restarts (same port, same
// database) with Last-Event-ID, each change once; and it can read a refusal (401, 403) as such, where it
// would otherwise see only a CORS error. Every response the page receives is checked against
// openapi.yaml, every message against asyncapi.yaml.
import { expect } from 'chai';
import type { Browser, Page } from 'puppeteer-core';
import { type BackendName, createDatabase, describeEachBackend } from '../support/backends.ts';
import { launchBrowser, pageServer, skipWithoutChromium, type WatchedPage, watchedPage } from '../support/browser.ts';
import { Client } from '../support/client.ts';
import { appKey, tokenOf } from '../support/end-users.ts';
import { messageProblem } from '../support/feed.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

/** A server-sent event as the page's EventSource dispatched it. */
interface Received {
  type: string;
  id: string;
  data: string;
}

/** What the page's fetch read: the status and problem code, or the error it threw. */
type Fetched = { status: number; code: unknown } | { error: string };

/** An admin of a new account on `server`, with the collection notes readable by each row's owner alone, and a publishable key for `origin`. */
async function appOn(server: TestServer, origin: string) {
  const admin = await server.client();
  await admin.post('/v1/collections', { name: 'notes' });
  await admin.put('/v1/collections/notes/rules', { read: { owner: { $auth: 'sub' } } });
  await admin.post('/v1/collections/notes/rows', [
    { owner: 'ada', text: 'mine' },
    { owner: 'bob', text: 'theirs' },
  ]);
  return { admin, key: await appKey(admin, { origins: [origin] }) };
}

const changesUrl = (server: TestServer, query: Record<string, string>) =>
  `${server.url}/v1/collections/notes/changes?${new URLSearchParams(query)}`;

/** Opens a watched page of `origin`, its own answers (no operations of openapi.yaml) left unchecked. */
async function pageOf(browser: Browser, origin: string): Promise<WatchedPage> {
  const watched = await watchedPage(browser);
  await watched.page.goto(`${origin}/`);
  await watched.settled();
  watched.problems.length = 0;
  return watched;
}

/** Has the page open `new EventSource(url)` (the browser's own), keeping every event and counting its errors in `window.changes`. */
function openEventSource(page: Page, url: string): Promise<void> {
  return page.evaluate((source: string) => {
    const state = { events: [] as Received[], errors: 0, readyState: 0 };
    const events = new EventSource(source);
    for (const type of ['ready', 'insert', 'update', 'delete', 'collection_deleted']) {
      events.addEventListener(type, (event) => {
        const { data, lastEventId } = event as MessageEvent<string>;
        state.events.push({ type, id: lastEventId, data });
      });
    }
    events.addEventListener('error', () => {
      state.errors += 1;
      state.readyState = events.readyState;
    });
    Object.assign(window, { changes: state, changesSource: events });
  }, url);
}

const received = (page: Page) => page.evaluate(() => (window as unknown as { changes: { events: Received[] } }).changes.events);

/** Waits until the page's EventSource has received the insert of a row whose text is `text`. */
const waitForInsert = (page: Page, text: string) =>
  page.waitForFunction(
    (wanted: string) =>
      (window as unknown as { changes: { events: Received[] } }).changes.events.some(
        (event) => event.type === 'insert' && JSON.parse(event.data).row.text === wanted,
      ),
    { timeout: 20_000 },
    text,
  );

/** Has the page fetch `url` (a simple request: no preflight) and read its status and problem code. */
const fetchFromPage = (page: Page, url: string): Promise<Fetched> =>
  page.evaluate(async (target: string) => {
    try {
      const response = await fetch(target);
      return { status: response.status, code: ((await response.json()) as { code?: unknown }).code };
    } catch (error) {
      return { error: (error as Error).name };
    }
  }, url);

/** Drops the problems `pattern` matches: what the browser logs of the failures a test causes on purpose. */
function expectProblems(watched: WatchedPage, pattern: RegExp): void {
  watched.problems.splice(0, watched.problems.length, ...watched.problems.filter((problem) => !pattern.test(problem)));
}

describeEachBackend('the changes read by a browser’s own EventSource', (backend: BackendName) => {
  let browser: Browser;
  let listed: Awaited<ReturnType<typeof pageServer>>;
  let unlisted: Awaited<ReturnType<typeof pageServer>>;

  before(async function () {
    this.timeout(60_000);
    skipWithoutChromium(this);
    [listed, unlisted] = await Promise.all([pageServer(), pageServer()]);
    browser = await launchBrowser();
  });

  after(async () => {
    await browser?.close();
    for (const each of [listed, unlisted]) await new Promise((resolve) => each?.server.close(resolve));
  });

  it("streams only its user's changes to a page, with the key and token in the query, and resumes after a restart with Last-Event-ID", async function () {
    this.timeout(90_000);
    // A server of this test's own, stopped and started again on the same port and database.
    const database = await createDatabase(backend);
    const first = await startTestServer({}, { backend, database });
    let second: TestServer | undefined;
    let watched: WatchedPage | undefined;
    // Closed and dropped whatever fails: a server left listening would keep mocha's process alive.
    try {
      const { admin, key } = await appOn(first, listed.origin);
      watched = await pageOf(browser, listed.origin);
      const { page } = watched;
      await openEventSource(page, changesUrl(first, { since: '0', api_key: key, access_token: await tokenOf('ada') }));
      await waitForInsert(page, 'mine');
      await admin.post('/v1/collections/notes/rows', [
        { owner: 'bob', text: 'theirs too' },
        { owner: 'ada', text: 'mine too' },
      ]);
      await waitForInsert(page, 'mine too');

      await first.close();
      await page.waitForFunction(() => (window as unknown as { changes: { errors: number } }).changes.errors > 0, { timeout: 20_000 });
      second = await startTestServer({ port: Number(new URL(first.url).port) }, { backend, database });
      await new Client(second.url, admin.key).post('/v1/collections/notes/rows', [
        { owner: 'ada', text: 'mine after' },
        { owner: 'bob', text: 'theirs after' },
      ]);
      // Said in full when it fails: what the page received, and what the browser logged.
      await waitForInsert(page, 'mine after').catch(async (error: Error) => {
        const state = await page.evaluate(() => (window as unknown as { changes: unknown }).changes);
        throw new Error(`${error.message}: ${JSON.stringify(state)} ${JSON.stringify(watched?.problems)}`);
      });
      await page.evaluate(() => (window as unknown as { changesSource: EventSource }).changesSource.close());

      const events = await received(page);
      const heard = JSON.stringify(events);
      for (const { data } of events) expect(messageProblem(data), data).to.equal(undefined);
      // One `ready` a connection: the first, and the one after the restart.
      expect(
        events.filter(({ type }) => type === 'ready'),
        heard,
      ).to.have.length(2);
      // Each of ada's changes once, in order, and none of bob's: the second connection resumed after the
      // last seq the first delivered (Last-Event-ID), not from since=0, which would have replayed them.
      const inserts = events.filter(({ type }) => type === 'insert').map(({ id, data }) => ({ id, row: JSON.parse(data).row }));
      expect(
        inserts.map(({ row }) => row),
        heard,
      ).to.deep.equal([
        { id: 1, owner: 'ada', text: 'mine' },
        { id: 4, owner: 'ada', text: 'mine too' },
        { id: 5, owner: 'ada', text: 'mine after' },
      ]);
      expect(inserts.map(({ id }) => Number(id))).to.deep.equal([1, 4, 5]);
      // While the server was down, the browser logged its attempts to reconnect.
      expectProblems(watched, /ERR_CONNECTION_REFUSED|ERR_INCOMPLETE_CHUNKED_ENCODING|ERR_CONNECTION_RESET|ERR_EMPTY_RESPONSE/);
      await watched.finish();
    } finally {
      if (watched && !watched.page.isClosed()) await watched.page.close();
      // A server closes once: a second close() waits for the first.
      await first.close();
      if (second) await second.stop();
      else await database.drop();
    }
  });

  it('lets the page read a refused key (401), token (401 invalid_token) and origin (403 origin_not_allowed) as such', async function () {
    this.timeout(60_000);
    const server = await startTestServer({}, { backend });
    try {
      const { key } = await appOn(server, listed.origin);
      const token = await tokenOf('ada');
      const watched = await pageOf(browser, listed.origin);
      const { page } = watched;
      expect(await fetchFromPage(page, changesUrl(server, { api_key: 'rb_pub_noSuchKey' }))).to.deep.equal({
        status: 401,
        code: 'unauthorized',
      });
      expect(await fetchFromPage(page, changesUrl(server, { api_key: key, access_token: 'not.a.token' }))).to.deep.equal({
        status: 401,
        code: 'invalid_token',
      });
      // An EventSource refused is closed for good (readyState 2, CLOSED), with one error event and no message.
      await openEventSource(page, changesUrl(server, { api_key: 'rb_pub_noSuchKey' }));
      await page.waitForFunction(() => (window as unknown as { changes: { readyState: number } }).changes.readyState === 2, {
        timeout: 20_000,
      });
      expect(await received(page)).to.deep.equal([]);
      // And a page of an origin the key does not list reads why.
      const other = await pageOf(browser, unlisted.origin);
      expect(await fetchFromPage(other.page, changesUrl(server, { api_key: key, access_token: token }))).to.deep.equal({
        status: 403,
        code: 'origin_not_allowed',
      });
      for (const each of [watched, other]) {
        each.expectRefusals(401);
        each.expectRefusals(403);
        await each.finish();
      }
    } finally {
      await server.stop();
    }
  });
});
