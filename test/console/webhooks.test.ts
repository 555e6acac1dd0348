// The web console's webhooks (src/console/webhooks.ts, deliveries.ts; docs/webhooks.md) in a real
// headless Chromium against the real server, delivering to real receivers on 127.0.0.1: the webhooks
// listed with their state, a failing one's log with its failed attempt and the next one due, a retry sent
// and, once the receiver answers, the deliveries that follow, paged by the log's cursor; a retry refused
// (409) said in the service's words; a webhook disabled, enabled and made (its secret shown once); and a
// key without the admin scope told plainly that webhooks are not its to see. Every response the page sees
// is checked against openapi.yaml (support/browser.ts). Screenshots go to tmp/console-screenshots/.
import { mkdir } from 'node:fs/promises';
import { expect } from 'chai';
import type { Browser, Page } from 'puppeteer-core';
import type { components } from '../../generated/openapi.ts';
import { launchBrowser, skipWithoutChromium, type WatchedPage, watchedPage } from '../support/browser.ts';
import type { Client } from '../support/client.ts';
import { pollUntil } from '../support/process.ts';
import { Receiver } from '../support/receiver.ts';
import { startTestServer, TEST_PLAN, type TestServer } from '../support/server.ts';

const screenshots = new URL('../../tmp/console-screenshots/', import.meta.url).pathname;

type Webhook = components['schemas']['Webhook'];
type DeliveryPage = components['schemas']['WebhookDeliveryPage'];

/** The rows each test writes: one more than the console's page of deliveries (20), so that a log has two pages. */
const ROWS = 21;

describe('the web console’s webhooks, in Chromium', function () {
  this.timeout(60_000);
  let server: TestServer;
  let browser: Browser;
  let admin: Client;
  let failing: Receiver;
  let answering: Receiver;
  let watched: WatchedPage;
  let page: Page;

  before(async function () {
    skipWithoutChromium(this);
    await mkdir(screenshots, { recursive: true });
    // Receivers on 127.0.0.1 (ROWBASE_WEBHOOKS_ALLOW_PRIVATE); a failed attempt's next is an hour away,
    // so that only a retry sends it again while the test runs.
    server = await startTestServer({ webhooksAllowPrivate: true, webhookRetryDelaysMs: [3_600_000, 3_600_000] });
    admin = await server.client('webhook-person');
    failing = await Receiver.start((_request, _index, response) => response.writeHead(500).end());
    answering = await Receiver.start((_request, _index, response) => response.writeHead(200).end());
    browser = await launchBrowser();
  });

  after(async () => {
    await browser?.close();
    await failing?.stop();
    await answering?.stop();
    await server?.stop();
  });

  beforeEach(async () => {
    watched = await watchedPage(browser);
    page = watched.page;
  });

  afterEach(() => watched.finish());

  async function makeWebhook(settings: object): Promise<Webhook> {
    const made = await admin.post<Webhook>('/v1/webhooks', settings);
    expect(made.status, made.text).to.equal(201);
    return made.body;
  }

  const webhook = async (id: number) => (await admin.get<Webhook>(`/v1/webhooks/${id}`)).body;
  const deliveries = async (id: number) => (await admin.get<DeliveryPage>(`/v1/webhooks/${id}/deliveries?limit=100`)).body.deliveries;

  async function openWebhooks(key = admin.key as string) {
    await page.goto(`${server.url}/console`);
    await page.type('#key', key);
    await page.click('.sign-in-form button[type=submit]');
    await page.waitForSelector('header.top');
    // Clicked in the page, not at its place on the screen: the collections, read meanwhile, move it down.
    const nav = await page.waitForSelector('xpath/.//nav//li/button[text()="Webhooks"]');
    await nav?.evaluate((button) => (button as HTMLButtonElement).click());
    await page.waitForSelector('#webhooks-title');
  }

  /**
   * The text of each cell `fields` names (by its selector), of each row `rows` selects, top to bottom; a
   * time as its datetime, a cell not there as ''. (The page function names no function of its own: tsx would wrap it in a
   * helper the page has not got.)
   */
  function cellsOf(rows: string, fields: Record<string, string>): Promise<Record<string, string>[]> {
    return page.$$eval(
      rows,
      (found, asked) =>
        found.map((row) =>
          Object.fromEntries(
            Object.entries(asked as Record<string, string>).map(([name, selector]) => {
              const cell = row.querySelector(selector);
              return [name, cell?.querySelector('time')?.getAttribute('datetime') ?? cell?.textContent?.trim() ?? ''];
            }),
          ),
        ),
      fields,
    );
  }

  /** What the list says of webhook `id`. */
  const listed = async (id: number) =>
    (
      await cellsOf(`tr[data-webhook="${id}"]`, {
        url: '.url .line',
        description: '.description',
        collections: '.collections',
        events: '.events',
        status: '.status',
        pending: '.pending',
        failingSince: '.failing-since',
        dropped: '.dropped',
        lastDelivery: '.last-delivery .line',
      })
    )[0];

  /** The log's lines on screen, newest first; `retry` is the Retry button's text, on a failed attempt. */
  const logShown = () =>
    cellsOf('.deliveries tbody tr', {
      collection: '.collection',
      seq: '.change-seq',
      webhookId: '.webhook-id',
      attempt: '.attempt',
      outcome: '.outcome',
      status: '.status',
      error: '.error-text',
      nextAttempt: '.next-attempt',
      retry: 'button',
    });

  /** The ids of the log's lines on screen, newest first. */
  const logIds = () => page.$$eval('.deliveries tbody tr', (rows) => rows.map((row) => Number(row.getAttribute('data-delivery'))));

  const logLength = (count: number) =>
    page.waitForFunction((want) => document.querySelectorAll('.deliveries tbody tr').length === want, {}, count);

  it('lists the webhooks with their state, shows a failing one’s log, retries it, and pages the log by its cursor', async () => {
    await admin.post('/v1/collections', { name: 'orders' });
    const stuck = await makeWebhook({ url: failing.url, description: 'billing', collections: ['orders'], events: ['insert'] });
    const fine = await makeWebhook({ url: answering.url });
    await admin.post(
      '/v1/collections/orders/rows',
      Array.from({ length: ROWS }, (_, n) => ({ n })),
    );
    // The receivers hear of a change before its attempt is written: wait for the log, too.
    await Promise.all([failing.waitFor(1), answering.waitFor(ROWS)]);
    await pollUntil(async () => (await webhook(fine.id)).state.pending === 0 && (await deliveries(stuck.id)).length === 1, 10_000);
    const [failed] = await deliveries(stuck.id);
    const stuckState = (await webhook(stuck.id)).state;

    await openWebhooks();
    await page.waitForSelector(`tr[data-webhook="${fine.id}"]`);
    expect(await listed(stuck.id)).to.deep.equal({
      url: failing.url,
      description: 'billing',
      collections: 'orders',
      events: 'insert',
      status: 'Enabled',
      pending: String(ROWS),
      failingSince: stuckState.failing_since,
      dropped: '0',
      lastDelivery: 'failed, 500',
    });
    expect(await listed(fine.id)).to.deep.equal({
      url: answering.url,
      description: '',
      collections: 'all',
      events: 'insert, update, delete',
      status: 'Enabled',
      pending: '0',
      failingSince: '—',
      dropped: '0',
      lastDelivery: 'delivered, 200',
    });

    // The failing webhook's log: its one attempt, failed with 500, the next due in about an hour.
    await page.click(`button[aria-label="Deliveries of webhook ${stuck.id}"]`);
    await logLength(1);
    const [shown] = await logShown();
    expect(await logIds()).to.deep.equal([failed.id]);
    expect(shown).to.deep.include({
      collection: 'orders',
      seq: '1',
      webhookId: failed.webhook_id,
      attempt: '1',
      outcome: 'failed',
      status: '500',
      retry: 'Retry',
    });
    expect(shown.error).to.equal(failed.error).and.to.have.length.above(0);
    expect(Date.parse(shown.nextAttempt) - Date.now()).to.be.above(30 * 60_000);
    await page.screenshot({ path: `${screenshots}webhooks-failing-1280x800.png` });

    // Retried once the receiver answers: the change is sent now, and the ones after it follow.
    failing.answer = (_request, _index, response) => response.writeHead(200).end();
    await page.click(`button[aria-label="Retry attempt 1 of orders #1"]`);
    await page.waitForFunction(() => document.querySelector('.deliveries .note')?.textContent?.includes('sent again now'));
    await failing.waitFor(1 + ROWS);
    await pollUntil(async () => (await webhook(stuck.id)).state.pending === 0, 10_000);
    await page.click('xpath/.//button[text()="Refresh"]');
    await page.waitForFunction(() => document.querySelector('.deliveries tbody tr')?.classList.contains('delivered'));
    await logLength(20);
    const newest = await logShown();
    expect(newest.map(({ seq, outcome, status, retry }) => [seq, outcome, status, retry])[0]).to.deep.equal([
      String(ROWS),
      'delivered',
      '200',
      '',
    ]);
    expect((await listed(stuck.id)).failingSince).to.equal('—');
    expect((await listed(stuck.id)).lastDelivery).to.equal('delivered, 200');

    // More follows the cursor to the older attempts: the retried change's two, then no more.
    await page.click('xpath/.//nav[@aria-label="Older deliveries"]/button[text()="More"]');
    await logLength(ROWS + 1);
    const all = await logShown();
    expect(all.slice(-2).map(({ seq, attempt, outcome }) => [seq, attempt, outcome])).to.deep.equal([
      ['1', '2', 'delivered'],
      ['1', '1', 'failed'],
    ]);
    expect(await logIds()).to.deep.equal((await deliveries(stuck.id)).map(({ id }) => id));
    expect(
      await page.$eval(
        'xpath/.//nav[@aria-label="Older deliveries"]/button[text()="More"]',
        (button) => (button as HTMLButtonElement).disabled,
      ),
    ).to.equal(true);

    // A failed attempt whose change was delivered since: the service's refusal, in its words.
    await page.click(`tr[data-delivery="${failed.id}"] button`);
    await page.waitForFunction(() => document.querySelector('.deliveries .error')?.textContent !== '');
    expect(await page.$eval('.deliveries .error', (line) => line.textContent)).to.equal(
      `The change of delivery ${failed.id} is delivered already.`,
    );
    expect(await page.$eval('.deliveries .note', (line) => line.textContent)).to.equal('');
    watched.expectRefusals(409);
    await page.screenshot({ path: `${screenshots}webhooks-1280x800.png`, fullPage: true });
  });

  it('disables and enables a webhook, and makes one, showing its secret once', async () => {
    const hook = await makeWebhook({ url: answering.url, description: 'to switch' });
    await openWebhooks();
    await page.waitForSelector(`tr[data-webhook="${hook.id}"]`);
    await page.click(`button[aria-label="Disable webhook ${hook.id}"]`);
    await page.waitForFunction(
      (selector) => document.querySelector(selector)?.textContent === 'Disabled: disabled by its account',
      {},
      `tr[data-webhook="${hook.id}"] .status`,
    );
    expect(await webhook(hook.id)).to.deep.include({ enabled: false, disabled_reason: 'disabled by its account' });
    await page.click(`button[aria-label="Enable webhook ${hook.id}"]`);
    await page.waitForFunction(
      (selector) => document.querySelector(selector)?.textContent === 'Enabled',
      {},
      `tr[data-webhook="${hook.id}"] .status`,
    );
    expect(await webhook(hook.id)).to.deep.include({ enabled: true, disabled_reason: null });

    await page.click('.new-webhook summary');
    await page.type('#webhook-url', answering.url);
    await page.type('#webhook-description', 'made in the console');
    await page.type('#webhook-collections', 'orders, invoices');
    await page.click('.events-choice input[name="delete"]');
    await page.click('xpath/.//button[text()="Make webhook"]');
    const secret = await page.waitForSelector('dialog[open] #webhook-secret');
    expect(await secret?.evaluate((input) => (input as HTMLInputElement).value)).to.match(/^whsec_[A-Za-z0-9+/]{32}$/);
    await page.setViewport({ width: 390, height: 844 });
    await page.screenshot({ path: `${screenshots}webhooks-secret-390x844.png` });
    await page.click('xpath/.//dialog[@open]//button[text()="I have copied it"]');
    await page.waitForFunction(() => !document.querySelector('dialog[open]'));

    const made = ((await admin.get<Webhook[]>('/v1/webhooks')).body as Webhook[]).find(
      ({ description }) => description === 'made in the console',
    );
    expect(made).to.deep.include({ url: answering.url, collections: ['orders', 'invoices'], events: ['insert', 'update'] });
    await page.waitForSelector(`tr[data-webhook="${made?.id}"]`);
    expect(await page.evaluate(() => document.body.textContent?.includes('whsec_'))).to.equal(false);
    // The list fits at 390 px: its table scrolls in its own box.
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).to.be.at.most(390);
    await page.screenshot({ path: `${screenshots}webhooks-390x844.png`, fullPage: true });
  });

  it('tells a key without the admin scope plainly that webhooks are an admin key’s', async () => {
    const reader = await server.client('webhook-person', TEST_PLAN, { scope: 'read' });
    await openWebhooks(reader.key);
    const refusal = await page.waitForSelector('.webhooks .refused');
    expect(await refusal?.evaluate((line) => line.textContent)).to.equal(
      "Only an admin key may see and manage the account's webhooks, and this key is not one.",
    );
    expect(await page.$eval('.webhooks .hint', (line) => line.textContent)).to.match(/^The service answered 403: .*needs admin/);
    expect(await page.$('.webhook-table')).to.equal(null);
    expect(await page.$('#webhook-url')).to.equal(null);
    watched.expectRefusals(403);
  });
});
