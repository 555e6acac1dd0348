// The web console (GET /console, src/console/) in a real headless Chromium, against the real server: a
// person signs in with a key, makes a collection, inserts, filters, sorts, edits and deletes rows, and
// watches another client's changes arrive live; by keyboard alone, too. Every response the page sees is
// checked against openapi.yaml and every feed message against asyncapi.yaml (support/browser.ts), and
// no test ends with a console error or a Content-Security-Policy violation on the page. Screenshots at
// 1280×800 and 390×844 are written to tmp/console-screenshots/ for review.
import { mkdir } from 'node:fs/promises';
import { expect } from 'chai';
import type { Browser, Page } from 'puppeteer-core';
import { compileFilter } from '../../src/query/evaluate.ts';
import { parseFilter } from '../../src/query/filter.ts';
import { createDatabase } from '../support/backends.ts';
import { launchBrowser, skipWithoutChromium, type WatchedPage, watchedPage } from '../support/browser.ts';
import { Client } from '../support/client.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

const screenshots = new URL('../../tmp/console-screenshots/', import.meta.url).pathname;

type Row = { id: number; [field: string]: unknown };

const notes = [
  { text: 'buy milk', n: 3, done: false },
  { text: 'call Ada', n: 7, done: true },
  { text: 'write tests', n: 5, done: false, tags: ['work'] },
  { text: 'fix bike', n: 1 },
  { text: 'plan trip', n: 9, done: false },
];

describe('the web console, in Chromium', function () {
  this.timeout(120_000);
  let server: TestServer;
  let browser: Browser;
  let client: Client;
  let watched: WatchedPage;
  let page: Page;

  before(async function () {
    skipWithoutChromium(this);
    await mkdir(screenshots, { recursive: true });
    server = await startTestServer();
    client = await server.client('console-person');
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

  /** The text of every cell of the rows' table's column `field`, top to bottom (the indexes' table is another). */
  async function cells(field: string): Promise<string[]> {
    const headers = await page.$$eval('.table-scroll thead th', (ths) =>
      ths.map((th) => th.textContent?.replace(/[▲▼]/g, '').trim() ?? ''),
    );
    const index = headers.indexOf(field);
    expect(index, `column ${field} among ${headers.join(', ')}`).to.be.at.least(0);
    return page.$$eval('.table-scroll tbody tr', (rows, at) => rows.map((row) => row.children[at as number]?.textContent ?? ''), index);
  }

  const ids = async () => (await cells('id')).map(Number);

  /** Waits until the table's ids are `expected`, in order. */
  async function waitForIds(expected: number[]) {
    await page.waitForFunction(
      (want) =>
        JSON.stringify([...document.querySelectorAll('.table-scroll tbody tr')].map((row) => Number(row.getAttribute('data-id')))) === want,
      { timeout: 10_000 },
      JSON.stringify(expected),
    );
  }

  /** Signs in on `at`'s console with `key`; waits for the console unless the key is expected to be refused. */
  async function signIn(key: string | undefined = client.key, { at = server, refused = false } = {}) {
    await page.goto(`${at.url}/console`);
    await page.type('#key', key as string);
    await page.click('.sign-in-form button[type=submit]');
    if (!refused) await page.waitForSelector('#new-collection');
  }

  async function openCollection(name: string) {
    const button = await page.waitForSelector(`xpath/.//nav//li/button[span[1][text()="${name}"]]`);
    await button?.click();
    await page.waitForSelector(`xpath/.//h2[@id="collection-title"][text()="${name}"]`);
  }

  async function applyFilter(filter: string, select = '') {
    await page.$eval(
      '#filter',
      (input, value) => {
        (input as HTMLInputElement).value = value as string;
      },
      filter,
    );
    await page.$eval(
      '#select',
      (input, value) => {
        (input as HTMLInputElement).value = value as string;
      },
      select,
    );
    await page.click('.controls button[type=submit]');
  }

  /** Makes collection `name` of 60 rows (`n` from 60 down to 1), signs in and opens it: rows 1–25 shown. */
  async function openSixtyRows(name: string) {
    await client.post('/v1/collections', { name });
    await client.post(
      `/v1/collections/${name}/rows`,
      Array.from({ length: 60 }, (_, i) => ({ n: 60 - i })),
    );
    await signIn();
    await openCollection(name);
    await waitForIds(Array.from({ length: 25 }, (_, i) => i + 1));
  }

  /** The rows of the collection that `filter` keeps, as the server's own rules say (src/query/evaluate.ts). */
  async function expectedIds(collection: string, filter: object): Promise<number[]> {
    const { body } = await client.get<Row[]>(`/v1/collections/${collection}/rows?limit=1000`);
    const test = compileFilter(parseFilter(filter));
    return body.filter((row) => test(row)).map((row) => row.id);
  }

  it('refuses a wrong key plainly, and signs in with a good one', async () => {
    await signIn('rb_thisIsNotAKeyOfAnyoneAtAll00000', { refused: true });
    const refusal = await page.waitForSelector('.sign-in-form .error:not(:empty)');
    expect(await refusal?.evaluate((node) => node.textContent)).to.match(/^This key was refused: .*key/i);
    // A refused key is the page's expected answer, not an error of the page: the browser logs its 401.
    watched.expectRefusals(401);

    await page.$eval('#key', (input) => {
      (input as HTMLInputElement).value = '';
    });
    await page.type('#key', client.key as string);
    await page.click('.sign-in-form button[type=submit]');
    await page.waitForSelector('header.top');
    expect(await page.evaluate(() => sessionStorage.getItem('rowbase.key'))).to.equal(client.key);
  });

  it('creates a collection, inserts rows, filters, selects and sorts them, edits and deletes one', async () => {
    await signIn();
    await page.type('#new-collection', 'notes');
    await page.click('.create button[type=submit]');
    await page.waitForSelector('xpath/.//h2[@id="collection-title"][text()="notes"]');

    await page.click('xpath/.//button[text()="Insert rows"]');
    await page.waitForSelector('dialog[open] #insert-rows');
    await page.$eval(
      '#insert-rows',
      (area, text) => {
        (area as HTMLTextAreaElement).value = text as string;
      },
      JSON.stringify(notes),
    );
    await page.click('dialog[open] button[type=submit]');
    await waitForIds([1, 2, 3, 4, 5]);
    expect(await page.$eval('caption', (caption) => caption.textContent)).to.equal('Rows 1–5 of 5');
    expect(await cells('text')).to.deep.equal(notes.map((note) => note.text));
    // A field a row lacks is an empty cell, not "null".
    expect((await cells('tags'))[0]).to.equal('');
    expect((await cells('tags'))[2]).to.equal('["work"]');

    // A filter the language refuses is shown next to the box, with where it is wrong.
    await applyFilter('{"n": {"$between": [1, 2]}}');
    const refused = await page.waitForSelector('#filter-error:not(:empty)');
    expect(await refused?.evaluate((node) => node.textContent)).to.include('/n/$between');
    expect(await page.$eval('#filter', (input) => input.getAttribute('aria-invalid'))).to.equal('true');
    watched.expectRefusals(400);

    const filter = { $or: [{ n: { $gte: 5 } }, { done: { $exists: false } }] };
    await applyFilter(JSON.stringify(filter));
    await waitForIds(await expectedIds('notes', filter));
    expect(await page.$eval('caption', (caption) => caption.textContent)).to.equal('Rows 1–4 of 4 matching the filter');

    // Sorting by a column, ascending then descending, keeps the filter.
    await page.click('xpath/.//th/button[starts-with(text(), "n")]');
    // The id column is ascending until then: wait for n's own header.
    await page.waitForSelector('xpath/.//th[@aria-sort="ascending"][button[starts-with(text(), "n")]]');
    expect(await cells('n')).to.deep.equal(['1', '5', '7', '9']);
    await page.click('xpath/.//th/button[starts-with(text(), "n")]');
    await page.waitForSelector('xpath/.//th[@aria-sort="descending"][button[starts-with(text(), "n")]]');
    expect(await cells('n')).to.deep.equal(['9', '7', '5', '1']);

    await applyFilter('', 'text');
    await page.waitForFunction(() => document.querySelectorAll('thead th').length === 3);
    expect(await page.$$eval('thead th', (ths) => ths.map((th) => th.textContent?.replace(/[▲▼]/g, '').trim()))).to.deep.equal([
      'id',
      'text',
      'Actions',
    ]);
    await applyFilter('', '');
    // Every field's column again, and every row: the row buttons move as the table is drawn anew.
    await page.waitForFunction(
      () => document.querySelectorAll('thead th').length === 6 && document.querySelectorAll('tbody tr').length === 5,
    );

    // Edit row 2 as JSON: only the field that changed is sent.
    await page.click('button[aria-label="Open row 2"]');
    const editor = await page.waitForSelector('dialog[open] #row-json');
    const shown = JSON.parse((await editor?.evaluate((area) => (area as HTMLTextAreaElement).value)) as string);
    expect(shown).to.deep.equal({ id: 2, ...notes[1] });
    await editor?.evaluate((area) => {
      const row = JSON.parse((area as HTMLTextAreaElement).value);
      (area as HTMLTextAreaElement).value = JSON.stringify({ ...row, text: 'called Ada' });
    });
    await page.click('dialog[open] button[type=submit]');
    await page.waitForFunction(() => !document.querySelector('dialog[open]'));
    expect((await client.get<Row>('/v1/collections/notes/rows/2')).body).to.deep.equal({ id: 2, ...notes[1], text: 'called Ada' });
    await page.waitForFunction(() => document.querySelector('tbody tr[data-id="2"]')?.textContent?.includes('called Ada'));

    // A row changed by another client since it was opened is not overwritten: the save is refused (412)
    // and said plainly.
    await page.click('button[aria-label="Open row 4"]');
    await page.waitForSelector('dialog[open] #row-json');
    await client.patch('/v1/collections/notes/rows/4', { n: 11 });
    await page.$eval('#row-json', (area) => {
      const row = JSON.parse((area as HTMLTextAreaElement).value);
      (area as HTMLTextAreaElement).value = JSON.stringify({ ...row, text: 'fix car' });
    });
    await page.click('dialog[open] button[type=submit]');
    const conflict = await page.waitForSelector('dialog[open] .error:not(:empty)');
    expect(await conflict?.evaluate((node) => node.textContent)).to.include('changed by someone else');
    expect((await client.get<Row>('/v1/collections/notes/rows/4')).body).to.deep.equal({ id: 4, ...notes[3], n: 11 });
    watched.expectRefusals(412);
    await page.click('xpath/.//dialog[@open]//button[text()="Cancel"]');
    await page.waitForFunction(() => !document.querySelector('dialog[open]'));

    // Removing a field is refused in the editor, before anything is sent.
    await page.click('button[aria-label="Open row 3"]');
    await page.waitForSelector('dialog[open] #row-json');
    await page.$eval('#row-json', (area) => {
      (area as HTMLTextAreaElement).value = JSON.stringify({ id: 3, text: 'write tests', n: 5, done: false });
    });
    await page.click('dialog[open] button[type=submit]');
    const why = await page.waitForSelector('dialog[open] .error:not(:empty)');
    expect(await why?.evaluate((node) => node.textContent))
      .to.include('cannot be removed')
      .and.include('tags');

    // Delete row 3: a second, named button confirms.
    await page.click('xpath/.//dialog[@open]//button[text()="Delete…"]');
    await page.click('xpath/.//dialog[@open]//button[text()="Delete row 3"]');
    // Still sorted by n, descending (row 4's n is 11 now).
    await waitForIds([4, 5, 2, 1]);
    expect((await client.get('/v1/collections/notes/rows/3')).status).to.equal(404);

    await page.screenshot({ path: `${screenshots}rows-1280x800.png` });
    await page.setViewport({ width: 390, height: 844 });
    await page.screenshot({ path: `${screenshots}rows-390x844.png`, fullPage: true });
    // At 390 px the page fits its width: the table scrolls inside its own box.
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).to.be.at.most(390);
  });

  it('pages by cursor: Next follows the Link of a full page, Previous goes back, the count stays', async () => {
    await openSixtyRows('many');
    const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);
    const caption = () => page.$eval('caption', (node) => node.textContent);
    expect(await caption()).to.equal('Rows 1–25 of 60');

    /** Clicks `button` and answers the address of the page read for it. */
    const click = async (button: string) => {
      const [response] = await Promise.all([
        page.waitForResponse((answer) => new URL(answer.url()).pathname === '/v1/collections/many/rows'),
        page.click(`xpath/.//nav[@aria-label="Pages"]/button[text()="${button}"]`),
      ]);
      return new URL(response.url());
    };
    const second = await click('Next');
    expect(second.searchParams.get('after')).to.be.a('string');
    expect(second.searchParams.has('offset')).to.equal(false);
    await waitForIds(range(26, 50));
    expect(await caption()).to.equal('Rows 26–50 of 60');
    await click('Next');
    await waitForIds(range(51, 60));
    expect(await caption()).to.equal('Rows 51–60 of 60');
    expect(
      await page.$eval('xpath/.//nav[@aria-label="Pages"]/button[text()="Next"]', (button) => (button as HTMLButtonElement).disabled),
    ).to.equal(true);
    expect((await click('Previous')).searchParams.get('after')).to.equal(second.searchParams.get('after'));
    await waitForIds(range(26, 50));
    await click('Previous');
    await waitForIds(range(1, 25));
    expect(
      await page.$eval('xpath/.//nav[@aria-label="Pages"]/button[text()="Previous"]', (button) => (button as HTMLButtonElement).disabled),
    ).to.equal(true);
  });

  it('shows the page asked for last, though a page asked for before it is answered after it', async () => {
    await openSixtyRows('overtaken');
    // The browser holds the read of the next page until the filtered page, asked for after it, is shown.
    await page.setRequestInterception(true);
    let releaseNext: (() => void) | undefined;
    const nextHeld = new Promise<void>((resolve) => {
      page.on('request', (request) => {
        const url = new URL(request.url());
        if (releaseNext || !url.pathname.endsWith('/collections/overtaken/rows') || !url.searchParams.has('after'))
          return void request.continue();
        releaseNext = () => void request.continue();
        resolve();
      });
    });
    await page.click('xpath/.//nav[@aria-label="Pages"]/button[text()="Next"]');
    await nextHeld;
    await applyFilter('{"n": {"$lte": 3}}');
    await waitForIds([58, 59, 60]);
    releaseNext?.();
    // The next page's answer has reached the page (its resource timing is written once its body is read),
    // and the page has drawn twice since.
    await page.waitForFunction(() =>
      performance
        .getEntriesByType('resource')
        .some((entry) => entry.name.includes('/collections/overtaken/rows?') && entry.name.includes('after=')),
    );
    await page.evaluate(() => new Promise((drawn) => requestAnimationFrame(() => requestAnimationFrame(drawn))));
    expect(await ids()).to.deep.equal([58, 59, 60]);
    expect(await page.$eval('caption', (node) => node.textContent)).to.equal('Rows 1–3 of 3 matching the filter');
    expect(await page.$eval('section.rows table', (table) => table.getAttribute('aria-busy'))).to.equal('false');
  });

  it('searches a collection with a search index from its search box, the most relevant rows first', async () => {
    await client.post('/v1/collections', { name: 'articles' });
    await client.post('/v1/collections/articles/rows', [
      { title: 'A red car among many other words', n: 1 },
      { title: 'Red red red', n: 2 },
      { title: 'Blue shoes', n: 1 },
      { title: 'Red shoes', n: 1 },
    ]);
    await client.post('/v1/collections', { name: 'unsearched' });
    await signIn();
    await openCollection('unsearched');
    await page.waitForSelector('#filter');
    expect(await page.$('#search')).to.equal(null);
    await client.post('/v1/collections/articles/indexes', { type: 'search', fields: ['title'] });
    await openCollection('articles');
    await page.waitForSelector('#search');
    /** The ids the API ranks for `filter`, most relevant first. */
    const ranked = async (filter: object) => {
      const query = `order_by=_score&filter=${encodeURIComponent(JSON.stringify(filter))}`;
      return (await client.get<Row[]>(`/v1/collections/articles/rows?${query}`)).body.map((row) => row.id);
    };
    // Typed whole before the click: typing beside it once sent the search at `re` (seen in CI).
    await page.type('#search', 'red');
    const [read] = await Promise.all([
      page.waitForResponse((answer) => new URL(answer.url()).pathname === '/v1/collections/articles/rows'),
      page.click('.controls button[type=submit]'),
    ]);
    const asked = new URL(read.url()).searchParams;
    expect(asked.get('order_by')).to.equal('_score');
    expect(JSON.parse(asked.get('filter') as string)).to.deep.equal({ $search: 'red' });
    const expected = await ranked({ $search: 'red' });
    expect(expected).to.have.members([1, 2, 4]);
    await waitForIds(expected);
    expect(await page.$eval('caption', (node) => node.textContent)).to.equal('Rows 1–3 of 3 matching the search');
    // Beside a filter, with the score shown.
    await applyFilter('{"n": 1}', 'title,_score');
    await waitForIds(await ranked({ $and: [{ $search: 'red' }, { n: 1 }] }));
    const scores = (await cells('_score')).map(Number);
    expect(scores).to.have.length(2);
    expect(scores[0]).to.be.at.least(scores[1] as number);
    await page.screenshot({ path: `${screenshots}search-1280.png` });
    // The search cleared: every row, by id.
    await page.$eval('#search', (input) => {
      (input as HTMLInputElement).value = '';
    });
    await applyFilter('', '');
    await waitForIds([1, 2, 3, 4]);
  });

  it('groups the rows under the filter in the group by panel: counted, summed, a refused field named', async () => {
    await client.post('/v1/collections', { name: 'tasks' });
    await client.post('/v1/collections/tasks/rows', [
      { status: 'open', points: 0.1 },
      { status: 'open', points: 0.2 },
      { status: 'done', points: 3 },
      { points: 'many' },
      { status: 'open', points: 4, hidden: true },
    ]);
    await signIn();
    await openCollection('tasks');
    await applyFilter('{"hidden": {"$exists": false}}');
    await waitForIds([1, 2, 3, 4]);
    await page.type('#group-by', 'status');
    await page.type('#measure', 'points');
    await page.click('.groups button[type=submit]');
    await page.waitForSelector('.group-table');
    const table = () =>
      page.$$eval('.group-table tr', (rows) => rows.map((row) => [...row.children].map((cell) => cell.textContent ?? '')));
    expect(await page.$eval('.group-table caption', (caption) => caption.textContent)).to.equal('3 groups of the rows matching the filter');
    expect(await table()).to.deep.equal([
      ['status', 'rows', 'sum', 'avg', 'min', 'max'],
      ['open', '2', '0.3', '0.15', '0.1', '0.2'],
      ['done', '1', '3', '3', '3', '3'],
      ['null', '1', 'null', 'null', 'many', 'many'],
    ]);
    // A group field that is no plain name is refused, and the panel says where.
    await page.$eval('#group-by', (input) => {
      (input as HTMLInputElement).value = 'a.b';
    });
    await page.click('.groups button[type=submit]');
    const refused = await page.waitForSelector('#groups-error:not(:empty)');
    expect(await refused?.evaluate((node) => node.textContent)).to.include('/group_by/0');
    watched.expectRefusals(400);
    await page.screenshot({ path: `${screenshots}group-by.png` });
  });

  it('applies another client’s changes live under the filter, and lists them with their seq', async () => {
    await client.post('/v1/collections', { name: 'live' });
    await client.post('/v1/collections/live/rows', notes);
    await signIn();
    await openCollection('live');
    const filter = { n: { $gte: 5 } };
    await applyFilter(JSON.stringify(filter));
    await waitForIds([2, 3, 5]);
    await page.click('.toggle input');
    await page.waitForFunction(() => document.querySelector('.feed-state')?.textContent === 'Receiving changes');

    // A matching insert appears; one that does not match does not.
    await client.post('/v1/collections/live/rows', [
      { text: 'late', n: 8 },
      { text: 'small', n: 2 },
    ]);
    await waitForIds([2, 3, 5, 6]);
    // A change that takes a row out of the filter takes it off the table; one into it brings it.
    await client.patch('/v1/collections/live/rows/3', { n: 4 });
    await waitForIds([2, 5, 6]);
    await client.patch('/v1/collections/live/rows/7', { n: 50 });
    await waitForIds([2, 5, 6, 7]);
    await client.delete('/v1/collections/live/rows/2');
    await waitForIds([5, 6, 7]);
    expect(await page.$eval('caption', (caption) => caption.textContent)).to.equal('Rows 1–3 of 3 matching the filter');
    expect(await ids()).to.deep.equal(await expectedIds('live', filter));

    // The panel lists the changes the filter lets through, newest first, by seq: the feed is subscribed
    // with the view's filter, so the insert of row 7 (seq 7, n 2) never came, and row 3's update that
    // took it out came marked `matches: false`.
    const listed = await page.$$eval('aside li', (items) => items.map((item) => item.textContent));
    expect(listed).to.deep.equal(['#10 delete row 2', '#9 update row 7', '#8 update row 3', '#6 insert row 6']);
    expect(watched.feedUrls.every((url) => new URL(url).searchParams.get('filter') === JSON.stringify(filter))).to.equal(true);
    const messages = watched.feedMessages.map((text) => JSON.parse(text));
    expect(messages.find((message) => message.seq === 8)).to.include({ type: 'update', matches: false });
    expect(messages.map((message) => message.type)).to.deep.equal(['ready', 'insert', 'update', 'update', 'delete']);
    await page.screenshot({ path: `${screenshots}live-1280x800.png` });
  });

  it('opens the live view from the page it read, though Live was turned on before the page came', async () => {
    await client.post('/v1/collections', { name: 'early' });
    await client.post('/v1/collections/early/rows', [{ n: 1 }, { n: 2 }]);
    await signIn();
    // The browser holds the page's first read until Live is on; every other request goes as sent.
    await page.setRequestInterception(true);
    let releaseRead: (() => void) | undefined;
    const readHeld = new Promise<void>((resolve) => {
      page.on('request', (request) => {
        if (releaseRead || !new URL(request.url()).pathname.endsWith('/collections/early/rows')) return void request.continue();
        releaseRead = () => void request.continue();
        resolve();
      });
    });
    await openCollection('early');
    await readHeld;
    await page.click('.toggle input');
    releaseRead?.();
    await waitForIds([1, 2]);
    await page.waitForFunction(() => document.querySelector('.feed-state')?.textContent === 'Receiving changes');
    await client.post('/v1/collections/early/rows', [{ n: 3 }]);
    await waitForIds([1, 2, 3]);
    // One socket, from the page's seq: the rows the page read came once, by the read, not again by the feed.
    expect(watched.feedUrls.map((url) => new URL(url).searchParams.get('since'))).to.deep.equal(['2']);
    const inserts = watched.feedMessages.map((text) => JSON.parse(text)).filter((message) => message.type === 'insert');
    expect(inserts.map((message) => message.seq)).to.deep.equal([3]);
    expect(await page.$$eval('aside li', (items) => items.map((item) => item.textContent))).to.deep.equal(['#3 insert row 3']);
  });

  it('resumes the live view after the server restarts, missing no change made while it was down', async () => {
    // A server of this test's own, stopped and started again on the same port and database.
    const database = await createDatabase('sqlite');
    const first = await startTestServer({}, { database });
    let second: TestServer | undefined;
    // Closed and dropped whatever fails: a server left listening would keep mocha's process alive.
    try {
      const own = await first.client('restarting');
      await own.post('/v1/collections', { name: 'resume' });
      await own.post('/v1/collections/resume/rows', [{ n: 1 }]);
      await signIn(own.key, { at: first });
      await openCollection('resume');
      await page.click('.toggle input');
      await page.waitForFunction(() => document.querySelector('.feed-state')?.textContent === 'Receiving changes');

      await first.close();
      await page.waitForFunction(() => document.querySelector('.feed-state')?.textContent !== 'Receiving changes');
      const port = Number(new URL(first.url).port);
      second = await startTestServer({ port }, { database });
      await new Client(second.url, own.key).post('/v1/collections/resume/rows', [{ n: 2 }, { n: 3 }]);
      await waitForIds([1, 2, 3]);
      await page.waitForFunction(() => document.querySelector('.feed-state')?.textContent === 'Receiving changes');
      // Each change once: the feed resumed after the last seq it had shown.
      // Said in full when it fails: which sockets opened, and all they heard.
      const heard = JSON.stringify({ sockets: watched.feedUrls.map((url) => new URL(url).search), messages: watched.feedMessages });
      expect(
        watched.feedMessages.filter((text) => JSON.parse(text).type === 'insert'),
        heard,
      ).to.have.length(2);
    } finally {
      // A server closes once: a second close() waits for the first.
      await first.close();
      await second?.close();
      await database.drop();
    }
    // While the server was down the browser logged the reconnections it refused: what this test makes happen.
    watched.problems.splice(0, watched.problems.length, ...watched.problems.filter((problem) => !/WebSocket connection/.test(problem)));
  });

  it('shows the plan’s usage, deletes a collection after a confirmation naming it, and signs out', async () => {
    await client.post('/v1/collections', { name: 'doomed' });
    await signIn();
    const usage = await page.waitForSelector('.usage figcaption');
    expect(await usage?.evaluate((node) => node.textContent)).to.match(/^test-unlimited: [\d,]+ \/ 1,000,000,000 this month, [\d,]+ left$/);
    expect(await page.$eval('.usage svg', (svg) => svg.getAttribute('aria-label'))).to.match(/requests used this month/);

    await openCollection('doomed');
    // Its reads answered first (the page of rows, the schema and indexes): a read still on its way as the
    // collection is deleted is answered 404, which the browser logs.
    await page.waitForSelector('details.typing:not([aria-busy])');
    await page.waitForSelector('section.rows table[aria-busy="false"]');
    await page.click('xpath/.//button[text()="Delete collection"]');
    const dialog = await page.waitForSelector('dialog[open]');
    expect(await dialog?.evaluate((node) => node.querySelector('h2')?.textContent)).to.equal('Delete the collection doomed?');
    await page.click('xpath/.//dialog[@open]//button[text()="Delete doomed"]');
    // Gone from the list once the service has deleted it (the empty collection's own `.empty`, its "no
    // rows", is on the page before the delete is answered: waiting for it raced the delete).
    await page.waitForFunction(() => ![...document.querySelectorAll('nav li')].some((item) => item.textContent?.includes('doomed')));
    expect(await page.$('dialog[open]')).to.equal(null);
    await page.waitForSelector('xpath/.//p[@class="empty"][text()="Choose a collection, or create one."]');
    expect((await client.get('/v1/collections/doomed')).status).to.equal(404);

    await page.click('xpath/.//button[text()="Sign out"]');
    await page.waitForSelector('#key');
    expect(await page.evaluate(() => sessionStorage.getItem('rowbase.key'))).to.equal(null);
  });

  it('works by keyboard alone, every control named for a screen reader', async () => {
    await client.post('/v1/collections', { name: 'keys' });
    await client.post('/v1/collections/keys/rows', [{ text: 'one' }]);
    await page.goto(`${server.url}/console`);
    await page.keyboard.press('Tab');
    expect(await page.evaluate(() => document.activeElement?.id)).to.equal('key');
    await page.keyboard.type(client.key as string);
    await page.keyboard.press('Enter');
    await page.waitForSelector('header.top');
    // The list of collections arrives after the header: Tab through it once it holds `keys`.
    await page.waitForFunction(() => [...document.querySelectorAll('nav li')].some((item) => item.textContent?.startsWith('keys')));
    // Tab to the collection, open it with Enter, then Tab on to the row's Open button and open it.
    for (let presses = 0; presses < 20; presses += 1) {
      await page.keyboard.press('Tab');
      if (await page.evaluate(() => document.activeElement?.textContent?.startsWith('keys'))) break;
    }
    expect(await page.evaluate(() => document.activeElement?.textContent)).to.match(/^keys/);
    await page.keyboard.press('Enter');
    await page.waitForSelector('xpath/.//h2[@id="collection-title"][text()="keys"]');
    // The title comes before the rows are read: Tab through the view once its row is there (tabbing
    // earlier passed the place the row's button was still to take, and Enter opened nothing).
    await page.waitForSelector('button[aria-label="Open row 1"]');
    for (let presses = 0; presses < 30; presses += 1) {
      await page.keyboard.press('Tab');
      if (await page.evaluate(() => document.activeElement?.getAttribute('aria-label') === 'Open row 1')) break;
    }
    expect(await page.evaluate(() => document.activeElement?.getAttribute('aria-label'))).to.equal('Open row 1');
    await page.keyboard.press('Enter');
    await page.waitForSelector('dialog[open]');
    expect(await page.evaluate(() => document.activeElement?.closest('dialog') !== null)).to.equal(true);
    await page.keyboard.press('Escape');
    await page.waitForFunction(() => !document.querySelector('dialog[open]'));

    // Every button, box and link has a name in the accessibility tree.
    const tree = await page.accessibility.snapshot({ interestingOnly: true });
    const unnamed: string[] = [];
    const walk = (node: { role: string; name?: string; children?: unknown[] } | null) => {
      if (!node) return;
      if (['button', 'textbox', 'checkbox', 'link', 'combobox'].includes(node.role) && !node.name?.trim()) unnamed.push(node.role);
      for (const child of node.children ?? []) walk(child as typeof node);
    };
    walk(tree as never);
    expect(unnamed).to.deep.equal([]);
  });
});
