// A subscriber held to rules, on its own (src/feed/subscriber.ts, delivery.ts): a rule that throws on one
// change denies that change to that subscriber alone, is logged, and stops nothing else; rules that
// cannot be worked out show it nothing until they change; and a change's message is framed once for
// every subscriber shown the same. The server's rules cannot be made to throw (they are checked when
// set), so these rules are made here, as the feed would hold them.
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { expect } from 'chai';
import WebSocket, { WebSocketServer } from 'ws';
import type { StoredEvent } from '../../src/db/events/events.ts';
import { Delivery } from '../../src/feed/delivery.ts';
import { WebSocketSink } from '../../src/feed/sinks.ts';
import { type FeedCounts, Subscriber, type SubscriberOptions } from '../../src/feed/subscriber.ts';
import { type EndUser, type FeedView, feedView } from '../../src/feed/view.ts';
import { createLogger } from '../../src/log.ts';
import { Grant } from '../../src/rules/access.ts';
import { type CompiledRules, compileRules } from '../../src/rules/compile.ts';
import { type FeedMessage, messageProblem } from '../support/feed.ts';

const COLLECTION = 'notes';
const mine = { owner: { $auth: 'sub' } };

/** A committed change of row `id`, as the events table holds it. */
const event = (seq: number, type: StoredEvent['type'], row: StoredEvent['row'], previous?: StoredEvent['row']): StoredEvent => ({
  collectionId: 1,
  seq,
  type,
  row,
  previous,
  at: '2026-11-22T10:00:00.000Z',
});

/** A client of a Subscriber made here: every message it got (checked against asyncapi.yaml), and its socket. */
interface Connected {
  subscriber: Subscriber;
  messages: FeedMessage[];
  /** Resolves once `count` messages have come. */
  received(count: number): Promise<FeedMessage[]>;
  client: WebSocket;
}

describe('a subscriber held to rules', () => {
  let http: ReturnType<typeof createServer>;
  let url: string;
  const server = new WebSocketServer({ noServer: true, clientTracking: false, perMessageDeflate: false });
  const waiting: ((accepted: { websocket: WebSocket; socket: Duplex }) => void)[] = [];
  const logged: { level: number; msg: string; seq?: number }[] = [];
  const log = createLogger('info', { write: (line: string) => void logged.push(JSON.parse(line)) });
  const counts: FeedCounts = { messagesSent: 0, slowConsumerCloses: 0 };

  before(async () => {
    http = createServer();
    http.on('upgrade', (request, socket, head) => {
      server.handleUpgrade(request, socket, head, (websocket) => waiting.shift()?.({ websocket, socket }));
    });
    http.listen(0, '127.0.0.1');
    await once(http, 'listening');
    url = `ws://127.0.0.1:${(http.address() as AddressInfo).port}`;
  });
  after(() => {
    http.closeAllConnections();
    return new Promise<void>((resolve) => http.close(() => resolve()));
  });
  beforeEach(() => {
    logged.length = 0;
  });

  /** A live Subscriber of `view` (and `endUser`), whose client has had its `ready`. */
  async function connect(
    view: FeedView,
    endUser?: EndUser,
    rules: () => Promise<CompiledRules> = async () => compileRules({ read: true, create: false, update: false, delete: false, fields: {} }),
  ): Promise<Connected> {
    const accepted = new Promise<{ websocket: WebSocket; socket: Duplex }>((resolve) => waiting.push(resolve));
    const client = new WebSocket(url);
    const messages: FeedMessage[] = [];
    const invalid: string[] = [];
    client.on('message', (data) => {
      const problem = messageProblem(String(data));
      if (problem) invalid.push(problem);
      else messages.push(JSON.parse(String(data)));
      client.emit('counted');
    });
    const { websocket, socket } = await accepted;
    const options: SubscriberOptions = {
      collection: COLLECTION,
      kinds: ['insert', 'update', 'delete'],
      view,
      endUser,
      rules,
      maxBufferBytes: 1024 * 1024,
      readEvents: async () => [],
      latestSeq: async () => 0,
      counts,
      log,
    };
    const subscriber = new Subscriber(new WebSocketSink(websocket, socket, log), options);
    subscriber.start(0);
    const received = async (count: number) => {
      while (messages.length < count + 1) await once(client, 'counted');
      expect(invalid).to.deep.equal([]);
      return messages.slice(1);
    };
    await received(0);
    return { subscriber, messages, received, client };
  }

  const close = async ({ client }: Connected) => {
    const closed = once(client, 'close');
    client.close();
    await closed;
  };

  it('denies a change its rule throws on to that subscriber alone, logs it, and delivers the next', async () => {
    // As a rule that fails to evaluate on one row: its test throws there.
    const throwing: FeedView = {
      test: (row) => {
        if (row.boom === true) throw new TypeError('the rule cannot be evaluated on this row');
        return true;
      },
    };
    const [failing, other] = await Promise.all([connect(throwing), connect(feedView(undefined, undefined))]);
    const deliveries = [
      event(1, 'insert', { id: 1, n: 1 }),
      event(2, 'insert', { id: 2, boom: true }),
      event(3, 'update', { id: 1, n: 2 }, { id: 1, n: 1 }),
    ].map((each) => new Delivery(COLLECTION, each));
    for (const subscriber of [failing.subscriber, other.subscriber]) subscriber.deliver(deliveries);
    other.subscriber.deliver([new Delivery(COLLECTION, event(4, 'delete', { id: 1, n: 2 }))]);
    failing.subscriber.deliver([new Delivery(COLLECTION, event(4, 'delete', { id: 1, n: 2 }))]);
    expect((await failing.received(3)).map((message) => 'seq' in message && message.seq)).to.deep.equal([1, 3, 4]);
    expect((await other.received(4)).map((message) => 'seq' in message && message.seq)).to.deep.equal([1, 2, 3, 4]);
    const failed = logged.filter((line) => line.msg === 'feed rules failed on a change: not sent to this subscriber');
    expect(
      failed.map(({ level, seq }) => ({ level, seq })),
      'one error, of the one change',
    ).to.deep.equal([{ level: 50, seq: 2 }]);
    expect(failing.subscriber.open && other.subscriber.open).to.equal(true);
    await Promise.all([close(failing), close(other)]);
  });

  it('shows nothing while its rules cannot be worked out for its claims, and follows them once they can', async () => {
    const good = compileRules({ read: mine, create: false, update: false, delete: false, fields: {} });
    const broken: CompiledRules = {
      ...good,
      operations: {
        ...good.operations,
        read: {
          rule: mine,
          access: () => {
            throw new RangeError('claims past what the rule can read');
          },
        },
      },
    };
    const endUser: EndUser = { claims: { sub: 'ada' }, rules: good };
    const connected = await connect(feedView(undefined, new Grant(good, endUser.claims, COLLECTION)), endUser);
    connected.subscriber.useRules(broken);
    connected.subscriber.deliver([new Delivery(COLLECTION, event(1, 'insert', { id: 1, owner: 'ada' }))]);
    expect(logged.map((line) => line.msg)).to.include('feed rules could not be worked out for a subscriber');
    connected.subscriber.useRules(compileRules({ read: mine, create: false, update: false, delete: false, fields: {} }));
    connected.subscriber.deliver([
      new Delivery(COLLECTION, event(2, 'insert', { id: 2, owner: 'ada' })),
      new Delivery(COLLECTION, event(3, 'insert', { id: 3, owner: 'bob' })),
    ]);
    expect((await connected.received(1)).map((message) => 'seq' in message && message.seq)).to.deep.equal([2]);
    expect(connected.subscriber.open).to.equal(true);
    await close(connected);
  });
});

describe('a delivery', () => {
  const rules = compileRules({ read: mine, create: false, update: false, delete: false, fields: { email: { read: mine } } });
  const update = new Delivery(
    COLLECTION,
    event(7, 'update', { id: 1, owner: 'ada', email: 'a@example.com' }, { id: 1, owner: 'ada', n: 1 }),
  );
  const viewOf = (sub: string) => feedView(undefined, new Grant(rules, { sub }, COLLECTION));

  it('frames a message once for every subscriber it shows the same, whatever their grants', () => {
    const [first, second] = [viewOf('ada'), viewOf('ada')];
    expect(first.grant).not.to.equal(second.grant);
    const frame = update.frameFor(first);
    expect(frame).to.equal(update.frameFor(second));
    const plain = feedView(undefined, undefined);
    expect(update.frameFor(plain)).to.equal(update.frameFor(feedView(undefined, undefined)));
    expect(update.frameFor(viewOf('bob'))).to.equal(undefined);
  });

  it('keeps the one frame of every subscriber whose rules read every row and hide nothing', () => {
    const open = compileRules({ read: true, create: false, update: false, delete: false, fields: {} });
    const view = feedView(undefined, new Grant(open, null, COLLECTION));
    expect(view.grant, 'nothing of the rows depends on the grant').to.equal(undefined);
    expect(update.frameFor(view)).to.equal(update.frameFor(feedView(undefined, undefined)));
  });
});
