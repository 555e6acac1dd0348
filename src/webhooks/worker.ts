// The delivery worker (docs/webhooks.md): a loop over the event log with a cursor and a lease per
// webhook and collection (a stream, db/webhooks/streams.ts), its state in the database, so that a crash loses
// nothing: a stream's next change is sent until acknowledged, and only then the one after it. Woken by
// every committed change (db/changes.ts; on PostgreSQL other instances' too), by the retries falling
// due, by a webhook made, enabled again or asked to retry on this instance, and every second, for the
// leases of instances that died and what it was not told of.
import { randomUUID } from 'node:crypto';
import type { Config } from '../config.ts';
import type { StoredEvent } from '../db/events/events.ts';
import type { Store } from '../db/open-store.ts';
import type { ClaimedStream, StreamTarget } from '../db/webhooks/streams.ts';
import { viewOf } from '../feed/delivery.ts';
import { changeMessageJson } from '../feed/messages.ts';
import type { Logger } from '../log.ts';
import { compileFilter, type RowTest } from '../query/evaluate.ts';
import { parseFilter } from '../query/filter.ts';
import { Sender } from './send.ts';

/** How often the worker looks for due streams it was not woken for, in ms. */
const POLL_MS = 1000;
/** Streams one instance delivers at once. */
const MAX_STREAMS = 64;
/** Events read at once from a stream's collection. */
const EVENTS_PER_READ = 100;
/** How long a collection's new streams are not looked for again after a look, in ms (startCollectionStreams). */
const STREAMS_CHECKED_MS = 10_000;
/** The lease beyond the timeout of the attempt under way: a dead instance's streams are taken over this long after its last attempt would have ended. */
const LEASE_MARGIN_MS = 5000;

export interface WorkerOptions {
  store: Store;
  config: Pick<Config, 'webhookTimeoutMs' | 'webhooksAllowPrivate' | 'webhookRetryDelaysMs'>;
  log: Logger;
}

/** The `webhook-id` of a change to a webhook: the same on every attempt, by every instance. */
const messageId = (webhookId: number, collectionId: number, seq: number) => `msg_${webhookId}_${collectionId}_${seq}`;

/** The delay before the next attempt after `attempt` attempts failed, with ±20% jitter; undefined past the schedule. */
function retryDelay(delays: readonly number[], attempt: number): number | undefined {
  const base = delays[attempt - 1];
  return base === undefined ? undefined : Math.round(base * (0.8 + Math.random() * 0.4));
}

export class WebhookWorker {
  /** This instance, as the leases it holds name it. */
  readonly owner = randomUUID();
  private readonly sender: Sender;
  private readonly leaseMs: number;
  private readonly streams = new Set<Promise<void>>();
  private readonly checked = new Map<number, number>();
  private readonly retryTimers = new Set<NodeJS.Timeout>();
  private readonly poll: NodeJS.Timeout;
  private claiming: Promise<void> | undefined;
  private claimingNow = false;
  private again = false;
  private stopped = false;
  /** Whether any webhook is enabled, as last looked: while none is, nothing is claimed, and changes are not listened for. */
  private any = false;
  /** Attempts made by this instance, by outcome, and the webhooks it disabled (metrics.ts). */
  readonly counts = { delivered: 0, failed: 0, disabled: 0 };

  constructor(private readonly options: WorkerOptions) {
    const { config } = options;
    this.sender = new Sender(config.webhookTimeoutMs, config.webhooksAllowPrivate);
    this.leaseMs = config.webhookTimeoutMs + LEASE_MARGIN_MS;
    this.poll = setInterval(this.look, POLL_MS);
    this.poll.unref();
    options.store.changes.on('webhooks', this.look);
    this.look();
  }

  /**
   * Looks whether any webhook is enabled: only then does the worker listen for changes, so that a
   * service without webhooks spends nothing on them per write. Then looks for what is due.
   */
  private readonly look = (): void => {
    this.checked.clear();
    const { store, log } = this.options;
    store
      .anyWebhook()
      .then(
        async (any) => {
          if (this.stopped) return;
          if (any !== this.any) {
            if (any) store.changes.on('change', this.onChange).on('all', this.wake);
            else store.changes.off('change', this.onChange).off('all', this.wake);
            this.any = any;
            // Collections made while it did not listen have had their first change unheard.
            if (any) await store.startMissingStreams();
          }
          this.wake();
        },
        (error) => log.error({ err: error }, 'webhooks: could not look for webhooks'),
      )
      .catch((error) => log.error({ err: error }, 'webhooks: could not start the streams of new collections'));
  };

  /** Stops claiming, waits for the attempts under way, and lets their streams go. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.poll);
    for (const timer of this.retryTimers) clearTimeout(timer);
    this.options.store.changes.off('change', this.onChange);
    this.options.store.changes.off('all', this.wake);
    this.options.store.changes.off('webhooks', this.look);
    await this.claiming;
    await Promise.allSettled([...this.streams]);
    await this.sender.close();
  }

  private readonly onChange = (collectionId: number): void => {
    if (this.stopped) return;
    const now = Date.now();
    if ((this.checked.get(collectionId) ?? 0) > now - STREAMS_CHECKED_MS) {
      this.wake();
      return;
    }
    this.checked.set(collectionId, now);
    this.options.store.startCollectionStreams(collectionId).then(this.wake, (error) => {
      this.options.log.error({ err: error }, 'webhooks: could not start the streams of a collection');
    });
  };

  /** Something may be due: claim it (after the claim under way, if any). */
  readonly wake = (): void => {
    this.again = true;
    if (this.claimingNow || this.stopped) return;
    this.claimingNow = true;
    this.claiming = this.claim();
  };

  /** Claims until nothing more was asked for. */
  private async claim(): Promise<void> {
    try {
      while (this.again && !this.stopped && this.any) {
        this.again = false;
        const room = MAX_STREAMS - this.streams.size;
        if (room <= 0) return; // a stream ending wakes the worker again
        const now = Date.now();
        let claimed: ClaimedStream[];
        try {
          claimed = await this.options.store.claimStreams(this.owner, iso(now), iso(now + this.leaseMs), room);
        } catch (error) {
          this.options.log.error({ err: error }, 'webhooks: could not claim streams');
          return;
        }
        for (const stream of claimed) {
          const delivering: Promise<void> = this.deliver(stream)
            .catch((error) => this.options.log.error({ err: error, webhook: stream.webhookId }, 'webhooks: delivery failed'))
            .finally(() => {
              this.streams.delete(delivering);
              this.wake();
            });
          this.streams.add(delivering);
        }
      }
    } finally {
      // In the turn `again` was last read: a wake-up from now on starts a claim of its own.
      this.claimingNow = false;
    }
  }

  /** Delivers the stream's changes, one after another, until it has sent them all, or one failed, or it lost the lease. */
  private async deliver(stream: ClaimedStream): Promise<void> {
    const { store, log } = this.options;
    let acked = stream.ackedSeq;
    let attempt = stream.attempt;
    for (;;) {
      if (this.stopped) return store.releaseStream(stream, this.owner);
      // Read again for each page of events: a change of its settings, its secret or whether it is
      // enabled holds from the next page on.
      const target = await store.streamTarget(stream.webhookId, stream.collectionId);
      if (!target?.enabled) return store.releaseStream(stream, this.owner);
      const test = testOf(target.filter);
      const events = await store.readEvents(stream.collectionId, { after: acked, limit: EVENTS_PER_READ });
      if (events.length === 0) return store.releaseStream(stream, this.owner);
      if (events[0].seq !== acked + 1) {
        // Pruned past the backlog before they could be sent (db/events/retention.ts): counted, and passed.
        log.warn({ webhook: stream.webhookId, after: acked, next: events[0].seq }, 'webhooks: events dropped past the backlog');
        await store.skipDropped({ ...stream, ackedSeq: acked }, this.owner, events[0].seq - 1);
        acked = events[0].seq - 1;
      }
      let passed = acked;
      for (const event of events) {
        const message = messageFor(target, event, test);
        if (!message) {
          passed = event.seq;
          continue;
        }
        attempt++;
        const id = messageId(stream.webhookId, stream.collectionId, event.seq);
        const sent = await this.sender.send(target.url, target.secret, id, message);
        const now = Date.now();
        const logged = {
          collection: target.collection,
          seq: event.seq,
          webhook_id: id,
          attempt,
          status: sent.status,
          duration_ms: sent.durationMs,
          error: sent.error,
          at: iso(now),
        };
        this.counts[sent.ok ? 'delivered' : 'failed']++;
        if (sent.ok) {
          const held = await store.ackStream(stream, this.owner, event.seq, iso(now + this.leaseMs), {
            ...logged,
            outcome: 'delivered',
            next_attempt_at: null,
          });
          if (!held) return;
          acked = passed = event.seq;
          attempt = 0;
          continue;
        }
        const delay = retryDelay(this.options.config.webhookRetryDelaysMs, attempt);
        const next = delay === undefined ? null : iso(now + delay);
        const reason = delay === undefined ? `its deliveries failed ${attempt} times in a row, the last: ${sent.error}` : undefined;
        await store.failStream(stream, this.owner, { ...logged, outcome: 'failed', next_attempt_at: next }, reason);
        if (delay !== undefined) this.wakeIn(delay);
        else this.counts.disabled++;
        return;
      }
      if (passed > acked) {
        if (!(await store.ackStream(stream, this.owner, passed, iso(Date.now() + this.leaseMs)))) return;
        acked = passed;
      }
    }
  }

  private wakeIn(ms: number): void {
    const timer = setTimeout(() => {
      this.retryTimers.delete(timer);
      this.wake();
    }, ms);
    timer.unref();
    this.retryTimers.add(timer);
  }
}

/**
 * The JSON of the message a webhook is sent of `event`, as the feed would send it with its kinds and
 * filter (made of the rows' stored texts, which only a filter's test parses), or undefined when it takes none.
 */
function messageFor(
  target: Pick<StreamTarget, 'events' | 'collection'>,
  event: StoredEvent,
  test: RowTest | undefined,
): string | undefined {
  if (!target.events.includes(event.type)) return undefined;
  const view = viewOf(event, test);
  return view && changeMessageJson(target.collection, event, view === 'left');
}

const iso = (ms: number) => new Date(ms).toISOString();

/** The test of a webhook's filter (its JSON), or undefined for every row. */
function testOf(filter: unknown): RowTest | undefined {
  if (filter === null) return undefined;
  try {
    return compileFilter(parseFilter(filter));
  } catch {
    return () => false; // checked when set; a filter the service no longer reads matches nothing
  }
}
