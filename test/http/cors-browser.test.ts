// CORS as a browser enforces it (openapi.yaml, `info`, "CORS"; docs/access.md): a page served from another
// loopback port fetches the API in a real headless Chromium with a publishable key. From an origin the
// key lists, the preflight passes and the page reads the answer (the 403 every operation gives a
// publishable key until rules exist); from one it does not list, the browser withholds the answer and
// fetch fails with a TypeError. Every response the page receives is checked against openapi.yaml.
import { expect } from 'chai';
import type { Browser } from 'puppeteer-core';
import type { components } from '../../generated/openapi.ts';
import { launchBrowser, pageServer, skipWithoutChromium, watchedPage } from '../support/browser.ts';
import { Client } from '../support/client.ts';
import { startTestServer, TEST_PLAN, type TestServer } from '../support/server.ts';

type CreatedKey = components['schemas']['CreatedKey'];

/** What the page's fetch gave: the status and body it could read, or the error it threw. */
type Fetched = { status: number; body: { code: string; detail: string } } | { error: string; message: string };

describe('CORS in Chromium', function () {
  this.timeout(60_000);
  let api: TestServer;
  let browser: Browser;
  let listed: Awaited<ReturnType<typeof pageServer>>;
  let unlisted: Awaited<ReturnType<typeof pageServer>>;
  let key: string;

  before(async function () {
    skipWithoutChromium(this);
    [api, listed, unlisted] = await Promise.all([startTestServer(), pageServer(), pageServer()]);
    const made = await api.store.createKey('cors-browser', TEST_PLAN);
    const admin = new Client(api.url, made.key);
    await admin.post('/v1/collections', { name: 'notes' });
    key = (await admin.post<CreatedKey>('/v1/keys', { kind: 'publishable', origins: [listed.origin] })).body.key;
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
      async (url: string, publishable: string) => {
        try {
          const response = await fetch(url, { headers: { 'x-api-key': publishable } });
          return { status: response.status, body: await response.json() };
        } catch (error) {
          return { error: (error as Error).name, message: (error as Error).message };
        }
      },
      `${api.url}/v1/collections/notes/rows`,
      key,
    )) as Fetched;
    return { watched, fetched };
  }

  it("lets a page of one of the key's origins through the preflight and read the answer, a 403 problem until rules exist", async () => {
    const { watched, fetched } = await fetchFrom(listed.origin);
    expect(fetched).to.have.property('status', 403);
    expect(fetched).to.have.nested.property('body.code', 'forbidden');
    expect((fetched as { body: { detail: string } }).body.detail).to.include('needs a secret key');
    watched.expectRefusals(403);
    await watched.finish();
  });

  it('fails the fetch of a page of an origin the key does not list: a TypeError, the answer withheld by the browser', async () => {
    const { watched, fetched } = await fetchFrom(unlisted.origin);
    expect(fetched).to.have.property('error', 'TypeError');
    // The browser says why on the console: the answer carries no Access-Control-Allow-Origin.
    await watched.settled();
    const blocked = watched.problems.filter((problem) => /CORS policy|net::ERR_FAILED|status of 403/.test(problem));
    expect(blocked.some((problem) => /CORS policy/.test(problem))).to.equal(true);
    watched.problems.splice(0, watched.problems.length, ...watched.problems.filter((problem) => !blocked.includes(problem)));
    await watched.finish();
  });
});
