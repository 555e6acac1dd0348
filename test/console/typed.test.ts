// The web console (src/console/) on collections with a schema and unique indexes (docs/schemas.md), in a
// real headless Chromium against the real server: it shows a collection's schema and indexes, and lets an
// admin key, and no other, set and remove a schema and declare and drop indexes. Every response the page sees is checked against
// openapi.yaml (support/browser.ts), and no test ends with a console error on the page but the refusals
// it makes happen. Screenshots are written to tmp/console-screenshots/ for review.
import { mkdir } from 'node:fs/promises';
import { expect } from 'chai';
import type { Browser, Page } from 'puppeteer-core';
import { chromiumMissing, launchBrowser, type WatchedPage, watchedPage } from '../support/browser.ts';
import type { Client } from '../support/client.ts';
import { startTestServer, TEST_PLAN, type TestServer } from '../support/server.ts';

const screenshots = new URL('../../tmp/console-screenshots/', import.meta.url).pathname;

const schema = {
  type: 'object',
  required: ['name', 'email'],
  properties: {
    name: { type: 'string', minLength: 1 },
    email: { type: 'string', format: 'email' },
    age: { type: 'integer', minimum: 0 },
    active: { type: 'boolean' },
    role: { enum: ['admin', 'editor', 'viewer'] },
    joined: { type: 'string', format: 'date' },
    tags: { type: 'array', items: { type: 'string' } },
  },
};

const people = [
  { name: 'Ada', email: 'ada@example.com', age: 36, active: true, role: 'admin', joined: '2024-02-29', tags: ['math'] },
  { name: 'Alan', email: 'alan@example.com', age: 41, active: false, role: 'viewer', note: 'not in the schema' },
];

describe('the web console, on typed collections, in Chromium', function () {
  this.timeout(120_000);
  let server: TestServer;
  let browser: Browser;
  let admin: Client;
  let watched: WatchedPage;
  let page: Page;

  before(async function () {
    const missing = chromiumMissing();
    if (missing) {
      // CI installs Chromium (.ci/run): there, a missing browser is a failure, not a skip.
      if (process.env.CI) throw new Error(missing);
      this.skip();
    }
    await mkdir(screenshots, { recursive: true });
    server = await startTestServer();
    admin = await server.client('typed-person');
    browser = await launchBrowser();
  });

  after(async () => {
    await browser?.close();
    await server?.stop();
  });

  beforeEach(async () => {
    watched = await watchedPage(browser);
    page = watched.page;
  });

  afterEach(async () => {
    await watched.settled();
    expect(watched.problems, 'console errors, CSP violations and contract breaks on the page').to.deep.equal([]);
    await page.close();
  });

  /** Forgets the browser's log of the answers `status` this test makes the service give: they are expected. */
  function expectRefusals(status: number) {
    const expected = new RegExp(`status of ${status}`);
    watched.problems.splice(0, watched.problems.length, ...watched.problems.filter((problem) => !expected.test(problem)));
  }

  /** A collection `name` typed by `schema`, `email` a unique index of it, holding `people`. */
  async function makePeople(name: string) {
    expect((await admin.post('/v1/collections', { name, schema })).status).to.equal(201);
    expect((await admin.post(`/v1/collections/${name}/indexes`, { fields: ['email'], unique: true })).status).to.equal(201);
    expect((await admin.post(`/v1/collections/${name}/rows`, people)).status).to.equal(201);
  }

  async function signIn(key: string | undefined = admin.key) {
    await page.goto(`${server.url}/console`);
    await page.type('#key', key as string);
    await page.click('.sign-in-form button[type=submit]');
    await page.waitForSelector('header.top');
  }

  async function openCollection(name: string) {
    const button = await page.waitForSelector(`xpath/.//nav//li/button[span[1][text()="${name}"]]`);
    await button?.click();
    await page.waitForSelector(`xpath/.//h2[@id="collection-title"][text()="${name}"]`);
    await page.waitForSelector('details.typing');
  }

  /** Opens the schema and indexes. */
  async function showTyping() {
    await page.click('details.typing summary');
    await page.waitForSelector('details.typing[open] #schema-title');
  }

  /** Sets the value of the input (or textarea) `selector` as a person would leave it. */
  async function fill(selector: string, value: string) {
    await page.$eval(
      selector,
      (input, text) => {
        (input as HTMLInputElement).value = text as string;
      },
      value,
    );
  }

  const dialogClosed = () => page.waitForFunction(() => !document.querySelector('dialog[open]'));

  it('shows a collection’s schema and its indexes', async () => {
    await makePeople('people');
    await signIn();
    await openCollection('people');
    expect(await page.$eval('details.typing summary', (summary) => summary.textContent)).to.equal(
      'Schema and indexes: schema of name, email, age, active, role, joined, tags; email (unique)',
    );
    await showTyping();
    expect(JSON.parse(await page.$eval('.schema-json', (pre) => pre.textContent ?? ''))).to.deep.equal(schema);
    expect(await page.$$eval('table.indexes tbody td', (cells) => cells.map((cell) => cell.textContent))).to.deep.equal([
      'email',
      'email',
      'unique',
      'Drop',
    ]);

    await page.screenshot({ path: `${screenshots}typed-1280x800.png` });
  });

  it('lets an admin set a schema, saying what it refuses and which stored rows break it, and remove it', async () => {
    await admin.post('/v1/collections', { name: 'loose' });
    await admin.post('/v1/collections/loose/rows', [{ n: 1 }, { n: 'two' }, { n: 1 }]);
    await signIn();
    await openCollection('loose');
    expect(await page.$eval('details.typing summary', (summary) => summary.textContent)).to.equal(
      'Schema and indexes: no schema; no index',
    );
    await showTyping();
    expect(await page.$eval('details.typing', (details) => details.textContent))
      .to.include('No schema')
      .and.include('No index declared');

    const setSchema = async (asked: object) => {
      await fill('#schema-text', JSON.stringify(asked));
      await page.click('xpath/.//dialog[@open]//button[text()="Save schema"]');
    };
    await page.click('xpath/.//button[text()="Set a schema…"]');
    await page.waitForSelector('dialog[open] #schema-text');
    expect(await page.evaluate(() => document.activeElement?.closest('dialog') !== null)).to.equal(true);

    // A schema stored rows break: nothing changes, and the rows are listed with where they break it.
    await setSchema({ type: 'object', properties: { n: { type: 'integer' } } });
    await page.waitForSelector('dialog[open] .problems li');
    expect(
      await page.$$eval('dialog[open] .problems li', (items) => items.map((item) => item.textContent?.replace(/: .*/, ''))),
    ).to.deep.equal(['row 2 at /n']);
    expect((await admin.get<{ schema: unknown }>('/v1/collections/loose')).body.schema).to.equal(null);
    expectRefusals(409);

    // A schema the service refuses: each place in it that is wrong.
    await setSchema({ type: 'object', properties: { n: { contains: {} } } });
    await page.waitForFunction(() =>
      document.querySelector('dialog[open] .problems li')?.textContent?.startsWith('/properties/n/contains'),
    );
    expectRefusals(400);

    const accepted = { type: 'object', properties: { n: { type: ['integer', 'string'] } } };
    await setSchema(accepted);
    await dialogClosed();
    await page.waitForSelector('.schema-json');
    expect(JSON.parse(await page.$eval('.schema-json', (pre) => pre.textContent ?? ''))).to.deep.equal(accepted);
    expect((await admin.get('/v1/collections/loose/schema')).body).to.deep.equal(accepted);

    // Indexes: declared from their fields, then dropped. A unique one that stored rows break is refused,
    // naming them.
    await page.type('#index-fields', 'n');
    await page.click('.declare input[name="unique"]');
    await page.click('xpath/.//button[text()="Declare index"]');
    await page.waitForFunction(() => document.querySelector('details.typing .problems li')?.textContent === '1 in rows 1, 3');
    expectRefusals(409);
    await page.click('.declare input[name="unique"]');
    await page.click('xpath/.//button[text()="Declare index"]');
    await page.waitForSelector('table.indexes tr[data-index="n"]');
    expect(await page.$$eval('table.indexes tbody td', (cells) => cells.map((cell) => cell.textContent))).to.deep.equal([
      'n',
      'n',
      'no',
      'Drop',
    ]);
    expect(await page.$eval('details.typing .problems', (area) => area.textContent)).to.equal('');
    expect((await admin.get('/v1/collections/loose/indexes')).body).to.deep.equal([{ name: 'n', fields: ['n'], unique: false }]);
    await page.click('button[aria-label="Drop index n"]');
    await page.waitForFunction(() => !document.querySelector('table.indexes'));
    expect((await admin.get('/v1/collections/loose/indexes')).body).to.deep.equal([]);

    await page.click('xpath/.//button[text()="Remove schema…"]');
    await page.click('xpath/.//button[text()="Remove the schema"]');
    await page.waitForFunction(() => !document.querySelector('.schema-json'));
    expect((await admin.get<{ schema: unknown }>('/v1/collections/loose')).body.schema).to.equal(null);
  });

  it('shows a read key the schema and indexes, with nothing to change them', async () => {
    await makePeople('shown');
    const reader = await server.client('typed-person', TEST_PLAN, { scope: 'read' });
    // The console asks the list of keys whether the key is an admin key: a read key's is refused.
    const asked = page.waitForResponse((response) => new URL(response.url()).pathname === '/v1/keys');
    await signIn(reader.key);
    expect((await asked).status()).to.equal(403);
    await openCollection('shown');
    await showTyping();
    expect(await page.$eval('details.typing', (details) => details.textContent)).to.include('An admin key sets the schema');
    expect(await page.$$('details.typing button')).to.deep.equal([]);
    expect(await page.$('#index-fields')).to.equal(null);
    expect(JSON.parse(await page.$eval('.schema-json', (pre) => pre.textContent ?? ''))).to.deep.equal(schema);
    expectRefusals(403);
  });
});
