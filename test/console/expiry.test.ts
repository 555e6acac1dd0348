// The web console's rows that expire (src/console/expiry.ts; docs/expiry.md, docs/console.md) in a real
// headless Chromium against the real server: a collection's time to live said above its rows, and on
// each row when it expires (or that it never does); an expired row not shown. Every response the page
// sees is checked against openapi.yaml (support/browser.ts). Screenshots go to tmp/console-screenshots/.
import { mkdir } from 'node:fs/promises';
import { expect } from 'chai';
import type { Browser } from 'puppeteer-core';
import { launchBrowser, pageForEachTest, signInToConsole, skipWithoutChromium } from '../support/browser.ts';
import type { Client } from '../support/client.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

const screenshots = new URL('../../tmp/console-screenshots/', import.meta.url).pathname;

describe('the web console’s rows that expire, in Chromium', function () {
  this.timeout(120_000);
  let server: TestServer;
  let browser: Browser;
  let admin: Client;

  before(async function () {
    this.timeout(60_000);
    skipWithoutChromium(this);
    await mkdir(screenshots, { recursive: true });
    // No sweep: the expired row is still stored, and the console reads it no more.
    server = await startTestServer({ expirySweepIntervalMs: 3_600_000 });
    admin = await server.client('expiry-person');
    browser = await launchBrowser();
  });

  after(async () => {
    await browser?.close();
    await server?.stop();
  });

  const tab = pageForEachTest(() => browser);

  async function openCollection(name: string) {
    const button = await tab.page.waitForSelector(`xpath/.//nav//li/button[span[1][text()="${name}"]]`);
    await button?.click();
    await tab.page.waitForSelector(`xpath/.//h2[@id="collection-title"][text()="${name}"]`);
    await tab.page.waitForSelector('details.typing:not([aria-busy])');
  }

  /** The table's rows, each as its id and what its expiry says (null for none). */
  const expiries = () =>
    tab.page.$$eval('table tbody tr', (rows) =>
      rows.map((row) => [row.getAttribute('data-id'), row.querySelector('.expiry')?.textContent ?? null]),
    );

  it('says the collection’s time to live, and on each row when it expires; an expired row is not shown', async () => {
    const { page } = tab;
    expect((await admin.post('/v1/collections', { name: 'sessions' })).status).to.equal(201);
    expect((await admin.put('/v1/collections/sessions/ttl', { field: 'expires_at' })).status).to.equal(200);
    const inAnHour = new Date(Date.now() + 3600_000 - 1000).toISOString();
    const rows = [
      { user: 'ada', expires_at: inAnHour },
      { user: 'bob' },
      { user: 'cy', expires_at: '2999-01-01T00:00:00Z' },
      { user: 'dee', expires_at: '2001-01-01T00:00:00Z' },
      { user: 'eve', expires_at: 'soon' },
    ];
    expect((await admin.post('/v1/collections/sessions/rows', rows)).status).to.equal(201);
    expect((await admin.post('/v1/collections', { name: 'notes' })).status).to.equal(201);
    expect((await admin.post('/v1/collections/notes/rows', [{ text: 'kept' }])).status).to.equal(201);

    await signInToConsole(page, server.url, admin.key as string);
    await openCollection('sessions');
    const line = await page.waitForSelector('.ttl-line');
    expect(await line?.evaluate((element) => element.textContent?.replace(/\s+/g, ' ').trim())).to.equal(
      "Rows expire at the date-time of their field expires_at (the collection's time to live): each is gone from reads at that instant, and deleted soon after.",
    );
    await page.waitForSelector('table tbody tr[data-id="1"] .expiry');
    const shown = await expiries();
    expect(shown.map(([id]) => id)).to.deep.equal(['1', '2', '3', '5']);
    expect(shown[0][1]).to.match(/^expires in 59 min$/);
    expect(shown.slice(1).map(([, said]) => said?.replace(/\d+/, 'N'))).to.deep.equal([
      'never expires',
      'expires in N years',
      'never expires',
    ]);
    // The instant on hover.
    expect(await page.$eval('tr[data-id="1"] .expiry time', (time) => time.getAttribute('title'))).to.equal(
      new Date(Date.parse(inAnHour)).toISOString(),
    );
    await page.screenshot({ path: `${screenshots}expiry-1280x800.png` });

    // A collection without a time to live says nothing of expiries.
    await openCollection('notes');
    await page.waitForSelector('table tbody tr[data-id="1"]');
    expect(await page.$('.ttl-line')).to.equal(null);
    expect(await expiries()).to.deep.equal([['1', null]]);
  });
});
