// A webhook receiver for tests: a real HTTP server on 127.0.0.1 that keeps every request it is sent,
// checks it against asyncapi.yaml's `webhook` channel, and answers as the test says. Tests wait for
// requests to arrive, never for a fixed time.
import { createHmac } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { deliveryProblem } from './feed.ts';

export interface Received {
  headers: IncomingHttpHeaders;
  body: string;
}

/** How the receiver answers the `index`th request (from 0): by default 204. */
export type Answer = (request: Received, index: number, response: ServerResponse) => void;

export class Receiver {
  readonly received: Received[] = [];
  /** Why requests received break asyncapi.yaml (its `webhook` channel): a test fails at its next wait. */
  readonly problems: string[] = [];
  private waiters: { count: number; resolve: () => void }[] = [];
  private constructor(
    private readonly server: Server,
    public answer: Answer,
  ) {}

  static async start(answer: Answer = (_request, _index, response) => response.writeHead(204).end()): Promise<Receiver> {
    const server = createServer();
    const receiver = new Receiver(server, answer);
    server.on('request', (request: IncomingMessage, response: ServerResponse) => {
      let body = '';
      request.setEncoding('utf8');
      request.on('data', (chunk: string) => (body += chunk));
      request.on('end', () => {
        const received = { headers: request.headers, body };
        const problem = deliveryProblem(request.headers, body);
        if (problem !== undefined) receiver.problems.push(problem);
        const index = receiver.received.push(received) - 1;
        const met = receiver.waiters.filter((waiter) => receiver.received.length >= waiter.count);
        receiver.waiters = receiver.waiters.filter((waiter) => !met.includes(waiter));
        for (const waiter of met) waiter.resolve();
        receiver.answer(received, index, response);
      });
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    return receiver;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/hook`;
  }

  /** The bodies received, parsed. */
  get messages(): Record<string, unknown>[] {
    return this.received.map(({ body }) => JSON.parse(body));
  }

  /** Resolves once `count` requests have arrived in all; rejects when one broke asyncapi.yaml. */
  async waitFor(count: number): Promise<void> {
    if (this.received.length < count) await new Promise<void>((resolve) => this.waiters.push({ count, resolve }));
    if (this.problems.length > 0) throw new Error(`a delivery breaks asyncapi.yaml: ${this.problems[0]}`);
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }
}

/** The signature Standard Webhooks gives `received` when signed with `secret` (`whsec_` and base64): what its `webhook-signature` must be. */
export function signatureOf(secret: string, { headers, body }: Received): string {
  const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
  return `v1,${createHmac('sha256', key).update(`${headers['webhook-id']}.${headers['webhook-timestamp']}.${body}`).digest('base64')}`;
}
