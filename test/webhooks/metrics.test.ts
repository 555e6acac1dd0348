// The webhooks' metrics (docs/operations.md, "Metrics"): attempts by outcome, and the changes owed with
// the age of the oldest, over every webhook. The receiver is on 127.0.0.1.
import { expect } from 'chai';
import { describeEachBackend } from '../support/backends.ts';
import { scrape, value } from '../support/metrics.ts';
import { pollUntil } from '../support/process.ts';
import { Receiver } from '../support/receiver.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

describeEachBackend('webhook metrics', (backend) => {
  let server: TestServer;
  let receiver: Receiver;
  before(async () => {
    server = await startTestServer({ webhooksAllowPrivate: true, metricsPort: 0, webhookRetryDelaysMs: [3_600_000] }, { backend });
    receiver = await Receiver.start((_request, index, response) => response.writeHead(index === 0 ? 204 : 500).end());
  });
  after(async () => {
    await server.stop();
    await receiver.stop();
  });

  it('counts attempts by outcome, and shows what is owed and for how long', async () => {
    const client = await server.client();
    await client.post('/v1/collections', { name: 'notes' });
    await client.post('/v1/webhooks', { url: receiver.url });
    await client.post('/v1/collections/notes/rows', [{ n: 1 }, { n: 2 }, { n: 3 }]);
    await receiver.waitFor(2);
    const metricsUrl = server.metricsUrl as string;
    await pollUntil(async () => value(await scrape(metricsUrl), 'rowbase_webhook_deliveries_total', { outcome: 'failed' }) === 1, 5000);
    const scraped = await scrape(metricsUrl);
    expect(value(scraped, 'rowbase_webhook_deliveries_total', { outcome: 'delivered' })).to.equal(1);
    expect(value(scraped, 'rowbase_webhook_pending_changes')).to.equal(2);
    expect(value(scraped, 'rowbase_webhook_lag_seconds')).to.be.above(0);
    expect(value(scraped, 'rowbase_webhook_disabled_total')).to.equal(0);
  });
});
