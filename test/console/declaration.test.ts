// The web console's declaration (src/console/declaration.ts; GET /v1/declaration; docs/declarations.md) in
// a real headless Chromium against the real server, on each backend: the account's rowbase.yaml shown
// read-only, as the API and `rowbase pull` write it, downloaded by its link into a file of that text; and
// a key without the admin scope told plainly that the declaration is not its to read. Every response the
// page sees is checked against openapi.yaml (support/browser.ts).
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import type { Browser } from 'puppeteer-core';
import { describeEachBackend } from '../support/backends.ts';
import { launchBrowser, pageForEachTest, signInToConsole, skipWithoutChromium } from '../support/browser.ts';
import type { Client } from '../support/client.ts';
import { startTestServer, TEST_PLAN, type TestServer } from '../support/server.ts';

const ACCOUNT = 'declaration-person';

describeEachBackend('the web console’s declaration, in Chromium', (backend) => {
  let server: TestServer;
  let browser: Browser;
  let admin: Client;

  before(async function () {
    this.timeout(60_000);
    skipWithoutChromium(this);
    server = await startTestServer({}, { backend });
    admin = await server.client(ACCOUNT);
    const declaration = `collections:
  sessions:
    schema: {type: object, properties: {expires_at: {type: string, format: date-time}}}
    indexes: [{fields: [expires_at]}]
    ttl: {field: expires_at}
`;
    const applied = await admin.post('/v1/declaration/apply', { declaration });
    expect(applied.status, applied.text).to.equal(200);
    browser = await launchBrowser();
  });

  after(async () => {
    await browser?.close();
    await server?.stop();
  });

  const tab = pageForEachTest(() => browser);

  async function openDeclaration(key: string) {
    await signInToConsole(tab.page, server.url, key);
    // Clicked in the page, not at its place on the screen: the collections, read meanwhile, move it down.
    const nav = await tab.page.waitForSelector('xpath/.//nav//li/button[text()="Declaration"]');
    await nav?.evaluate((button) => (button as HTMLButtonElement).click());
    await tab.page.waitForSelector('#declaration-title');
  }

  const text = (selector: string) => tab.page.$eval(selector, (element) => element.textContent ?? '');

  it("shows the account's rowbase.yaml read-only, as GET /v1/declaration answers it, and downloads it", async () => {
    const { yaml } = (await admin.get<{ yaml: string }>('/v1/declaration')).body;
    expect(yaml).to.include('ttl:');
    await openDeclaration(admin.key as string);
    expect(tab.page.url()).to.match(/#\/declaration$/);
    await tab.page.waitForSelector('pre.declaration-yaml');
    expect(await text('pre.declaration-yaml')).to.equal(yaml);
    // Nothing in the view edits it.
    expect(await tab.page.$$('section.declaration textarea, section.declaration input, section.declaration form')).to.deep.equal([]);

    const folder = await mkdtemp(join(tmpdir(), 'rowbase-console-download-'));
    try {
      const cdp = await tab.page.createCDPSession();
      await cdp.send('Browser.setDownloadBehavior', { behavior: 'allow', downloadPath: folder, eventsEnabled: true });
      const done = new Promise<string>((resolve, reject) => {
        cdp.on('Browser.downloadWillBegin', ({ suggestedFilename }) => {
          if (suggestedFilename !== 'rowbase.yaml') reject(new Error(`downloads ${suggestedFilename}`));
        });
        cdp.on('Browser.downloadProgress', ({ state }) => {
          if (state === 'completed') resolve(state);
          if (state === 'canceled') reject(new Error('the download was canceled'));
        });
      });
      await tab.page.click('section.declaration a.download');
      await done;
      expect(await readFile(join(folder, 'rowbase.yaml'), 'utf8')).to.equal(yaml);
      await cdp.detach();
    } finally {
      await rm(folder, { recursive: true, force: true });
    }
  });

  it('tells a key without the admin scope that the declaration is not its to read', async () => {
    const writer = await server.client(ACCOUNT, TEST_PLAN, { scope: 'write' });
    await openDeclaration(writer.key as string);
    await tab.page.waitForSelector('.declaration .refused');
    expect(await text('.declaration .refused')).to.equal(
      "Only an admin key of every collection may read the account's declaration, and this key is not one.",
    );
    expect(await tab.page.$('section.declaration a.download')).to.equal(null);
    tab.watched.expectRefusals(403);
  });
});
