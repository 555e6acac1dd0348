// Webhooks delivered (docs/webhooks.md): each change POSTed to a real receiver on 127.0.0.1, signed so
// that the standardwebhooks package verifies it, in seq order, again after failures with the same
// webhook-id, with the feed's kinds and filters, and disabled past the retry schedule.
import { expect } from 'chai';
import { Webhook as Verifier } from 'standardwebhooks';
import { describeEachBackend } from '../support/backends.ts';
import type { Client } from '../support/client.ts';
import { scrape, value } from '../support/metrics.ts';
import { pollUntil } from '../support/process.ts';
import { Receiver } from '../support/receiver.ts';
import { startTestServer, type TestServer } from '../support/server.ts';
import { watchHealth } from '../support/watchdog.ts';

interface Webhook {
  id: number;
  enabled: boolean;
  disabled_reason: string | null;
  secret: string;
  state: { pending: number; failing_since: string | null; dropped: number; last_delivery?: { outcome: string } };
}

describeEachBackend('webhook deliveries', (backend) => {
  let server: TestServer;
  let receiver: Receiver;
  before(async () => {
    server = await startTestServer(
      { webhooksAllowPrivate: true, webhookRetryDelaysMs: [20, 20, 20], webhookTimeoutMs: 2000, metricsPort: 0 },
      { backend },
    );
  });
  after(() => server.stop());
  watchHealth(() => server);
  beforeEach(async () => {
    receiver = await Receiver.start();
  });
  afterEach(() => receiver.stop());

  async function setUp(settings: Record<string, unknown> = {}): Promise<{ client: Client; hook: Webhook }> {
    const client = await server.client();
    expect((await client.post('/v1/collections', { name: 'notes' })).status).to.equal(201);
    const made = await client.post<Webhook>('/v1/webhooks', { url: receiver.url, ...settings });
    expect(made.status, made.text).to.equal(201);
    return { client, hook: made.body };
  }

  it('POSTs each change as the feed message, signed per Standard Webhooks, in seq order', async () => {
    const { client, hook } = await setUp();
    expect(hook.secret).to.match(/^whsec_/);
    await client.post('/v1/collections/notes/rows', [{ text: 'a' }, { text: 'b' }]);
    await client.patch('/v1/collections/notes/rows/1', { text: 'A' });
    await client.delete('/v1/collections/notes/rows/2');
    await receiver.waitFor(4);
    const verifier = new Verifier(hook.secret);
    for (const { headers, body } of receiver.received) {
      expect(headers['content-type']).to.equal('application/json');
      expect(() => verifier.verify(body, headers as Record<string, string>)).not.to.throw();
      // Made of the rows' texts as stored (feed/messages.ts, changeMessageJson): JSON.stringify's text of the message.
      expect(body).to.equal(JSON.stringify(JSON.parse(body)));
    }
    const messages = receiver.messages;
    expect(messages.map(({ type, seq }) => [type, seq])).to.deep.equal([
      ['insert', 1],
      ['insert', 2],
      ['update', 3],
      ['delete', 4],
    ]);
    expect(messages[2]).to.deep.include({ collection: 'notes', row: { id: 1, text: 'A' }, previous: { id: 1, text: 'a' } });
    expect(new Set(receiver.received.map(({ headers }) => headers['webhook-id'])).size).to.equal(4);
    // The receiver hears of a change before its acknowledgement is written.
    await pollUntil(async () => (await client.get<Webhook>(`/v1/webhooks/${hook.id}`)).body.state.pending === 0, 5000);
    const shown = await client.get<Webhook>(`/v1/webhooks/${hook.id}`);
    expect(shown.body.state).to.deep.include({ pending: 0, failing_since: null, dropped: 0 });
    expect(shown.body.state.last_delivery).to.deep.include({ outcome: 'delivered' });
  });

  it('sends a change again until it is acknowledged, with the same webhook-id, and the next only after it', async () => {
    receiver.answer = (_request, index, response) => response.writeHead(index < 2 ? 500 : 200).end();
    const { client, hook } = await setUp();
    await client.post('/v1/collections/notes/rows', [{ n: 1 }, { n: 2 }]);
    await receiver.waitFor(4);
    const sent = receiver.received.map(({ headers, body }) => [headers['webhook-id'], JSON.parse(body).seq]);
    expect(sent[0]).to.deep.equal(sent[1]);
    expect(sent[1]).to.deep.equal(sent[2]);
    expect(sent.map(([, seq]) => seq)).to.deep.equal([1, 1, 1, 2]);
    const log = await client.get<{ deliveries: { seq: number; attempt: number; outcome: string; status: number }[]; next: number | null }>(
      `/v1/webhooks/${hook.id}/deliveries?limit=3`,
    );
    await pollUntil(async () => (await client.get<Webhook>(`/v1/webhooks/${hook.id}`)).body.state.pending === 0, 5000);
    const all = await client.get<{ deliveries: { seq: number; attempt: number; outcome: string; status: number }[] }>(
      `/v1/webhooks/${hook.id}/deliveries`,
    );
    expect(all.body.deliveries.map(({ seq, attempt, outcome, status }) => [seq, attempt, outcome, status])).to.deep.equal([
      [2, 1, 'delivered', 200],
      [1, 3, 'delivered', 200],
      [1, 2, 'failed', 500],
      [1, 1, 'failed', 500],
    ]);
    expect(log.body.deliveries.length).to.be.at.most(3);
  });

  it('delivers only the kinds and the rows of its filter, as the feed does, an update leaving the filter with matches: false', async () => {
    const { client } = await setUp({ events: ['insert', 'update'], filter: { status: 'open' } });
    await client.post('/v1/collections/notes/rows', [{ status: 'open' }, { status: 'closed' }]);
    await client.patch('/v1/collections/notes/rows/1', { status: 'closed' });
    await client.patch('/v1/collections/notes/rows/2', { status: 'open' });
    await client.delete('/v1/collections/notes/rows/2');
    await client.post('/v1/collections/notes/rows', [{ status: 'open', last: true }]);
    await receiver.waitFor(4);
    expect(receiver.messages.map(({ type, seq, matches }) => [type, seq, matches])).to.deep.equal([
      ['insert', 1, undefined],
      ['update', 3, false],
      ['update', 4, undefined],
      ['insert', 6, undefined],
    ]);
  });

  it('is disabled past the retry schedule, and resumes where it stopped when enabled again', async () => {
    receiver.answer = (_request, _index, response) => response.writeHead(503).end();
    const { client, hook } = await setUp();
    await client.post('/v1/collections/notes/rows', [{ n: 1 }, { n: 2 }]);
    await receiver.waitFor(4);
    await pollUntil(async () => !(await client.get<Webhook>(`/v1/webhooks/${hook.id}`)).body.enabled, 5000);
    const disabled = await client.get<Webhook>(`/v1/webhooks/${hook.id}`);
    expect(disabled.body.disabled_reason).to.match(/failed 4 times/);
    expect(disabled.body.state.pending).to.equal(2);
    expect(disabled.body.state.failing_since).to.be.a('string');
    receiver.answer = (_request, _index, response) => response.writeHead(200).end();
    const enabled = await client.patch<Webhook>(`/v1/webhooks/${hook.id}`, { enabled: true });
    expect(enabled.body).to.deep.include({ enabled: true, disabled_reason: null });
    await receiver.waitFor(6);
    expect(receiver.messages.map(({ seq }) => seq)).to.deep.equal([1, 1, 1, 1, 1, 2]);
  });

  it('delivers the changes of a collection made after the webhook, and none of another account', async () => {
    const { client } = await setUp({ events: ['insert'] });
    const other = await server.client();
    await other.post('/v1/collections', { name: 'notes' });
    await other.post('/v1/collections/notes/rows', [{ theirs: true }]);
    await client.post('/v1/collections', { name: 'later' });
    await client.post('/v1/collections/later/rows', [{ n: 1 }]);
    await receiver.waitFor(1);
    await client.post('/v1/collections/notes/rows', [{ n: 2 }]);
    await receiver.waitFor(2);
    expect(receiver.messages.map(({ collection, row }) => [collection, row])).to.deep.equal([
      ['later', { id: 1, n: 1 }],
      ['notes', { id: 1, n: 2 }],
    ]);
  });

  it('sends a failed change again at once when asked, and refuses to for one delivered', async () => {
    receiver.answer = (_request, index, response) => response.writeHead(index === 0 ? 500 : 204).end();
    // A server whose next attempt after a failure is an hour away.
    const slow = await startTestServer({ webhooksAllowPrivate: true, webhookRetryDelaysMs: [3_600_000] }, { backend });
    try {
      await retried(await slow.client());
    } finally {
      await slow.stop();
    }
  });

  async function retried(client: Client): Promise<void> {
    await client.post('/v1/collections', { name: 'notes' });
    const hook = (await client.post<Webhook>('/v1/webhooks', { url: receiver.url })).body;
    await client.post('/v1/collections/notes/rows', [{ n: 1 }]);
    await receiver.waitFor(1);
    type Page = { deliveries: { id: number; outcome: string; next_attempt_at: string | null }[] };
    let failed: Page['deliveries'] = [];
    await pollUntil(async () => {
      failed = (await client.get<Page>(`/v1/webhooks/${hook.id}/deliveries`)).body.deliveries;
      return failed.length === 1;
    }, 5000);
    // Its next attempt is an hour away.
    expect(Date.parse(failed[0].next_attempt_at as string) - Date.now()).to.be.above(30 * 60_000);
    const asked = performance.now();
    expect((await client.post(`/v1/webhooks/${hook.id}/deliveries/${failed[0].id}/retry`)).status).to.equal(202);
    await receiver.waitFor(2);
    // At once: the worker is woken by the request, not found by its next look a second later, at most.
    expect(performance.now() - asked).to.be.below(750);
    expect(receiver.received[1].headers['webhook-id']).to.equal(receiver.received[0].headers['webhook-id']);
    let delivered: Page['deliveries'] = [];
    await pollUntil(async () => {
      delivered = (await client.get<Page>(`/v1/webhooks/${hook.id}/deliveries`)).body.deliveries;
      return delivered.length === 2;
    }, 5000);
    for (const { id } of delivered) expect((await client.post(`/v1/webhooks/${hook.id}/deliveries/${id}/retry`)).status).to.equal(409);
    expect((await client.post(`/v1/webhooks/${hook.id}/deliveries/999999/retry`)).status).to.equal(404);
  }

  it('keeps the changes a disabled webhook owes through retention, and delivers them once enabled', async () => {
    const { client, hook } = await setUp();
    await client.patch(`/v1/webhooks/${hook.id}`, { enabled: false });
    await client.post('/v1/collections/notes/rows', [{ n: 1 }, { n: 2 }, { n: 3 }]);
    const { id } = await collectionOf(client);
    // Retention of one event: all but the latest would go, were they not owed, by count or by age.
    expect(await server.store.pruneEventBatch(id, 3, { keepCount: 1, keepMs: 60_000, batchSize: 100 })).to.equal(0);
    expect(await server.store.pruneEventBatch(id, 3, { keepCount: 1, keepMs: 0, batchSize: 100 })).to.equal(0);
    await client.patch(`/v1/webhooks/${hook.id}`, { enabled: true });
    await receiver.waitFor(3);
    expect(receiver.messages.map(({ seq }) => seq)).to.deep.equal([1, 2, 3]);
  });

  it('drops what it owes past its backlog, oldest first, and says so in its state', async () => {
    const { client, hook } = await setUp();
    await client.patch(`/v1/webhooks/${hook.id}`, { enabled: false });
    await client.post('/v1/collections/notes/rows', [{ n: 1 }, { n: 2 }, { n: 3 }, { n: 4 }, { n: 5 }]);
    const { id } = await collectionOf(client);
    // By count, a batch of two; then by age the rest of what is past the backlog.
    expect(await server.store.pruneEventBatch(id, 5, { keepCount: 1, keepMs: 60_000, batchSize: 2, webhookBacklog: 2 })).to.equal(2);
    expect(await server.store.pruneEventBatch(id, 5, { keepCount: 1, keepMs: 0, batchSize: 100, webhookBacklog: 2 })).to.equal(1);
    await client.patch(`/v1/webhooks/${hook.id}`, { enabled: true });
    await receiver.waitFor(2);
    expect(receiver.messages.map(({ seq }) => seq)).to.deep.equal([4, 5]);
    await pollUntil(async () => (await client.get<Webhook>(`/v1/webhooks/${hook.id}`)).body.state.pending === 0, 5000);
    expect((await client.get<Webhook>(`/v1/webhooks/${hook.id}`)).body.state.dropped).to.equal(3);
    const scraped = await scrape(server.metricsUrl as string);
    expect(value(scraped, 'rowbase_webhook_dropped_changes_total', { webhook: String(hook.id) })).to.equal(3);
  });

  it("forgets a deleted collection's stream, and delivers a collection made again by its name from its first change", async () => {
    const { client, hook } = await setUp();
    await client.post('/v1/collections/notes/rows', [{ n: 1 }]);
    await receiver.waitFor(1);
    const { id } = await collectionOf(client);
    expect((await client.delete('/v1/collections/notes')).status).to.equal(204);
    expect(await server.store.knex('webhook_streams').where({ collection_id: id })).to.deep.equal([]);
    await client.post('/v1/collections', { name: 'notes' });
    await client.post('/v1/collections/notes/rows', [{ n: 2 }]);
    await receiver.waitFor(2);
    expect(receiver.messages.map(({ seq, row }) => [seq, row])).to.deep.equal([
      [1, { id: 1, n: 1 }],
      [1, { id: 1, n: 2 }],
    ]);
    await pollUntil(async () => (await client.get<Webhook>(`/v1/webhooks/${hook.id}`)).body.state.pending === 0, 5000);
  });

  it('keeps its delivery log for 7 days', async () => {
    const { client, hook } = await setUp();
    await client.post('/v1/collections/notes/rows', [{ n: 1 }, { n: 2 }]);
    type Page = { deliveries: { seq: number }[] };
    await pollUntil(async () => (await client.get<Page>(`/v1/webhooks/${hook.id}/deliveries`)).body.deliveries.length === 2, 5000);
    const eightDaysAgo = new Date(Date.now() - 8 * 24 * 3_600_000).toISOString();
    await server.store.knex('webhook_deliveries').where({ webhook_id: hook.id, seq: 1 }).update({ at: eightDaysAgo });
    await server.feed.pruner.runOnce();
    const kept = await client.get<Page>(`/v1/webhooks/${hook.id}/deliveries`);
    expect(kept.body.deliveries.map(({ seq }) => seq)).to.deep.equal([2]);
  });

  /** The id of the client's collection `notes`, as the feed knows it. */
  async function collectionOf(client: Client): Promise<{ id: number }> {
    const accountId = (await server.store.findPrincipal(client.key as string))?.accountId as number;
    const { collectionId } = await server.store.feedStart(accountId, 'notes');
    return { id: collectionId };
  }
});
