// The web console's API keys (src/console/keys.ts; openapi.yaml, the keys tag; docs/access.md) in a real
// headless Chromium against the real server, on each backend: the account's live keys listed, the
// signed-in one marked; a publishable key made with its origins (a wrong origin refused first, at its
// place, with nothing made), shown once and copied, listed, then used from a listed origin over HTTP and,
// revoked in the page, refused 401; a secret key made limited to a collection with an expiry, after a
// wider one is refused 403 in the dialog; the console's own key revoked; and a key without the admin
// scope told plainly that keys are not its to see. Every response the page sees is checked against
// openapi.yaml (support/browser.ts). Screenshots go to tmp/console-screenshots/.
import { mkdir } from 'node:fs/promises';
import { expect } from 'chai';
import type { Browser } from 'puppeteer-core';
import type { components } from '../../generated/openapi.ts';
import { describeEachBackend } from '../support/backends.ts';
import { fillInput, launchBrowser, pageForEachTest, signInToConsole, skipWithoutChromium } from '../support/browser.ts';
import { Client } from '../support/client.ts';
import { startTestServer, TEST_PLAN, type TestServer } from '../support/server.ts';

const screenshots = new URL('../../tmp/console-screenshots/', import.meta.url).pathname;

type Key = components['schemas']['Key'];
type Problem = components['schemas']['Problem'];

const APP = 'https://app.example';
const DEV = 'http://localhost:5173';
const ACCOUNT = 'keys-person';

describeEachBackend('the web console’s API keys, in Chromium', (backend) => {
  let server: TestServer;
  let browser: Browser;
  let admin: Client;

  before(async function () {
    this.timeout(60_000);
    skipWithoutChromium(this);
    await mkdir(screenshots, { recursive: true });
    server = await startTestServer({}, { backend });
    admin = await server.client(ACCOUNT);
    // A collection every caller may read (its rules), for a publishable key to read from an app's origin.
    expect((await admin.post('/v1/collections', { name: 'notes' })).status).to.equal(201);
    expect((await admin.post('/v1/collections/notes/rows', [{ text: 'hello' }])).status).to.equal(201);
    const rules = { read: true, create: false, update: false, delete: false };
    expect((await admin.put('/v1/collections/notes/rules', rules)).status).to.equal(200);
    browser = await launchBrowser();
    // The console's Copy button writes to the clipboard, and the test reads it back.
    await browser
      .defaultBrowserContext()
      .overridePermissions(server.url, ['clipboard-read', 'clipboard-write', 'clipboard-sanitized-write']);
  });

  after(async () => {
    await browser?.close();
    await server?.stop();
  });

  const tab = pageForEachTest(() => browser);

  const listed = async (client = admin) => (await client.get<Key[]>('/v1/keys')).body;
  const prefixes = async () => (await listed()).map((key) => key.prefix);
  const prefixOf = (key: string) => key.slice(0, key.startsWith('rb_pub_') ? 15 : 11);

  async function openKeys(key = admin.key as string) {
    await signInToConsole(tab.page, server.url, key);
    // Clicked in the page, not at its place on the screen: the collections, read meanwhile, move it down.
    const nav = await tab.page.waitForSelector('xpath/.//nav//li/button[text()="API keys"]');
    await nav?.evaluate((button) => (button as HTMLButtonElement).click());
    await tab.page.waitForSelector('#keys-title');
  }

  const fill = (selector: string, value: string) => fillInput(tab.page, selector, value);

  const text = (selector: string) => tab.page.$eval(selector, (element) => element.textContent?.trim() ?? '');
  const makeKey = () => tab.page.click('xpath/.//dialog[@open]//button[text()="Make key"]');

  /** The key the dialog shows once made, which it says is shown only now. */
  async function keyShown(): Promise<string> {
    const shown = await tab.page.waitForSelector('dialog[open] #made-key');
    expect(await text('dialog[open] .shown-once')).to.include('This is the only time the key is shown.');
    return (await shown?.evaluate((input) => (input as HTMLInputElement).value)) as string;
  }

  /** Closes the dialog showing `key`: from then on the key is nowhere on the page, only its prefix. */
  async function closeKeyShown(key: string) {
    await tab.page.click('xpath/.//dialog[@open]//button[text()="I have copied it"]');
    await tab.page.waitForFunction(() => !document.querySelector('dialog[open]'));
    expect(await tab.page.content()).not.to.include(key);
  }

  /**
   * What the list shows of the key `prefix`, once listed: each cell's text (a time as its datetime), its origins one a
   * line, and whether it is marked the console's own. (The page function names no function of its own:
   * tsx would wrap it in a helper the page has not got.)
   */
  const row = async (prefix: string) =>
    (await tab.page.waitForSelector(`tr[data-key="${prefix}"]`))?.evaluate((found) => ({
      ...Object.fromEntries(
        ['name', 'kind', 'scope', 'collections', 'rate', 'expires'].map((name) => [
          name,
          found.querySelector(`.${name} time`)?.getAttribute('datetime') ?? found.querySelector(`.${name}`)?.textContent?.trim() ?? '',
        ]),
      ),
      origins: [...found.querySelectorAll('.origins .line')].map((line) => line.textContent),
      own: found.querySelector('.own-key') !== null,
    }));

  it('makes a publishable key with its origins, shows it once, lists it; it reads rows from a listed origin until revoked, then 401', async () => {
    await openKeys();
    const own = prefixOf(admin.key as string);
    expect(await row(own)).to.include({ kind: 'secret', scope: 'admin', collections: 'all', expires: 'never', own: true });
    // By prefix: a key's last_used_at moves on with the minute.
    const before = await prefixes();

    await tab.page.click('xpath/.//button[text()="New key…"]');
    await tab.page.waitForSelector('dialog[open] #key-scope');
    await tab.page.click('dialog[open] input[name=kind][value=publishable]');
    await tab.page.waitForSelector('dialog[open] #key-origins');
    await fill('#key-name', 'web app');
    await fill('#key-origins', `${APP}, ${DEV}/`);
    await fill('#key-rate', '5');
    await makeKey();
    // Refused at its place (a trailing slash is no origin), and nothing made.
    await tab.page.waitForFunction(() => document.querySelector('dialog[open] .problems li')?.textContent?.startsWith('/origins/1'));
    tab.watched.expectRefusals(400);
    expect(await prefixes()).to.deep.equal(before);

    await fill('#key-origins', `${APP} ${DEV}`);
    await tab.page.screenshot({ path: `${screenshots}keys-new-${backend}.png` });
    await makeKey();
    const key = await keyShown();
    expect(key).to.match(/^rb_pub_[A-Za-z0-9_-]{32}$/);
    await tab.page.click('xpath/.//dialog[@open]//button[text()="Copy key"]');
    await tab.page.waitForFunction(() => document.querySelector('dialog[open] .note')?.textContent === 'Copied.');
    expect(await tab.page.evaluate(() => navigator.clipboard.readText())).to.equal(key);
    await closeKeyShown(key);

    const prefix = prefixOf(key);
    expect(await row(prefix)).to.deep.equal({
      name: 'web app',
      kind: 'publishable',
      scope: 'write',
      collections: 'all',
      origins: [APP, DEV],
      rate: '5/s',
      expires: 'never',
      own: false,
    });
    expect((await listed()).find((each) => each.prefix === prefix)).to.include({ kind: 'publishable', end_user_rate: 5, name: 'web app' });
    await tab.page.screenshot({ path: `${screenshots}keys-${backend}.png`, fullPage: true });

    // The key made in the page reads the rows the rules allow, from a listed origin, readable there (CORS).
    const app = new Client(server.url, key);
    const read = await app.get<{ text: string }[]>('/v1/collections/notes/rows', { headers: { origin: APP } });
    expect(read.status, read.text).to.equal(200);
    expect(read.body.map((note) => note.text)).to.deep.equal(['hello']);
    expect(read.headers.get('access-control-allow-origin')).to.equal(APP);
    const elsewhere = await app.get<Problem>('/v1/collections/notes/rows', { headers: { origin: 'https://evil.example' } });
    expect([elsewhere.status, elsewhere.body.code]).to.deep.equal([403, 'origin_not_allowed']);

    await tab.page.click(`button[aria-label="Revoke key ${prefix}…"]`);
    await tab.page.click(`xpath/.//tr[@data-key="${prefix}"]//button[text()="Revoke key ${prefix}"]`);
    await tab.page.waitForFunction((gone) => !document.querySelector(`tr[data-key="${gone}"]`), {}, prefix);
    expect(await text('.keys .note')).to.equal(`The key ${prefix} is revoked: the service refuses it from now on.`);
    expect(await prefixes()).to.deep.equal(before);
    const refused = await app.get<Problem>('/v1/collections/notes/rows', { headers: { origin: APP } });
    expect([refused.status, refused.body.code]).to.deep.equal([401, 'unauthorized']);
  });

  it('refuses in the dialog a key wider than the signed-in one (403), then makes a secret key limited to a collection, with an expiry', async () => {
    const limited = await server.client(ACCOUNT, TEST_PLAN, { scope: 'admin', collections: ['notes'] });
    await openKeys(limited.key);
    await tab.page.waitForSelector(`tr[data-key="${prefixOf(limited.key as string)}"]`);
    // It sees only the keys it could have made: not the admin key of every collection.
    expect(await tab.page.$(`tr[data-key="${prefixOf(admin.key as string)}"]`)).to.equal(null);

    await tab.page.click('xpath/.//button[text()="New key…"]');
    await tab.page.waitForSelector('dialog[open] #key-scope');
    // Left empty, the collections and expiry are the signed-in key's.
    expect(await tab.page.$eval('#key-collections', (input) => (input as HTMLInputElement).placeholder)).to.equal(
      'left empty: notes, as this key',
    );
    expect(await text('#key-expires-hint')).to.match(/^Left empty: never, as this key\./);
    await fill('#key-name', 'dashboard');
    await tab.page.select('#key-scope', 'read');
    await fill('#key-collections', 'notes, orders');
    await makeKey();
    const wider = await limited.post<Problem>('/v1/keys', {
      kind: 'secret',
      name: 'dashboard',
      scope: 'read',
      collections: ['notes', 'orders'],
    });
    expect(wider.status).to.equal(403);
    await tab.page.waitForFunction(
      (detail) => document.querySelector('dialog[open] .problems p')?.textContent === detail,
      {},
      wider.body.detail,
    );
    tab.watched.expectRefusals(403);

    await fill('#key-collections', 'notes');
    // Two days from now to the minute, typed as the person's own time, as a datetime-local input takes it.
    const { typed, expiresAt } = await tab.page.evaluate(() => {
      const at = new Date(Date.now() + 2 * 86_400_000);
      at.setSeconds(0, 0);
      const local = new Date(at.getTime() - at.getTimezoneOffset() * 60_000).toISOString().slice(0, 16);
      return { typed: local, expiresAt: at.toISOString() };
    });
    await fill('#key-expires', typed);
    await makeKey();
    const key = await keyShown();
    expect(key).to.match(/^rb_[A-Za-z0-9_-]{32}$/);
    await closeKeyShown(key);

    const prefix = prefixOf(key);
    expect(await row(prefix)).to.deep.equal({
      name: 'dashboard',
      kind: 'secret',
      scope: 'read',
      collections: 'notes',
      origins: [],
      rate: '—',
      expires: expiresAt,
      own: false,
    });
    expect((await listed(limited)).find((each) => each.prefix === prefix)).to.deep.include({
      scope: 'read',
      collections: ['notes'],
      expires_at: expiresAt,
    });
    const reader = new Client(server.url, key);
    expect((await reader.get('/v1/collections/notes/rows')).status).to.equal(200);
  });

  it('revokes the key it is signed in with, and says to sign in with another, at 390 px too', async () => {
    const throwaway = await server.client(ACCOUNT);
    await tab.page.setViewport({ width: 390, height: 844 });
    await openKeys(throwaway.key);
    const prefix = prefixOf(throwaway.key as string);
    expect(await row(prefix)).to.include({ own: true });
    await tab.page.screenshot({ path: `${screenshots}keys-390-${backend}.png`, fullPage: true });
    await tab.page.click(`button[aria-label="Revoke key ${prefix}…"]`);
    await tab.page.click(`xpath/.//tr[@data-key="${prefix}"]//button[text()="Revoke key ${prefix}, this console's own"]`);
    await tab.page.waitForFunction((gone) => !document.querySelector(`tr[data-key="${gone}"]`), {}, prefix);
    expect(await text('.keys .note')).to.equal(
      `The key ${prefix} is revoked: it was this console's own, which the service now refuses. Sign out, and in with another key.`,
    );
    expect((await throwaway.get('/v1/usage')).status).to.equal(401);
    expect(await prefixes()).not.to.include(prefix);
  });

  it('tells a key without the admin scope that keys are not its to see', async () => {
    const writer = await server.client(ACCOUNT, TEST_PLAN, { scope: 'write' });
    await openKeys(writer.key);
    await tab.page.waitForSelector('.keys .refused');
    expect(await text('.keys .refused')).to.equal("Only an admin key may see and manage the account's keys, and this key is not one.");
    expect(await text('.keys .hint')).to.match(/^The service answered 403: /);
    expect(await tab.page.$('xpath/.//button[text()="New key…"]')).to.equal(null);
    tab.watched.expectRefusals(403);
  });
});
