// CORS as a browser enforces it (openapi.yaml, `info`, "CORS"; docs/access.md): a page served from another
// loopback port fetches the API in a real headless Chromium with a publishable key and its user's token.
// From an origin the key lists, the preflight passes and the page reads the user's own rows, as the
// collection's rules grant; from one it does not list, the page reads the refusal, 403
// origin_not_allowed, and nothing else. Every response the page receives is checked against openapi.yaml.
import { expect } from 'chai';
import type { Browser } from 'puppeteer-core';
import { launchBrowser, pageServer, skipWithoutChromium, watchedPage } from '../support/browser.ts';
import { Client } from '../support/client.ts';
import { appKey, tokenOf } from '../support/end-users.ts';
import { startTestServer, TEST_PLAN, type TestServer } from '../support/server.ts';

/** What the page's fetch gave: the status and body it could read, or the error it threw. */
type Fetched = { status: number; body: unknown } | { error: string; message: string };

describe('CORS in Chromium', function () {
  this.timeout(60_000);
  let api: TestServer;
  let browser: Browser;
  let listed: Awaited<ReturnType<typeof pageServer>>;
  let unlisted: Awaited<ReturnType<typeof pageServer>>;
  let key: string;
  let token: string;

  before(async function () {
    skipWithoutChromium(this);
    [api, listed, unlisted] = await Promise.all([startTestServer(), pageServer(), pageServer()]);
    const made = await api.store.createKey('cors-browser', TEST_PLAN);
    const admin = new Client(api.url, made.key);
    await admin.post('/v1/collections', { name: 'notes' });
    await admin.put('/v1/collections/notes/rules', { read: { owner: { $auth: 'sub' } } });
    await admin.post('/v1/collections/notes/rows', [
      { owner: 'ada', text: 'mine' },
      { owner: 'bob', text: 'theirs' },
    ]);
    key = await appKey(admin, { origins: [listed.origin] });
    token = await tokenOf('ada');
    browser = await launchBrowser();
  });

  after(async () => {
    await browser?.close();
    await api?.stop();
    for (const each of [listed, unlisted]) await new Promise((resolve) => each?.server.close(resolve));
  });

  /** Opens the page of `origin` and has it fetch the rows of notes with the publishable key (a request that needs a preflight). */
  async function fetchFrom(origin: string) {
    const watched = await watchedPage(browser);
    await watched.page.goto(`${origin}/`);
    // The page's own answers are no operations of openapi.yaml: only the API's are checked.
    await watched.settled();
    watched.problems.length = 0;
    const fetched = (await watched.page.evaluate(
      async (url: string, publishable: string, bearer: string) => {
        try {
          const response = await fetch(url, { headers: { 'x-api-key': publishable, authorization: `Bearer ${bearer}` } });
          return { status: response.status, body: await response.json() };
        } catch (error) {
          return { error: (error as Error).name, message: (error as Error).message };
        }
      },
      `${api.url}/v1/collections/notes/rows`,
      key,
      token,
    )) as Fetched;
    return { watched, fetched };
  }

  it("lets a page of one of the key's origins through the preflight and read its user's rows, and only those", async () => {
    const { watched, fetched } = await fetchFrom(listed.origin);
    expect(fetched).to.deep.equal({ status: 200, body: [{ id: 1, owner: 'ada', text: 'mine' }] });
    await watched.finish();
  });

  it('lets a page of an origin the key does not list read why it is refused, 403 origin_not_allowed, and no row', async () => {
    const { watched, fetched } = await fetchFrom(unlisted.origin);
    expect(fetched).to.have.property('status', 403);
    expect((fetched as { body: { code: string } }).body.code).to.equal('origin_not_allowed');
    watched.expectRefusals(403);
    await watched.finish();
  });
});
