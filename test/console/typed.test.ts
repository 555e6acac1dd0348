// The web console (src/console/) on collections with a schema and unique indexes (docs/schemas.md), in a
// real headless Chromium against the real server: it shows a collection's schema and indexes, edits and
// inserts rows in a form of inputs by type, shows a refused row's errors (422 row_invalid) and a unique
// violation (409) at their fields with nothing written, and lets an admin key, and no other, set and
// remove a schema and declare and drop indexes. Every response the page sees is checked against
// openapi.yaml (support/browser.ts), and no test ends with a console error on the page but the refusals
// it makes happen. Screenshots are written to tmp/console-screenshots/ for review.
import { mkdir } from 'node:fs/promises';
import { expect } from 'chai';
import type { Browser, Page } from 'puppeteer-core';
import { fillInput, launchBrowser, skipWithoutChromium, type WatchedPage, watchedPage } from '../support/browser.ts';
import type { Client } from '../support/client.ts';
import { startTestServer, TEST_PLAN, type TestServer } from '../support/server.ts';

const screenshots = new URL('../../tmp/console-screenshots/', import.meta.url).pathname;

type Row = { id: number; [field: string]: unknown };

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
    skipWithoutChromium(this);
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

  afterEach(() => watched.finish());

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
    // The line is there from the start, busy until the schema and indexes are read.
    await page.waitForSelector('details.typing:not([aria-busy])');
  }

  /** Opens the schema and indexes. */
  async function showTyping() {
    await page.click('details.typing summary');
    await page.waitForSelector('details.typing[open] #schema-title');
  }

  async function openRow(id: number) {
    await page.click(`button[aria-label="Open row ${id}"]`);
    await page.waitForSelector('dialog[open] .row-form');
  }

  /** The input of the form's field `name`. */
  const field = (name: string) => `dialog[open] .row-form [name="${name}"]`;

  const fill = (selector: string, value: string) => fillInput(page, selector, value);

  /** What the form says is wrong with field `name` (its error, which the input is described by). */
  const fieldError = (name: string) => page.$eval(field(name), (input) => document.getElementById(`${input.id}-error`)?.textContent ?? '');

  /** The body of every PATCH the page sends from now on, with its If-Match. */
  function watchPatches() {
    const patches: { body: unknown; ifMatch?: string }[] = [];
    page.on('request', (request) => {
      if (request.method() !== 'PATCH') return;
      patches.push({ body: JSON.parse(request.postData() ?? 'null'), ifMatch: request.headers()['if-match'] });
    });
    return patches;
  }

  const dialogClosed = () => page.waitForFunction(() => !document.querySelector('dialog[open]'));

  it('shows a collection’s schema and indexes, and edits a row in a form of inputs by type, sending what changed', async () => {
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

    const patches = watchPatches();
    await openRow(1);
    // The form is shown first, each field in an input of its type, holding the row's value.
    expect(await page.$eval('dialog[open] .view-switch [aria-pressed="true"]', (button) => button.textContent)).to.equal('Form');
    const inputs = await page.$$eval('dialog[open] .row-form [name]', (elements) =>
      elements.map((element) => {
        const input = element as HTMLInputElement;
        return [input.name, input.tagName.toLowerCase(), input.type, input.type === 'checkbox' ? String(input.checked) : input.value];
      }),
    );
    expect(inputs).to.deep.equal([
      ['name', 'input', 'text', 'Ada'],
      ['email', 'input', 'email', 'ada@example.com'],
      ['age', 'input', 'number', '36'],
      ['active', 'input', 'checkbox', 'true'],
      ['role', 'select', 'select-one', '0'],
      ['joined', 'input', 'date', '2024-02-29'],
      ['tags', 'textarea', 'textarea', JSON.stringify(['math'], null, 2)],
    ]);
    expect(await page.$$eval(`${field('role')} option`, (options) => options.map((option) => option.textContent))).to.deep.equal([
      'admin',
      'editor',
      'viewer',
    ]);
    // Every input is named for a screen reader, by its label, and described by what it takes.
    const tree = await page.accessibility.snapshot({ interestingOnly: true });
    const unnamed: string[] = [];
    const walk = (node: { role: string; name?: string; children?: unknown[] } | null) => {
      if (!node) return;
      if (['button', 'textbox', 'checkbox', 'combobox', 'spinbutton', 'link'].includes(node.role) && !node.name?.trim()) {
        unnamed.push(node.role);
      }
      for (const child of node.children ?? []) walk(child as typeof node);
    };
    walk(tree as never);
    expect(unnamed).to.deep.equal([]);
    expect(await page.$eval(field('age'), (input) => document.getElementById(`${input.id}-hint`)?.textContent)).to.equal(
      'integer, at least 0',
    );

    await fill(field('age'), '37');
    await page.select(field('role'), '1');
    await page.click(field('active'));
    await page.click('dialog[open] button[type=submit]');
    await dialogClosed();
    expect((await admin.get<Row>('/v1/collections/people/rows/1')).body).to.deep.equal({
      id: 1,
      ...people[0],
      age: 37,
      active: false,
      role: 'editor',
    });
    expect(patches).to.have.length(1);
    expect(patches[0].body).to.deep.equal({ age: 37, active: false, role: 'editor' });
    expect(patches[0].ifMatch).to.be.a('string');
    await page.waitForFunction(() => document.querySelector('tbody tr[data-id="1"]')?.textContent?.includes('editor'));

    // At 390 px: a field the schema does not declare is named, to be edited as JSON; the JSON view and
    // the form hold one draft.
    await page.setViewport({ width: 390, height: 844 });
    await openRow(2);
    expect(await page.$eval('dialog[open] .row-form', (form) => form.textContent)).to.include('Not in the schema, to edit as JSON: note.');
    expect(await page.$eval(field('role'), (select) => (select as HTMLSelectElement).selectedOptions[0]?.textContent)).to.equal('viewer');
    // A field the row lacks is an empty input.
    expect(await page.$eval(field('joined'), (input) => (input as HTMLInputElement).value)).to.equal('');
    await fill(field('age'), '42');
    await page.screenshot({ path: `${screenshots}typed-form-390x844.png`, fullPage: true });
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).to.be.at.most(390);
    await page.click('xpath/.//dialog[@open]//div[@class="view-switch"]/button[text()="JSON"]');
    const json = await page.waitForSelector('dialog[open] #row-json');
    const drafted = JSON.parse((await json?.evaluate((area) => (area as HTMLTextAreaElement).value)) as string);
    expect(drafted).to.deep.equal({ id: 2, ...people[1], age: 42 });
    await fill('#row-json', JSON.stringify({ ...drafted, note: 'edited as JSON' }));
    await page.click('xpath/.//dialog[@open]//div[@class="view-switch"]/button[text()="Form"]');
    await page.waitForSelector(field('age'));
    expect(await page.$eval(field('age'), (input) => (input as HTMLInputElement).value)).to.equal('42');
    await page.click('dialog[open] button[type=submit]');
    await dialogClosed();
    expect(patches.at(-1)?.body).to.deep.equal({ age: 42, note: 'edited as JSON' });
    expect((await admin.get<Row>('/v1/collections/people/rows/2')).body).to.deep.equal({
      id: 2,
      ...people[1],
      age: 42,
      note: 'edited as JSON',
    });
    await page.setViewport({ width: 1280, height: 800 });
    await page.screenshot({ path: `${screenshots}typed-1280x800.png` });
  });

  it('shows a refused row’s errors at their fields, the first focused, and writes nothing', async () => {
    await makePeople('refusing');
    await signIn();
    await openCollection('refusing');
    const patches = watchPatches();
    await openRow(1);

    // A field that is no JSON is said before anything is sent.
    await fill(field('tags'), '["math",');
    await page.click('dialog[open] button[type=submit]');
    await page.waitForFunction((selector) => document.querySelector(selector)?.getAttribute('aria-invalid') === 'true', {}, field('tags'));
    expect(await fieldError('tags')).to.match(/^is not JSON: /);
    expect(patches).to.deep.equal([]);

    await fill(field('name'), '');
    await fill(field('age'), '-1');
    await fill(field('tags'), '["math", 3]');
    await page.click('dialog[open] button[type=submit]');
    await page.waitForFunction((selector) => document.querySelector(selector)?.getAttribute('aria-invalid') === 'true', {}, field('age'));
    expect(patches.map((patch) => patch.body)).to.deep.equal([{ name: '', age: -1, tags: ['math', 3] }]);
    expect(await fieldError('name')).to.match(/\w/);
    expect(await fieldError('age')).to.equal('must be at least 0');
    // An error inside a field's value is shown at the field, with its whole pointer.
    expect(await fieldError('tags')).to.match(/^\/tags\/1: /);
    expect(await fieldError('email')).to.equal('');
    expect(await page.$eval(field('email'), (input) => input.getAttribute('aria-invalid'))).to.equal('false');
    expect(await page.$eval('dialog[open] .problems', (area) => area.textContent)).to.include('breaks the schema');
    // The first field found wrong has the focus, and is described by what is wrong with it.
    expect(await page.evaluate(() => (document.activeElement as HTMLInputElement | null)?.name)).to.equal('name');
    expect((await admin.get<Row>('/v1/collections/refusing/rows/1')).body).to.deep.equal({ id: 1, ...people[0] });
    watched.expectRefusals(422);
    await page.screenshot({ path: `${screenshots}typed-refused-1280x800.png` });
  });

  it('shows a unique violation at the index’s fields, naming the row that holds the value, in the editor and in an insert', async () => {
    await makePeople('unique');
    await signIn();
    await openCollection('unique');
    await openRow(2);
    await fill(field('email'), 'ada@example.com');
    await page.click('dialog[open] button[type=submit]');
    await page.waitForFunction((selector) => document.querySelector(selector)?.getAttribute('aria-invalid') === 'true', {}, field('email'));
    expect(await fieldError('email')).to.equal('row 1 holds this value already (unique index email)');
    expect((await admin.get<Row>('/v1/collections/unique/rows/2')).body).to.deep.equal({ id: 2, ...people[1] });
    await page.click('xpath/.//dialog[@open]//button[text()="Cancel"]');
    await dialogClosed();

    // Inserting into a typed collection starts from the form: one row, each input empty.
    await page.click('xpath/.//button[text()="Insert rows"]');
    await page.waitForSelector('dialog[open] .row-form');
    await fill(field('name'), 'Grace');
    await fill(field('email'), 'alan@example.com');
    await page.select(field('role'), '2');
    await page.click('dialog[open] button[type=submit]');
    await page.waitForFunction((selector) => document.querySelector(selector)?.getAttribute('aria-invalid') === 'true', {}, field('email'));
    expect(await fieldError('email')).to.equal('row 2 holds this value already (unique index email)');
    expect((await admin.get<Row[]>('/v1/collections/unique/rows')).body).to.have.length(2);
    watched.expectRefusals(409);

    await fill(field('email'), 'grace@example.com');
    await fill(field('joined'), '2024-12-09');
    await page.click('dialog[open] button[type=submit]');
    await dialogClosed();
    // An unchecked box is false in a new row; an input left empty leaves its field out.
    expect((await admin.get<Row>('/v1/collections/unique/rows/3')).body).to.deep.equal({
      id: 3,
      name: 'Grace',
      email: 'grace@example.com',
      active: false,
      role: 'viewer',
      joined: '2024-12-09',
    });
    await page.waitForSelector('tbody tr[data-id="3"]');
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
    watched.expectRefusals(409);

    // A schema the service refuses: each place in it that is wrong.
    await setSchema({ type: 'object', properties: { n: { contains: {} } } });
    await page.waitForFunction(() =>
      document.querySelector('dialog[open] .problems li')?.textContent?.startsWith('/properties/n/contains'),
    );
    watched.expectRefusals(400);

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
    watched.expectRefusals(409);
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
    watched.expectRefusals(403);
  });
});
