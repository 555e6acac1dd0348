// The feed in a browser (asyncapi.yaml, "Connecting" and "Rules"; docs/access.md, "The feed"): a page
// served from another loopback port subscribes in a real headless Chromium with a publishable key and
// its user's token in the query, as an app does, and receives its user's rows alone; a page of an origin
// the key does not list has its upgrade refused (the browser sends Origin on every WebSocket). Every
// message the page receives is checked against asyncapi.yaml.
import { expect } from 'chai';
import type { Browser } from 'puppeteer-core';
import { launchBrowser, pageServer, skipWithoutChromium, type WatchedPage, watchedPage } from '../support/browser.ts';
import type { Client } from '../support/client.ts';
import { appKey, tokenOf } from '../support/end-users.ts';
import { feedUrl } from '../support/feed.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

/** What the page's socket has seen so far (window.feed). */
type Seen = { messages: { type: string; row?: { owner?: string } }[]; closed?: number };

describe('the feed in Chromium, with a publishable key', function () {
  this.timeout(60_000);
  let api: TestServer;
  let browser: Browser;
  let admin: Client;
  let listed: Awaited<ReturnType<typeof pageServer>>;
  let unlisted: Awaited<ReturnType<typeof pageServer>>;
  let url: string;

  before(async function () {
    skipWithoutChromium(this);
    [api, listed, unlisted] = await Promise.all([startTestServer(), pageServer(), pageServer()]);
    admin = await api.client();
    const key = await appKey(admin, { origins: [listed.origin] });
    await admin.post('/v1/collections', { name: 'notes' });
    await admin.put('/v1/collections/notes/rules', { read: { owner: { $auth: 'sub' } } });
    url = feedUrl(api.url, key, { collection: 'notes', access_token: await tokenOf('ada') });
    browser = await launchBrowser();
  });

  after(async () => {
    await browser?.close();
    await api?.stop();
    for (const each of [listed, unlisted]) await new Promise((resolve) => each?.server.close(resolve));
  });

  /** Opens the page of `origin`, which opens the feed at `url` and keeps what it sees in window.feed. */
  async function subscribeFrom(origin: string): Promise<WatchedPage> {
    const watched = await watchedPage(browser);
    await watched.page.goto(`${origin}/`);
    // The page's own answer is no operation of openapi.yaml: only the service's are checked.
    await watched.settled();
    watched.problems.length = 0;
    await watched.page.evaluate((address: string) => {
      const seen: Seen = { messages: [] };
      Object.assign(window, { feed: seen });
      const socket = new WebSocket(address);
      socket.onmessage = (event) => seen.messages.push(JSON.parse(event.data));
      socket.onclose = (event) => {
        seen.closed = event.code;
      };
    }, url);
    return watched;
  }
  const seen = (watched: WatchedPage) => watched.page.evaluate(() => (window as unknown as { feed: Seen }).feed);

  it("subscribes from a page of one of the key's origins and receives its user's rows alone", async () => {
    const watched = await subscribeFrom(listed.origin);
    await watched.page.waitForFunction(() => (window as unknown as { feed: Seen }).feed.messages.length === 1);
    await admin.post('/v1/collections/notes/rows', [{ owner: 'bob' }, { owner: 'ada' }, { owner: 'bob' }, { owner: 'ada' }]);
    await watched.page.waitForFunction(() => (window as unknown as { feed: Seen }).feed.messages.length === 3);
    const { messages, closed } = await seen(watched);
    expect(messages.map((message) => message.type)).to.deep.equal(['ready', 'insert', 'insert']);
    expect(messages.slice(1).map((message) => message.row?.owner)).to.deep.equal(['ada', 'ada']);
    expect(closed).to.equal(undefined);
    expect(watched.feedMessages).to.have.length(3);
    await watched.finish();
  });

  it('is refused from a page of an origin the key does not list: the socket closes unopened', async () => {
    const watched = await subscribeFrom(unlisted.origin);
    await watched.page.waitForFunction(() => (window as unknown as { feed: Seen }).feed.closed !== undefined);
    expect(await seen(watched)).to.deep.equal({ messages: [], closed: 1006 });
    // The browser says why on the console: the handshake was answered 403.
    const refused = watched.problems.filter((problem) => /WebSocket/.test(problem));
    expect(refused.some((problem) => /403/.test(problem))).to.equal(true);
    watched.problems.splice(0, watched.problems.length, ...watched.problems.filter((problem) => !refused.includes(problem)));
    await watched.finish();
  });
});
