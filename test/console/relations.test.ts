// The web console's relations (src/console/relations.ts, related.ts, route.ts; docs/relations.md) in a
// real headless Chromium against the real server: a collection's relations shown both directions with
// what deleting a named row does, declared (a refusal listed, with the stored rows that name no row)
// and deleted by an admin key, and only shown to a read key; a row's related rows as links (a to-one's id
// in the table and in the opened row, a to-many's rows and its collection filtered to them), which the
// browser follows, and back; and a relation's field picked from a list of the related rows, paged and
// found by words, when a row is edited or inserted. Every response the page sees is checked against
// openapi.yaml (support/browser.ts). Screenshots go to tmp/console-screenshots/.
import { mkdir } from 'node:fs/promises';
import { expect } from 'chai';
import type { Browser } from 'puppeteer-core';
import { launchBrowser, pageForEachTest, signInToConsole, skipWithoutChromium } from '../support/browser.ts';
import type { Client } from '../support/client.ts';
import { startTestServer, TEST_PLAN, type TestServer } from '../support/server.ts';

const screenshots = new URL('../../tmp/console-screenshots/', import.meta.url).pathname;

type Row = { id: number; [field: string]: unknown };

const peopleSchema = { type: 'object', properties: { name: { type: 'string' }, email: { type: 'string' } } };
const postsSchema = { type: 'object', properties: { title: { type: 'string' }, author_id: { type: ['integer', 'null'] } } };
/** Twenty people, Ada first and Grace seventh, so that the picker's list runs over three pages of eight. */
const names = ['Ada', 'Alan', 'Barbara', 'Charles', 'Edsger', 'Frances', 'Grace', 'Hedy', 'Ivan', 'John'];
const people = Array.from({ length: 20 }, (_, i) => ({
  name: i < names.length ? names[i] : `Person ${i + 1}`,
  email: `p${i + 1}@example.com`,
}));

describe('the web console’s relations, in Chromium', function () {
  this.timeout(120_000);
  let server: TestServer;
  let browser: Browser;
  let admin: Client;
  let made = 0;

  before(async function () {
    this.timeout(60_000);
    skipWithoutChromium(this);
    await mkdir(screenshots, { recursive: true });
    server = await startTestServer();
    admin = await server.client('relations-person');
    browser = await launchBrowser();
  });

  after(async () => {
    await browser?.close();
    await server?.stop();
  });

  const tab = pageForEachTest(() => browser);

  /**
   * people, posts naming them (`author`, restrict, reversed as `posts`) and comments naming the posts
   * (`post`, cascade, reversed as `comments`): post 1 by Ada has 11 comments, post 2 by Alan one, post 3 none.
   */
  async function makeBlog() {
    const n = ++made;
    const names = { people: `people${n}`, posts: `posts${n}`, comments: `comments${n}` };
    expect((await admin.post('/v1/collections', { name: names.people, schema: peopleSchema })).status).to.equal(201);
    expect((await admin.post('/v1/collections', { name: names.posts, schema: postsSchema })).status).to.equal(201);
    expect((await admin.post('/v1/collections', { name: names.comments })).status).to.equal(201);
    expect((await admin.post(`/v1/collections/${names.people}/rows`, people)).status).to.equal(201);
    const posts = [
      { title: 'Notes on the engine', author_id: 1 },
      { title: 'On computable numbers', author_id: 2 },
      { title: 'Untitled', author_id: null },
    ];
    expect((await admin.post(`/v1/collections/${names.posts}/rows`, posts)).status).to.equal(201);
    const comments = [
      ...Array.from({ length: 11 }, (_, i) => ({ text: `comment ${i + 1}`, post_id: 1 })),
      { text: 'a comment on post 2', post_id: 2 },
    ];
    expect((await admin.post(`/v1/collections/${names.comments}/rows`, comments)).status).to.equal(201);
    const author = { field: 'author_id', collection: names.people, on_delete: 'restrict', reverse: 'posts' };
    expect((await admin.put(`/v1/collections/${names.posts}/relations/author`, author)).status).to.equal(200);
    const post = { field: 'post_id', collection: names.posts, on_delete: 'cascade', reverse: 'comments' };
    expect((await admin.put(`/v1/collections/${names.comments}/relations/post`, post)).status).to.equal(200);
    return names;
  }

  const signIn = (key = admin.key as string) => signInToConsole(tab.page, server.url, key);

  async function openCollection(name: string) {
    const button = await tab.page.waitForSelector(`xpath/.//nav//li/button[span[1][text()="${name}"]]`);
    await button?.click();
    await tab.page.waitForSelector(`xpath/.//h2[@id="collection-title"][text()="${name}"]`);
    await tab.page.waitForSelector('details.relations:not([aria-busy])');
  }

  /** Opens the relations' line, and answers its table's rows, each as its cells' text. */
  async function relationsTable(): Promise<string[][]> {
    const { page } = tab;
    if (!(await page.$('details.relations[open]'))) await page.click('details.relations summary');
    await page.waitForSelector('details.relations[open] .relations-body');
    return page.$$eval('table.relations-table tbody tr', (rows) =>
      rows.map((row) => [...row.querySelectorAll('td')].map((cell) => cell.textContent ?? '')),
    );
  }

  const dialogClosed = () => tab.page.waitForFunction(() => !document.querySelector('dialog[open]'));
  const hash = () => tab.page.evaluate(() => location.hash);

  it('shows a collection’s relations both ways, with on_delete, and lets an admin declare one (refusals listed) and delete one', async () => {
    const { page } = tab;
    const blog = await makeBlog();
    await signIn();
    await openCollection(blog.posts);
    expect(await page.$eval('details.relations summary', (summary) => summary.textContent)).to.equal(
      `Relations: author (to one ${blog.people}), comments (to many ${blog.comments})`,
    );
    expect(await relationsTable()).to.deep.equal([
      ['author', 'to one', blog.people, 'author_id', 'restrict', 'posts', 'Delete'],
      ['comments', 'to many', blog.comments, `post_id of ${blog.comments}`, 'cascade', `post of ${blog.comments}`, 'Delete'],
    ]);
    // What on_delete does, in words, on hover.
    expect(await page.$eval('tr[data-relation="comments"] td:nth-child(5)', (cell) => cell.getAttribute('title'))).to.equal(
      `Deleting a row of ${blog.posts} deletes the rows of ${blog.comments} that name it.`,
    );
    await page.screenshot({ path: `${screenshots}relations-1280x800.png` });

    // Declared from the comments' view: one comment names a person who does not exist, which the 409 lists.
    await openCollection(blog.comments);
    expect((await admin.patch(`/v1/collections/${blog.comments}/rows/12`, { by: 99 })).status).to.equal(200);
    await relationsTable();
    const declare = async (name: string, field: string, collection: string, onDelete: string, reverse = '') => {
      for (const [selector, value] of [
        ['#relation-name', name],
        ['#relation-field', field],
        ['#relation-reverse', reverse],
      ]) {
        await page.$eval(selector, (input, text) => ((input as HTMLInputElement).value = text as string), value);
      }
      await page.select('#relation-collection', collection);
      await page.select('#relation-on-delete', onDelete);
      await page.click('xpath/.//button[text()="Declare relation"]');
    };
    await declare('writer', 'by', blog.people, 'set_null', 'comments');
    await page.waitForSelector('details.relations .problems li');
    expect(await page.$$eval('details.relations .problems li', (items) => items.map((item) => item.textContent))).to.deep.equal([
      `row 12 at /by: names row 99 of ${blog.people}, which does not exist`,
    ]);
    tab.watched.expectRefusals(409);
    // A cascade of a collection to itself would loop: refused, with the place.
    await declare('parent', 'parent_id', blog.comments, 'cascade');
    await page.waitForFunction(() => document.querySelector('details.relations .problems li')?.textContent?.startsWith('/on_delete'));
    tab.watched.expectRefusals(400);
    expect((await admin.get<unknown[]>(`/v1/collections/${blog.comments}/relations`)).body).to.have.length(1);

    expect((await admin.patch(`/v1/collections/${blog.comments}/rows/12`, { by: 7 })).status).to.equal(200);
    await declare('writer', 'by', blog.people, 'set_null', 'comments');
    await page.waitForSelector('tr[data-relation="writer"]');
    expect(await page.$eval('details.relations .problems', (area) => area.textContent)).to.equal('');
    expect(await page.$eval('tr[data-relation="writer"]', (row) => row.textContent)).to.include('set_null');
    expect((await admin.get(`/v1/collections/${blog.comments}/relations/writer`)).body).to.deep.equal({
      name: 'writer',
      kind: 'to_one',
      collection: blog.people,
      field: 'by',
      on_delete: 'set_null',
      reverse: 'comments',
    });

    // A to-many relation is deleted as the to-one relation it reverses, of the other collection.
    await openCollection(blog.people);
    expect((await relationsTable()).map((cells) => cells[0])).to.deep.equal(['posts', 'comments']);
    await page.click('button[aria-label="Delete relation comments"]');
    await page.waitForFunction(() => !document.querySelector('tr[data-relation="comments"]'));
    expect((await admin.get(`/v1/collections/${blog.comments}/relations/writer`)).status).to.equal(404);
    expect((await admin.get(`/v1/collections/${blog.posts}/relations/author`)).status).to.equal(200);
  });

  it('shows a read key the relations with nothing to change them', async () => {
    const { page } = tab;
    const blog = await makeBlog();
    const reader = await server.client('relations-person', TEST_PLAN, { scope: 'read' });
    await signIn(reader.key);
    await openCollection(blog.posts);
    expect((await relationsTable()).map((cells) => cells.length)).to.deep.equal([6, 6]);
    expect(await page.$('#relation-name')).to.equal(null);
    expect(await page.$$('details.relations button')).to.deep.equal([]);
    expect(await page.$eval('details.relations', (details) => details.textContent)).to.include(
      'An admin key declares and deletes relations.',
    );
    tab.watched.expectRefusals(403);
  });

  it('links a row’s related rows: a to-one’s id to its row, a to-many’s rows and its collection filtered to them, back and forth', async () => {
    const { page } = tab;
    const blog = await makeBlog();
    await signIn();
    await openCollection(blog.posts);
    // In the table, a to-one's id links to the row it names; a row naming none shows nothing to follow.
    await page.waitForSelector('tbody tr[data-id="1"] a');
    expect(
      await page.$$eval('tbody tr[data-id] a', (links) => links.map((link) => [link.textContent, link.getAttribute('href')])),
    ).to.deep.equal([
      ['1', `#/collections/${blog.people}/rows/1`],
      ['2', `#/collections/${blog.people}/rows/2`],
    ]);
    await page.click('tbody tr[data-id="2"] a');
    await page.waitForSelector(`xpath/.//h2[@id="collection-title"][text()="${blog.people}"]`);
    await page.waitForSelector('dialog[open][aria-label="Row 2"] .row-form');
    expect(await page.$eval('dialog[open] [name="name"]', (input) => (input as HTMLInputElement).value)).to.equal('Alan');
    // Its reverse, the posts naming it, are listed with it.
    await page.waitForSelector('dialog[open] .related dd[data-relation="posts"] a');
    expect(
      await page.$$eval('dialog[open] .related dd[data-relation="posts"] li a', (links) => links.map((link) => link.textContent)),
    ).to.deep.equal([`${blog.posts} row 2`]);
    // Closed, the address is the collection's again; Back goes to the posts.
    await page.click('xpath/.//dialog[@open]//button[text()="Cancel"]');
    await dialogClosed();
    expect(await hash()).to.equal(`#/collections/${blog.people}`);
    await page.goBack();
    await page.waitForSelector(`xpath/.//h2[@id="collection-title"][text()="${blog.posts}"]`);
    // The posts' rows, not the rows shown before them: a post's author links to a person.
    await page.waitForSelector(`tbody tr[data-id="1"] a[href="#/collections/${blog.people}/rows/1"]`);

    // An opened row lists its related rows as links: its author, its comments (the first 10 of 11, cut).
    await (await page.waitForSelector('button[aria-label="Open row 1"]'))?.click();
    await page.waitForSelector('dialog[open] .related dl');
    expect(await page.$eval('dialog[open] .related dd[data-relation="author"]', (item) => item.textContent)).to.equal(
      `${blog.people} row 1 Ada`,
    );
    const comments = await page.$$eval('dialog[open] .related dd[data-relation="comments"] li a', (links) =>
      links.map((link) => [link.textContent, link.getAttribute('href')]),
    );
    expect(comments).to.have.length(10);
    expect(comments[0]).to.deep.equal([`${blog.comments} row 1`, `#/collections/${blog.comments}/rows/1`]);
    const all = await page.$eval('dialog[open] .related dd[data-relation="comments"] a.all', (link) => [
      link.textContent,
      link.getAttribute('href'),
    ]);
    expect(all[0]).to.equal(`All the rows of ${blog.comments} naming this one (the first 10 shown)`);
    expect(decodeURIComponent(all[1] as string)).to.equal(`#/collections/${blog.comments}?filter={"post_id":1}`);
    await page.screenshot({ path: `${screenshots}related-rows-1280x800.png` });

    // The to-many's collection, filtered to the rows naming the post: the 11 comments.
    await page.click('dialog[open] .related dd[data-relation="comments"] a.all');
    await page.waitForSelector(`xpath/.//h2[@id="collection-title"][text()="${blog.comments}"]`);
    await page.waitForFunction(() => document.querySelector('caption')?.textContent === 'Rows 1–11 of 11 matching the filter');
    expect(await page.$eval('#filter', (input) => (input as HTMLInputElement).value)).to.equal('{"post_id":1}');
    expect(await page.$$eval('tbody tr[data-id]', (rows) => rows.map((row) => Number(row.getAttribute('data-id'))))).to.deep.equal(
      Array.from({ length: 11 }, (_, i) => i + 1),
    );
    // A post with no author, and no comments: nothing to follow.
    await page.goBack();
    await page.waitForSelector(`xpath/.//h2[@id="collection-title"][text()="${blog.posts}"]`);
    // The posts' rows, not the rows shown before them: a post's author links to a person.
    await page.waitForSelector(`tbody tr[data-id="1"] a[href="#/collections/${blog.people}/rows/1"]`);
    await (await page.waitForSelector('button[aria-label="Open row 3"]'))?.click();
    await page.waitForSelector('dialog[open] .related dl');
    expect(await page.$eval('dialog[open] .related dd[data-relation="author"]', (item) => item.textContent)).to.equal('none');
    expect(await page.$eval('dialog[open] .related dd[data-relation="comments"] .empty', (item) => item.textContent)).to.equal('none');
    expect(await page.$eval('dialog[open] .related dd[data-relation="comments"] a.all', (link) => link.textContent)).to.equal(
      `These rows in ${blog.comments}`,
    );
  });

  it('picks a relation’s row from a list of the related rows, paged and found by words, when a row is edited or inserted', async () => {
    const { page } = tab;
    const blog = await makeBlog();
    const patches: unknown[] = [];
    page.on('request', (request) => {
      if (request.method() === 'PATCH') patches.push(JSON.parse(request.postData() ?? 'null'));
    });
    await signIn();
    await openCollection(blog.posts);
    await (await page.waitForSelector('button[aria-label="Open row 1"]'))?.click();
    const picker = 'dialog[open] select[name="author_id"]';
    await page.waitForSelector(`${picker} option[value="8"]`);
    // The row it names, read with the row's related rows, names it in the list.
    await page.waitForSelector('dialog[open] .related dl');
    const options = () => page.$$eval(`${picker} option`, (items) => items.map((item) => item.textContent));
    const chosen = () => page.$eval(picker, (select) => (select as HTMLSelectElement).value);
    const pickerStatus = 'dialog[open] .picker-pages [role="status"]';
    const status = () => page.$eval(pickerStatus, (line) => line.textContent);
    // A list, not a box for an id: the first page of people, the row it names chosen.
    expect(await page.$eval(picker, (select) => (select as HTMLSelectElement).size)).to.equal(6);
    expect(await options()).to.deep.equal(['(none)', ...people.slice(0, 8).map((person, i) => `${i + 1} · ${person.name}`)]);
    expect(await chosen()).to.equal('1');
    expect(await status()).to.equal(`${blog.people} rows 1–8 of 20`);
    // Paged by cursor, the row it names kept at the top while it is not on the page.
    await page.click('xpath/.//dialog[@open]//div[@class="picker-pages"]/button[text()="Next"]');
    await page.waitForFunction((selector) => document.querySelector(selector)?.textContent?.includes('rows 9–16'), {}, pickerStatus);
    expect(await options()).to.deep.equal([
      '(none)',
      '1 · Ada (as it is)',
      ...people.slice(8, 16).map((person, i) => `${i + 9} · ${person.name}`),
    ]);
    // Found by the start of its name (people have no search index), Enter finding rather than saving.
    await page.type(`dialog[open] #${await page.$eval(picker, (select) => select.id)}-search`, 'Gra');
    await page.keyboard.press('Enter');
    await page.waitForFunction(
      (selector) => document.querySelector(selector)?.textContent?.endsWith('rows 1–1 of 1 found'),
      {},
      pickerStatus,
    );
    expect(await options()).to.deep.equal(['(none)', '1 · Ada (as it is)', '7 · Grace']);
    expect(patches).to.deep.equal([]);
    await page.select(picker, '7');
    expect(await page.$eval('dialog[open] .picker-pages a', (link) => link.getAttribute('href'))).to.equal(
      `#/collections/${blog.people}/rows/7`,
    );
    await page.screenshot({ path: `${screenshots}picker-1280x800.png` });
    await page.click('dialog[open] button[type=submit]');
    await dialogClosed();
    expect(patches).to.deep.equal([{ author_id: 7 }]);
    expect((await admin.get<Row>(`/v1/collections/${blog.posts}/rows/1`)).body.author_id).to.equal(7);

    // None: null.
    await page.waitForSelector('tbody tr[data-id="1"] a[aria-label$="row 7"]');
    await page.click('button[aria-label="Open row 1"]');
    await page.waitForSelector(`${picker} option[value="8"]`);
    // The related rows, read after the form, move the buttons down when they come: wait for them first.
    await page.waitForSelector('dialog[open] .related dl');
    expect(await chosen()).to.equal('7');
    await page.select(picker, '');
    await page.click('dialog[open] button[type=submit]');
    await dialogClosed();
    expect(patches.at(-1)).to.deep.equal({ author_id: null });
    expect((await admin.get<Row>(`/v1/collections/${blog.posts}/rows/1`)).body.author_id).to.equal(null);

    // Inserting, at 390 px: the same list, a row picked by its id.
    await page.setViewport({ width: 390, height: 844 });
    await page.click('xpath/.//button[text()="Insert rows"]');
    await page.waitForSelector(`${picker} option[value="8"]`);
    await page.$eval('dialog[open] [name="title"]', (input) => ((input as HTMLInputElement).value = 'A new post'));
    await page.type(`dialog[open] #${await page.$eval(picker, (select) => select.id)}-search`, '12');
    await page.click('xpath/.//dialog[@open]//div[@class="picker-search"]/button[text()="Find"]');
    await page.waitForFunction((selector) => document.querySelector(selector)?.textContent?.endsWith('found'), {}, pickerStatus);
    expect(await options()).to.deep.equal(['(none)', '12 · Person 12']);
    await page.select(picker, '12');
    await page.screenshot({ path: `${screenshots}picker-390x844.png`, fullPage: true });
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).to.be.at.most(390);
    await page.click('dialog[open] button[type=submit]');
    await dialogClosed();
    expect((await admin.get<Row>(`/v1/collections/${blog.posts}/rows/4`)).body).to.deep.equal({
      id: 4,
      title: 'A new post',
      author_id: 12,
    });
  });
});
