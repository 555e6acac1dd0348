// The webhooks' metrics (docs/operations.md, "Metrics"): attempts by outcome, and per webhook the changes
// it owes, the age of the oldest, and those retention dropped, a webhook's series gone with it. The
// receivers are on 127.0.0.1.
import { expect } from 'chai';
import { describeEachBackend } from '../support/backends.ts';
import { type Scrape, scrape, value } from '../support/metrics.ts';
import { pollUntil } from '../support/process.ts';
import { Receiver } from '../support/receiver.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

describeEachBackend('webhook metrics', (backend) => {
  let server: TestServer;
  let failing: Receiver;
  let answering: Receiver;
  before(async () => {
    server = await startTestServer({ webhooksAllowPrivate: true, metricsPort: 0, webhookRetryDelaysMs: [3_600_000] }, { backend });
    failing = await Receiver.start((_request, index, response) => response.writeHead(index === 0 ? 204 : 500).end());
    answering = await Receiver.start();
  });
  after(async () => {
    await server.stop();
    await failing.stop();
    await answering.stop();
  });

  const metrics = () => scrape(server.metricsUrl as string);
  const of = (scraped: Scrape, name: string, webhook: number) => value(scraped, name, { webhook: String(webhook) });

  it('counts attempts by outcome, and shows per webhook what it owes and for how long', async () => {
    const client = await server.client();
    await client.post('/v1/collections', { name: 'notes' });
    const stuck = (await client.post<{ id: number }>('/v1/webhooks', { url: failing.url })).body.id;
    const current = (await client.post<{ id: number }>('/v1/webhooks', { url: answering.url })).body.id;
    await client.post('/v1/collections/notes/rows', [{ n: 1 }, { n: 2 }, { n: 3 }]);
    await failing.waitFor(2);
    await answering.waitFor(3);
    await pollUntil(async () => {
      const scraped = await metrics();
      return (
        value(scraped, 'rowbase_webhook_deliveries_total', { outcome: 'failed' }) === 1 &&
        of(scraped, 'rowbase_webhook_pending_changes', current) === 0
      );
    }, 5000);
    const scraped = await metrics();
    expect(value(scraped, 'rowbase_webhook_deliveries_total', { outcome: 'delivered' })).to.equal(4);
    expect(of(scraped, 'rowbase_webhook_pending_changes', stuck)).to.equal(2);
    expect(of(scraped, 'rowbase_webhook_lag_seconds', stuck)).to.be.above(0);
    expect(of(scraped, 'rowbase_webhook_lag_seconds', current)).to.equal(0);
    expect(of(scraped, 'rowbase_webhook_dropped_changes_total', stuck)).to.equal(0);
    expect(value(scraped, 'rowbase_webhook_disabled_total')).to.equal(0);

    expect((await client.delete(`/v1/webhooks/${current}`)).status).to.equal(204);
    const after = await metrics();
    expect(after.text).to.include(`rowbase_webhook_pending_changes{webhook="${stuck}"} 2`);
    expect(after.text).not.to.include(`webhook="${current}"`);
  });
});
