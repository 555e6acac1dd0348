// Receivers that hang, trickle, answer without end or reset the connection (docs/webhooks.md,
// "Receivers"): each attempt is cut off at ROWBASE_WEBHOOK_TIMEOUT_MS, or once 64 KiB of its answer is
// read, and logged as failed, while another webhook's deliveries go on. All receivers are on 127.0.0.1.
import type { ServerResponse } from 'node:http';
import { expect } from 'chai';
import { describeEachBackend } from '../support/backends.ts';
import type { Client } from '../support/client.ts';
import { pollUntil } from '../support/process.ts';
import { type Answer, Receiver } from '../support/receiver.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

const TIMEOUT_MS = 1000;

interface Delivery {
  outcome: string;
  status: number | null;
  error: string | null;
  duration_ms: number;
}

/** Writes `chunk` to `response` every `ms` until the connection ends. */
function keepWriting(response: ServerResponse, chunk: string | Buffer, ms: number): void {
  const timer = setInterval(() => {
    if (response.destroyed || response.writableEnded) clearInterval(timer);
    else response.write(chunk);
  }, ms);
  response.on('close', () => clearInterval(timer));
}

const hostile: [string, Answer, (delivery: Delivery) => void][] = [
  ['hangs', () => {}, (d) => expect(d).to.include({ status: null, error: 'timed out' })],
  [
    'trickles its answer',
    (_request, _index, response) => {
      response.writeHead(500, { 'content-type': 'text/plain' });
      keepWriting(response, '.', 20);
    },
    (d) => expect(d).to.include({ status: 500 }),
  ],
  [
    'answers without end',
    (_request, _index, response) => {
      response.writeHead(500, { 'content-type': 'application/octet-stream' });
      keepWriting(response, Buffer.alloc(256 * 1024, 1), 1);
    },
    // Cut off once 64 KiB were read, long before the timeout.
    (d) => {
      expect(d).to.include({ status: 500, error: 'answered 500' });
      expect(d.duration_ms).to.be.below(TIMEOUT_MS);
    },
  ],
  [
    'resets the connection',
    (_request, _index, response) => response.socket?.resetAndDestroy(),
    (d) => expect(d).to.include({ status: null }).and.property('error').that.is.a('string'),
  ],
];

describeEachBackend('webhooks to hostile receivers', (backend) => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer(
      { webhooksAllowPrivate: true, webhookTimeoutMs: TIMEOUT_MS, webhookRetryDelaysMs: [60_000] },
      { backend },
    );
  });
  after(() => server.stop());

  for (const [behaviour, answer, check] of hostile) {
    it(`cuts off one that ${behaviour} within the timeout, and holds up no other webhook`, async () => {
      const bad = await Receiver.start(answer);
      const good = await Receiver.start();
      try {
        const client: Client = await server.client();
        await client.post('/v1/collections', { name: 'notes' });
        const badHook = (await client.post<{ id: number }>('/v1/webhooks', { url: bad.url })).body;
        await client.post('/v1/webhooks', { url: good.url });
        const started = performance.now();
        await client.post('/v1/collections/notes/rows', [{ n: 1 }]);
        await bad.waitFor(1);
        await good.waitFor(1);
        // The good one got its change while the bad one's attempt was under way, or cut off.
        expect(performance.now() - started).to.be.below(TIMEOUT_MS);
        let logged: Delivery[] = [];
        await pollUntil(async () => {
          logged = (await client.get<{ deliveries: Delivery[] }>(`/v1/webhooks/${badHook.id}/deliveries`)).body.deliveries;
          return logged.length > 0;
        }, TIMEOUT_MS * 3);
        expect(logged[0].outcome).to.equal('failed');
        expect(logged[0].duration_ms).to.be.below(TIMEOUT_MS + 500);
        check(logged[0]);
      } finally {
        await bad.stop();
        await good.stop();
      }
    });
  }
});
