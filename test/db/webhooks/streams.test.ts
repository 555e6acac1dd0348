// The webhooks' streams in the data layer (src/db/webhooks/streams.ts): acknowledgements that wait together are
// committed in one statement, each against its own lease.
import { expect } from 'chai';
import type { Attempt } from '../../../src/db/webhooks/deliveries.ts';
import { describeEachBackend } from '../../support/backends.ts';
import { startTestServer, type TestServer } from '../../support/server.ts';

describeEachBackend('webhook streams (data layer)', (backend) => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer({ webhooksAllowPrivate: true }, { backend });
  });
  after(() => server.stop());

  it('acknowledges the streams that wait together each against its own lease: those the owner holds, and only those', async () => {
    const client = await server.client('acks');
    await client.post('/v1/collections', { name: 'acked' });
    const hooks: number[] = [];
    for (let i = 0; i < 4; i++) {
      const made = await client.post<{ id: number }>('/v1/webhooks', { url: 'http://127.0.0.1:9/hook', collections: ['acked'] });
      hooks.push(made.body.id);
      // Disabled: the worker claims none of them, and the test holds their leases itself.
      await client.patch(`/v1/webhooks/${made.body.id}`, { enabled: false });
    }
    await client.post('/v1/collections/acked/rows', [{ n: 1 }]);
    const accountId = (await server.store.findPrincipal(client.key as string))?.accountId as number;
    const { collectionId } = await server.store.feedStart(accountId, 'acked');
    const leaseUntil = new Date(Date.now() + 60_000).toISOString();
    for (const [index, webhookId] of hooks.entries()) {
      await server.store
        .knex('webhook_streams')
        .where({ webhook_id: webhookId })
        .update({ lease_owner: index % 2 === 0 ? 'mine' : 'another', lease_until: leaseUntil });
    }
    const attempt = (webhookId: number): Attempt => ({
      collection: 'acked',
      seq: 1,
      webhook_id: `msg_${webhookId}_${collectionId}_1`,
      attempt: 1,
      outcome: 'delivered',
      status: 200,
      duration_ms: 1,
      error: null,
      next_attempt_at: null,
      at: new Date().toISOString(),
    });

    // All at once: the first two go each in a group of its own, the others wait, and go together.
    const held = await Promise.all(
      hooks.map((webhookId) =>
        server.store.ackStream({ webhookId, collectionId, ackedSeq: 0, attempt: 0 }, 'mine', 1, leaseUntil, attempt(webhookId)),
      ),
    );

    expect(held).to.deep.equal([true, false, true, false]);
    const streams = await server.store.knex('webhook_streams').whereIn('webhook_id', hooks).orderBy('webhook_id');
    expect(streams.map((s) => Number(s.acked_seq))).to.deep.equal([1, 0, 1, 0]);
    const logged = await server.store.knex('webhook_deliveries').whereIn('webhook_id', hooks).orderBy('webhook_id');
    expect(logged.map((d) => Number(d.webhook_id))).to.deep.equal([hooks[0], hooks[2]]);
  });
});
