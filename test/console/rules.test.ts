// The web console's rules, preview and token issuers (src/console/rules.ts, preview.ts, issuers.ts;
// docs/access.md) in a real headless Chromium against the real server, on each backend: a collection's
// rules read (none: a 404), refused with each wrong place named by its JSON Pointer and nothing stored,
// set, replaced and removed; the table's page previewed as a user with claims and as an anonymous caller
// (only the rows the rules let them read, without the fields hidden from them, each with the rule that
// decided; the rows kept from them named apart), following the table's filter; the account's token
// issuers made, replaced and deleted, a secret never shown, a refusal said with its place; and a key
// that may not manage them told so plainly. Every response the page sees is checked against
// openapi.yaml (support/browser.ts). Screenshots go to tmp/console-screenshots/.
import { mkdir } from 'node:fs/promises';
import { expect } from 'chai';
import type { Browser } from 'puppeteer-core';
import { describeEachBackend } from '../support/backends.ts';
import { fillInput, launchBrowser, pageForEachTest, signInToConsole, skipWithoutChromium } from '../support/browser.ts';
import type { Client } from '../support/client.ts';
import { startTestServer, TEST_PLAN, type TestServer } from '../support/server.ts';

const screenshots = new URL('../../tmp/console-screenshots/', import.meta.url).pathname;

type Issuer = {
  name: string;
  issuer: string;
  audiences: string[];
  key_source: string;
  jwks_uri: string | null;
  discovery_url: string | null;
};
type Check = { operation: string; claims: unknown; row: Record<string, unknown> };

/** Rows of two users and of no one, some public; `email` and `secret` have read rules of their own. */
const notes = [
  { owner: 'ada', text: 'ada’s draft', email: 'ada@example.com', secret: 'ada-1' },
  { owner: 'bob', text: 'bob’s draft', email: 'bob@example.com', secret: 'bob-1' },
  { owner: 'ada', text: 'ada’s post', email: 'ada@example.com', secret: 'ada-2', public: true },
  { owner: 'cy', text: 'cy’s post', email: 'cy@example.com', secret: 'cy-1', public: true },
];
const mine = { owner: { $auth: 'sub' } };
/** A user reads their own rows and the public ones; any user with a token sees `email`; no one sees `secret`. */
const rules = {
  read: { $or: [mine, { public: true }] },
  create: mine,
  update: mine,
  delete: false,
  fields: { email: { read: 'authenticated' }, secret: { read: false } },
};

describeEachBackend('the web console’s rules, preview and token issuers, in Chromium', function (backend) {
  // Each test is many steps of a page, as the other console suites' (a loaded CI machine took over 30 s for one).
  this.timeout(120_000);
  let server: TestServer;
  let browser: Browser;
  let admin: Client;
  let collections = 0;

  before(async function () {
    this.timeout(60_000);
    skipWithoutChromium(this);
    await mkdir(screenshots, { recursive: true });
    server = await startTestServer({}, { backend });
    admin = await server.client('rules-person');
    browser = await launchBrowser();
  });

  after(async () => {
    await browser?.close();
    await server?.stop();
  });

  const tab = pageForEachTest(() => browser);

  /** A new collection holding `notes`, with `withRules` set when given; its name. */
  async function makeNotes(withRules?: object): Promise<string> {
    const name = `notes${++collections}`;
    expect((await admin.post('/v1/collections', { name })).status).to.equal(201);
    expect((await admin.post(`/v1/collections/${name}/rows`, notes)).status).to.equal(201);
    if (withRules) expect((await admin.put(`/v1/collections/${name}/rules`, withRules)).status).to.equal(200);
    return name;
  }

  const signIn = (key = admin.key as string) => signInToConsole(tab.page, server.url, key);

  /** Opens collection `name` and its rules, and waits for them to be read (or refused). */
  async function openRules(name: string) {
    const button = await tab.page.waitForSelector(`xpath/.//nav//li/button[span[1][text()="${name}"]]`);
    await button?.click();
    await tab.page.waitForSelector(`xpath/.//h2[@id="collection-title"][text()="${name}"]`);
    await tab.page.waitForSelector(`tbody tr[data-id="${notes.length}"]`);
    await tab.page.click('details.rules summary');
    await tab.page.waitForSelector('details.rules[open] #rules-title, details.rules[open] .refused');
  }

  async function openIssuers() {
    // Clicked in the page, not at its place on the screen: the collections, read meanwhile, move it down.
    const nav = await tab.page.waitForSelector('xpath/.//nav//li/button[text()="Token issuers"]');
    await nav?.evaluate((button) => (button as HTMLButtonElement).click());
    await tab.page.waitForSelector('#issuers-title');
  }

  const fill = (selector: string, value: string) => fillInput(tab.page, selector, value);

  const text = (selector: string) => tab.page.$eval(selector, (element) => element.textContent ?? '');
  const dialogClosed = () => tab.page.waitForFunction(() => !document.querySelector('dialog[open]'));

  describe('rules', () => {
    it('reads none, says where rules it refuses are wrong with nothing stored, sets, replaces and removes them', async () => {
      const name = await makeNotes();
      await signIn();
      await openRules(name);
      expect(await text('details.rules summary')).to.equal('Rules and preview: none');
      expect(await text('details.rules .rules-body')).to.include('No rules: a publishable key may do nothing with this collection.');
      // A collection without rules is GET …/rules's 404.
      tab.watched.expectRefusals(404);

      await tab.page.click('xpath/.//details[contains(@class,"rules")]//button[text()="Set rules…"]');
      await tab.page.waitForSelector('dialog[open] #rules-text');
      // The editor starts from what a collection without rules is: every operation denied.
      expect(JSON.parse(await tab.page.$eval('#rules-text', (area) => (area as HTMLTextAreaElement).value))).to.deep.equal({
        read: false,
        create: false,
        update: false,
        delete: false,
        fields: {},
      });
      const save = async (asked: string) => {
        await fill('#rules-text', asked);
        await tab.page.click('xpath/.//dialog[@open]//button[text()="Save rules"]');
      };

      await save('{"read": ');
      await tab.page.waitForFunction(() => document.querySelector('dialog[open] .problems p')?.textContent?.startsWith('Not JSON: '));

      // Refused by the service: each wrong place by its JSON Pointer, beside the editor.
      await save(JSON.stringify({ read: { owner: { $auth: '' } }, fields: { id: { read: false } } }));
      await tab.page.waitForSelector('dialog[open] .problems li');
      const places = await tab.page.$$eval('dialog[open] .problems li', (items) =>
        items.map((item) => item.textContent?.replace(/: .*/, '')),
      );
      expect(places).to.have.members(['/read/owner/$auth', '/fields/id']);
      expect(await tab.page.$eval('#rules-text', (area) => area.getAttribute('aria-invalid'))).to.equal('true');
      expect((await admin.get(`/v1/collections/${name}/rules`)).status).to.equal(404);
      tab.watched.expectRefusals(400);
      await tab.page.screenshot({ path: `${screenshots}rules-refused-1280x800.png` });

      await save(JSON.stringify(rules));
      await dialogClosed();
      await tab.page.waitForSelector('.rules-json');
      const stored = (await admin.get(`/v1/collections/${name}/rules`)).body;
      expect(stored).to.deep.equal(rules);
      expect(JSON.parse(await text('.rules-json'))).to.deep.equal(stored);
      expect(await text('details.rules summary')).to.equal(
        'Rules and preview: read by filter, create by filter, update by filter, delete no one; fields email, secret',
      );

      // Edited from the rules as they are, replaced whole.
      await tab.page.click('xpath/.//details[contains(@class,"rules")]//button[text()="Edit rules…"]');
      await tab.page.waitForSelector('dialog[open] #rules-text');
      expect(JSON.parse(await tab.page.$eval('#rules-text', (area) => (area as HTMLTextAreaElement).value))).to.deep.equal(rules);
      await save(JSON.stringify({ read: true, delete: 'authenticated' }));
      await dialogClosed();
      await tab.page.waitForFunction(() =>
        document
          .querySelector('details.rules summary')
          ?.textContent?.endsWith('read anyone, create no one, update no one, delete authenticated'),
      );
      const replaced = { read: true, create: false, update: false, delete: 'authenticated', fields: {} };
      expect((await admin.get(`/v1/collections/${name}/rules`)).body).to.deep.equal(replaced);
      expect(JSON.parse(await text('.rules-json'))).to.deep.equal(replaced);

      await tab.page.click('xpath/.//button[text()="Remove rules…"]');
      await tab.page.click('xpath/.//button[text()="Remove the rules"]');
      await tab.page.waitForFunction(() => !document.querySelector('.rules-json'));
      expect(await text('details.rules summary')).to.equal('Rules and preview: none');
      expect((await admin.get(`/v1/collections/${name}/rules`)).status).to.equal(404);
    });
  });

  describe('preview', () => {
    /** The preview's table, as the header's names to each row's cells (the reason's but its summary), top to bottom. */
    const previewed = () =>
      tab.page.$$eval('.preview-table tbody tr', (rows) => {
        const headers = [...document.querySelectorAll('.preview-table thead th')].map((th) => th.textContent ?? '');
        return rows.map((row) =>
          Object.fromEntries(
            [...row.querySelectorAll('td')].map((cell, at) => [headers[at], (cell.querySelector('summary') ?? cell).textContent ?? '']),
          ),
        );
      });
    /** The rows the preview names as kept from the user, as their lines. */
    const kept = () => tab.page.$$eval('.preview .kept li', (items) => items.map((item) => item.textContent));

    /** Previews as `claims` (as typed), or anonymously, and waits for the answer. */
    async function previewAs(claims: string | null) {
      await tab.page.click(`.caller-choice input[value="${claims === null ? 'anonymous' : 'token'}"]`);
      if (claims !== null) await fill('#preview-claims', claims);
      const answered = tab.page.waitForResponse((response) => new URL(response.url()).pathname.endsWith('/rules/check'));
      await tab.page.click('xpath/.//form[@class="preview-form"]//button[text()="Preview"]');
      await answered;
      await tab.page.waitForSelector('.preview[aria-busy="false"] .preview-table, .preview[aria-busy="false"] .previewed');
    }

    it('shows the table’s page as a user with claims, and as an anonymous caller, only the rows and fields each may read', async () => {
      const name = await makeNotes(rules);
      const stored = (await admin.get<{ id: number }[]>(`/v1/collections/${name}/rows`)).body;
      // Every check the page asks for.
      const checks: Check[] = [];
      tab.page.on('request', (request) => {
        if (request.method() === 'POST' && request.url().endsWith('/rules/check')) checks.push(JSON.parse(request.postData() ?? 'null'));
      });
      await signIn();
      // The table shows one field only: the preview reads the rows whole, for rules that name others.
      const button = await tab.page.waitForSelector(`xpath/.//nav//li/button[span[1][text()="${name}"]]`);
      await button?.click();
      await tab.page.waitForSelector('#select');
      await tab.page.type('#select', 'text');
      await tab.page.click('.controls button[type=submit]');
      await tab.page.waitForFunction(() => [...document.querySelectorAll('.rows thead th')].length === 3);
      await openRules(name);

      // Claims that are no object are said, and nothing is asked.
      await tab.page.click('.caller-choice input[value="token"]');
      await fill('#preview-claims', '{"sub": ');
      await tab.page.click('xpath/.//form[@class="preview-form"]//button[text()="Preview"]');
      await tab.page.waitForFunction(() =>
        document.querySelector('.preview .problems p')?.textContent?.startsWith('The claims are not JSON: '),
      );
      await fill('#preview-claims', '["ada"]');
      await tab.page.click('xpath/.//form[@class="preview-form"]//button[text()="Preview"]');
      await tab.page.waitForFunction(() =>
        document.querySelector('.preview .problems p')?.textContent?.startsWith('The claims are a JSON object'),
      );
      expect(checks).to.deep.equal([]);

      await previewAs('{"sub": "ada"}');
      // Ada's rows and the public one, without `secret`, hidden from everyone; `email` shown to a user with a token.
      expect(await previewed()).to.deep.equal([
        { id: '1', owner: 'ada', text: 'ada’s draft', email: 'ada@example.com', public: '', 'Hidden fields': 'secret', Why: 'Why' },
        { id: '3', owner: 'ada', text: 'ada’s post', email: 'ada@example.com', public: 'true', 'Hidden fields': 'secret', Why: 'Why' },
        { id: '4', owner: 'cy', text: 'cy’s post', email: 'cy@example.com', public: 'true', 'Hidden fields': 'secret', Why: 'Why' },
      ]);
      expect(await text('.preview-table caption')).to.equal("As this user: 3 of the 4 rows of the table's page");
      expect(await tab.page.$eval('.preview-table', (table) => table.textContent)).not.to.include('ada-1');
      // The rule that decided: on hover, and expanded.
      const matched = `read: the row matches ${JSON.stringify(rules.read)} for these claims`;
      expect(await tab.page.$eval('.preview-table tr[data-id="1"]', (row) => row.getAttribute('title'))).to.equal(matched);
      await tab.page.click('.preview-table tr[data-id="1"] .reason summary');
      expect(
        await tab.page.$eval('.preview-table tr[data-id="1"] .reason details', (details) => (details as HTMLDetailsElement).open),
      ).to.equal(true);
      expect(await text('.preview-table tr[data-id="1"] .reason span')).to.equal(matched);
      // Bob's row is kept from her, with why.
      expect(await text('.preview .kept summary')).to.equal('1 row of the page kept from this user');
      expect(await kept()).to.deep.equal([`Row 2: read: the row does not match ${JSON.stringify(rules.read)} for these claims`]);
      // One read check per row of the page, each of the row whole, with the claims given.
      // (Sent at once, they may leave in any order.)
      const byRow = (one: Check, other: Check) => Number(one.row.id) - Number(other.row.id);
      expect([...checks].sort(byRow)).to.deep.equal(stored.map((row) => ({ operation: 'read', claims: { sub: 'ada' }, row })));
      await tab.page.screenshot({ path: `${screenshots}rules-preview-1280x800.png`, fullPage: true });

      // Anonymous: a rule naming a claim is denied to a caller without a token, so no row is read.
      await previewAs(null);
      expect(await tab.page.$eval('#preview-claims', (area) => (area as HTMLTextAreaElement).disabled)).to.equal(true);
      expect(await text('.preview .previewed')).to.equal("None of the 4 rows of the table's page is read by an anonymous caller.");
      expect(await kept()).to.have.length(4);
      expect((await kept())[0]).to.equal('Row 1: read: denied to anonymous callers: it names the claim sub, and the caller has no token');
      expect(checks.slice(4).map((check) => check.claims)).to.deep.equal([null, null, null, null]);
    });

    it('follows the table’s filter, hides a field from an anonymous caller, and is made again when the rules change', async () => {
      const publicRules = { read: { public: true }, fields: { email: { read: 'authenticated' }, secret: { read: false } } };
      const name = await makeNotes(publicRules);
      await signIn();
      await openRules(name);
      await previewAs(null);
      expect((await previewed()).map((row) => [row.id, row['Hidden fields']])).to.deep.equal([
        ['3', 'email, secret'],
        ['4', 'email, secret'],
      ]);
      expect(Object.keys((await previewed())[0])).to.deep.equal(['id', 'owner', 'text', 'public', 'Hidden fields', 'Why']);

      // The table narrowed to Ada's rows: the preview reads that tab.page.
      await fill('#filter', '{"owner": "ada"}');
      await tab.page.click('.controls button[type=submit]');
      await tab.page.waitForFunction(() =>
        document.querySelector('.preview-table caption')?.textContent?.endsWith("1 of the 2 rows of the table's page"),
      );
      expect((await previewed()).map((row) => row.id)).to.deep.equal(['3']);

      // Rules replaced in the console: the preview is made again under them.
      await tab.page.click('xpath/.//details[contains(@class,"rules")]//button[text()="Edit rules…"]');
      await tab.page.waitForSelector('dialog[open] #rules-text');
      await fill('#rules-text', JSON.stringify({ read: true }));
      await tab.page.click('xpath/.//dialog[@open]//button[text()="Save rules"]');
      await dialogClosed();
      await tab.page.waitForFunction(() =>
        document.querySelector('.preview-table caption')?.textContent?.endsWith("2 of the 2 rows of the table's page"),
      );
      expect((await previewed()).map((row) => [row.id, row.secret, row['Hidden fields']])).to.deep.equal([
        ['1', 'ada-1', '—'],
        ['3', 'ada-2', '—'],
      ]);
      expect(await tab.page.$('.preview .kept')).to.equal(null);
      await tab.page.setViewport({ width: 390, height: 844 });
      expect(await tab.page.evaluate(() => document.documentElement.scrollWidth)).to.be.at.most(390);
      await tab.page.screenshot({ path: `${screenshots}rules-preview-390x844.png`, fullPage: true });
    });
  });

  describe('token issuers', () => {
    const issuers = async () => (await admin.get<Issuer[]>('/v1/auth/issuers')).body;
    const SECRET = 'a shared secret of at least 32 characters';

    /** Fills the open dialog's fields, chooses the key's source, and saves. */
    async function saveIssuer(settings: { name?: string; issuer: string; audiences: string; source: string; key: string }) {
      if (settings.name !== undefined) await fill('#issuer-name', settings.name);
      await fill('#issuer-iss', settings.issuer);
      await fill('#issuer-audiences', settings.audiences);
      await tab.page.click(`.key-choice input[value="${settings.source}"]`);
      await tab.page.waitForSelector(`#issuer-key[type="${settings.source === 'secret' ? 'password' : 'url'}"]`);
      await fill('#issuer-key', settings.key);
      await tab.page.click('dialog[open] button[type=submit]');
    }
    /** Opens the dialog of a new issuer, and saves `settings` in it. */
    async function addIssuer(settings: { name: string; issuer: string; audiences: string; source: string; key: string }) {
      await tab.page.click('xpath/.//button[text()="Add an issuer…"]');
      await tab.page.waitForSelector('dialog[open] #issuer-name');
      await saveIssuer(settings);
    }
    const noted = (words: string) =>
      tab.page.waitForFunction((expected) => document.querySelector('.issuers .note')?.textContent === expected, {}, words);
    const cells = (name: string) =>
      tab.page.$$eval(`tr[data-issuer="${name}"] td`, (tds) => tds.slice(0, 4).map((td) => td.textContent ?? ''));

    it('adds, replaces and deletes issuers, never showing a secret, and says where one it refuses is wrong', async () => {
      await signIn();
      await openIssuers();
      await tab.page.waitForSelector('.issuers .empty');
      expect(await text('.issuers .empty')).to.equal('No issuer yet: every caller with a publishable key is anonymous.');

      await addIssuer({
        name: 'app',
        issuer: 'https://auth.example/',
        audiences: 'notes, admin',
        source: 'jwks_uri',
        key: 'https://auth.example/.well-known/jwks.json',
      });
      await noted('The issuer app is made.');
      await tab.page.waitForSelector('tr[data-issuer="app"]');
      expect(await cells('app')).to.deep.equal([
        'app',
        'https://auth.example/',
        'notes, admin',
        'key set at https://auth.example/.well-known/jwks.json',
      ]);

      // Refused: a key set on a loopback address, said with its place; nothing made.
      await addIssuer({
        name: 'local',
        issuer: 'https://local.example/',
        audiences: 'notes',
        source: 'jwks_uri',
        key: 'http://127.0.0.1/jwks',
      });
      await tab.page.waitForSelector('dialog[open] .problems li');
      expect(await text('dialog[open] .problems li')).to.match(/^\/jwks_uri: must not point at a private address/);
      tab.watched.expectRefusals(400);
      await tab.page.click('xpath/.//dialog[@open]//button[text()="Cancel"]');
      await dialogClosed();

      await addIssuer({ name: 'backend', issuer: 'https://backend.example/', audiences: 'notes', source: 'secret', key: SECRET });
      await noted('The issuer backend is made.');
      await tab.page.waitForSelector('tr[data-issuer="backend"]');
      expect(await cells('backend')).to.deep.equal(['backend', 'https://backend.example/', 'notes', 'a shared secret (HS256), not shown']);
      expect((await issuers()).map(({ name, key_source }) => [name, key_source])).to.deep.equal([
        ['app', 'jwks_uri'],
        ['backend', 'secret'],
      ]);

      // Opened again, the secret is not there to read: it is typed again to replace the issuer.
      await tab.page.click('button[aria-label="Edit issuer backend"]');
      await tab.page.waitForSelector('dialog[open] #issuer-key[type="password"]');
      expect(await tab.page.$eval('#issuer-key', (input) => (input as HTMLInputElement).value)).to.equal('');
      expect(await tab.page.$('dialog[open] #issuer-name')).to.equal(null);
      expect(await tab.page.evaluate((secret) => document.documentElement.outerHTML.includes(secret), SECRET)).to.equal(false);
      await tab.page.click('xpath/.//dialog[@open]//button[text()="Cancel"]');
      await dialogClosed();

      // Replaced whole: the key set's issuer becomes a discovery document's, with one audience.
      await tab.page.click('button[aria-label="Edit issuer app"]');
      await tab.page.waitForSelector('dialog[open] #issuer-key[type="url"]');
      expect(await tab.page.$eval('#issuer-key', (input) => (input as HTMLInputElement).value)).to.equal(
        'https://auth.example/.well-known/jwks.json',
      );
      expect(await tab.page.$eval('#issuer-audiences', (input) => (input as HTMLInputElement).value)).to.equal('notes, admin');
      await saveIssuer({
        issuer: 'https://id.example/',
        audiences: 'notes',
        source: 'discovery_url',
        key: 'https://id.example/.well-known/openid-configuration',
      });
      await noted('The issuer app is replaced.');
      await tab.page.waitForFunction(() => document.querySelector('tr[data-issuer="app"] .iss')?.textContent === 'https://id.example/');
      expect(await cells('app')).to.deep.equal([
        'app',
        'https://id.example/',
        'notes',
        'discovery at https://id.example/.well-known/openid-configuration',
      ]);
      expect((await issuers())[0]).to.deep.include({
        name: 'app',
        issuer: 'https://id.example/',
        audiences: ['notes'],
        key_source: 'discovery_url',
        jwks_uri: null,
        discovery_url: 'https://id.example/.well-known/openid-configuration',
      });
      await tab.page.screenshot({ path: `${screenshots}issuers-1280x800.png` });

      // Deleted after a second button.
      await tab.page.click('button[aria-label="Delete issuer app…"]');
      await tab.page.click('xpath/.//button[text()="Delete issuer app"]');
      await noted('The issuer app is deleted: its tokens are refused from now on.');
      await tab.page.waitForFunction(() => !document.querySelector('tr[data-issuer="app"]'));
      expect((await issuers()).map(({ name }) => name)).to.deep.equal(['backend']);
      expect(await tab.page.evaluate((secret) => document.documentElement.outerHTML.includes(secret), SECRET)).to.equal(false);
      await tab.page.setViewport({ width: 390, height: 844 });
      expect(await tab.page.evaluate(() => document.documentElement.scrollWidth)).to.be.at.most(390);
      await tab.page.screenshot({ path: `${screenshots}issuers-390x844.png`, fullPage: true });
      expect((await admin.delete('/v1/auth/issuers/backend')).status).to.equal(204);
    });
  });

  describe('a key that may not manage them', () => {
    it('tells a read key plainly that rules and issuers are an admin key’s', async () => {
      const name = await makeNotes(rules);
      const reader = await server.client('rules-person', TEST_PLAN, { scope: 'read' });
      await signIn(reader.key);
      await openRules(name);
      expect(await text('details.rules .refused')).to.equal(
        "Only an admin key may see and change the collection's rules, and this key is not one.",
      );
      expect(await text('details.rules .hint')).to.match(/^The service answered 403: .*needs admin/);
      expect(await tab.page.$('details.rules .rules-json')).to.equal(null);
      expect(await tab.page.$('#preview-claims')).to.equal(null);

      await openIssuers();
      const refusal = await tab.page.waitForSelector('.issuers .refused');
      expect(await refusal?.evaluate((line) => line.textContent)).to.equal(
        "Only an admin key of every collection may see and manage the account's token issuers, and this key is not one.",
      );
      expect(await text('.issuers .hint')).to.match(/^The service answered 403: /);
      expect(await tab.page.$('.issuer-table')).to.equal(null);
      expect(await tab.page.$('xpath/.//button[text()="Add an issuer…"]')).to.equal(null);
      tab.watched.expectRefusals(403);
    });

    it('tells an admin key limited to collections that issuers are an admin key of every collection’s', async () => {
      const name = await makeNotes(rules);
      const limited = await server.client('rules-person', TEST_PLAN, { scope: 'admin', collections: [name] });
      await signIn(limited.key);
      // Its collection's rules are its own to manage.
      await openRules(name);
      expect(JSON.parse(await text('.rules-json'))).to.deep.equal(rules);
      await openIssuers();
      await tab.page.waitForSelector('.issuers .refused');
      expect(await text('.issuers .hint')).to.match(/^The service answered 403: /);
      tab.watched.expectRefusals(403);
    });
  });
});
