// The handlers of the `webhooks` tag: webhooks, their test sends and delivery logs.
import type { components } from '../../generated/openapi.ts';
import type { Principal } from '../db/accounts/keys.ts';
import type { EventType } from '../db/events/events.ts';
import type { Store } from '../db/open-store.ts';
import type { Webhook as StoredWebhook, WebhookSettings } from '../db/webhooks/settings.ts';
import { conflict, forbidden, notFound, validationFailed } from '../errors.ts';
import { answerOnce } from '../idempotency/answers.ts';
import { holdsRelated, holdsSearch, parseFilter, relatedRefused } from '../query/filter.ts';
import { urlProblem } from '../webhooks/address.ts';
import type { Handlers, Result } from './types.ts';

type Webhook = components['schemas']['Webhook'];
type WebhookPatch = components['schemas']['WebhookPatch'];

/** Every kind of change, as a webhook takes them when it names none. */
const allKinds: EventType[] = ['insert', 'update', 'delete'];

// The account's webhooks (openapi.yaml, the `webhooks` tag; docs/webhooks.md), managed by its admin
// keys. The delivery is the worker's (src/webhooks/worker.ts).
export const webhookHandlers: Handlers<
  | 'listWebhooks'
  | 'createWebhook'
  | 'getWebhook'
  | 'updateWebhook'
  | 'deleteWebhook'
  | 'rotateWebhookSecret'
  | 'listWebhookDeliveries'
  | 'retryWebhookDelivery'
> = {
  async listWebhooks({ principal }, { store }) {
    const webhooks = (await store.listWebhooks(principal.accountId)).filter((webhook) => reaches(principal, webhook));
    return { status: 200, body: await Promise.all(webhooks.map((webhook) => shown(store, webhook))) };
  },

  async createWebhook({ principal, body, once }, { store, config }) {
    const settings = await settingsOf(body, undefined, principal, config.webhooksAllowPrivate);
    const made = await store.createWebhook(
      principal.accountId,
      settings,
      config.maxWebhooksPerAccount,
      once && answerOnce(once, answerCreated),
    );
    return answerCreated(made);
  },

  async getWebhook({ principal, path }, { store }) {
    return { status: 200, body: await shown(store, await webhookOf(store, principal, path.webhook_id)) };
  },

  async updateWebhook({ principal, path, body }, { store, config }) {
    const current = await webhookOf(store, principal, path.webhook_id);
    const settings = await settingsOf(body, current, principal, config.webhooksAllowPrivate);
    const enabled = body.enabled ?? current.enabled;
    const updated = await store.updateWebhook(principal.accountId, path.webhook_id, () => ({ ...settings, enabled }));
    if (!updated) throw webhookNotFound(path.webhook_id);
    return { status: 200, body: await shown(store, updated) };
  },

  async deleteWebhook({ principal, path, once }, { store }) {
    await webhookOf(store, principal, path.webhook_id);
    if (!(await store.deleteWebhook(principal.accountId, path.webhook_id, once && answerOnce(once, answerDeleted)))) {
      throw webhookNotFound(path.webhook_id);
    }
    return answerDeleted();
  },

  async rotateWebhookSecret({ principal, path, once }, { store }) {
    await webhookOf(store, principal, path.webhook_id);
    const secret = await store.rotateWebhookSecret(principal.accountId, path.webhook_id, once && answerOnce(once, answerRotated));
    if (secret === undefined) throw webhookNotFound(path.webhook_id);
    return answerRotated(secret);
  },

  async listWebhookDeliveries({ principal, path, query }, { store }) {
    await webhookOf(store, principal, path.webhook_id);
    const page = await store.listWebhookDeliveries(path.webhook_id, query.before, query.limit + 1);
    const deliveries = page.slice(0, query.limit);
    const next = page.length > query.limit ? deliveries[deliveries.length - 1].id : null;
    return { status: 200, body: { deliveries, next } };
  },

  async retryWebhookDelivery({ principal, path }, { store }) {
    await webhookOf(store, principal, path.webhook_id);
    const outcome = await store.retryWebhookDelivery(principal.accountId, path.webhook_id, path.delivery_id);
    if (outcome === 'absent') throw notFound(`Webhook ${path.webhook_id} has no delivery ${path.delivery_id} in its log.`);
    if (outcome === 'delivered') throw conflict(`The change of delivery ${path.delivery_id} is delivered already.`);
    return { status: 202 };
  },
};

// The answers of the writes an Idempotency-Key may replay, each made by one function, which the write
// is also handed to store the answer it makes (http/idempotency.ts; idempotency/answers.ts, answerOnce). A webhook
// just made owes nothing yet, and has made no attempt.

function answerCreated(made: StoredWebhook & { secret: string }): Result {
  return { status: 201, body: { ...made, state: { pending: 0, failing_since: null, dropped: 0 } } };
}

function answerRotated(secret: string): Result {
  return { status: 200, body: { secret } };
}

function answerDeleted(): Result {
  return { status: 204 };
}

const webhookNotFound = (id: number) => notFound(`There is no webhook ${id}.`);

/** The account's webhook `id`, or 404 when it has none, or one of collections the key does not reach. */
async function webhookOf(store: Store, principal: Principal, id: number): Promise<StoredWebhook> {
  const webhook = await store.getWebhook(principal.accountId, id);
  if (!webhook || !reaches(principal, webhook)) throw webhookNotFound(id);
  return webhook;
}

/**
 * Whether the key reaches every collection of the webhook: a key limited to collections sees only the
 * webhooks it could have made, as it sees only such keys (openapi.yaml, the `keys` tag).
 */
function reaches(principal: Principal, webhook: StoredWebhook): boolean {
  const reached = principal.collections;
  return reached === null || (webhook.collections?.every((name) => reached.has(name)) ?? false);
}

/** The webhook as answered, with how its deliveries stand. */
async function shown(store: Store, webhook: StoredWebhook): Promise<Webhook> {
  const { last_delivery, ...state } = await store.webhookState(webhook.id);
  return {
    ...webhook,
    filter: webhook.filter as Webhook['filter'],
    state: last_delivery === null ? state : { ...state, last_delivery },
  };
}

/**
 * The settings a request asks for, over `current` (a change) or the defaults (a new webhook): 400 for a
 * URL the rules refuse or a filter that is none, 403 for collections the key does not reach.
 */
async function settingsOf(
  body: WebhookPatch,
  current: StoredWebhook | undefined,
  principal: Principal,
  allowPrivate: boolean,
): Promise<WebhookSettings> {
  const url = body.url ?? (current?.url as string);
  if (body.url !== undefined) {
    const problem = await urlProblem(body.url, allowPrivate);
    if (problem) throw validationFailed(`The url ${problem}.`, [{ in: 'body', name: '/url', message: problem }]);
  }
  let collections = body.collections === undefined ? (current?.collections ?? defaultCollections(principal)) : body.collections;
  if (collections !== null) collections = [...collections];
  if (principal.collections) {
    if (collections === null) throw forbidden('This key is limited to collections: a webhook it makes or changes must name them.');
    const outside = collections.find((name) => !principal.collections?.has(name));
    if (outside !== undefined) throw forbidden(`This key is not limited to ${outside}.`);
  }
  const events = body.events === undefined ? (current?.events ?? allKinds) : allKinds.filter((kind) => body.events?.includes(kind));
  const filter = body.filter === undefined ? (current?.filter ?? null) : body.filter;
  const parsed = filter !== null && body.filter !== undefined ? parseFilter(filter, { in: 'body', name: '/filter' }) : undefined;
  if (parsed && holdsRelated(parsed))
    throw validationFailed(relatedRefused("A webhook's"), [
      { in: 'body', name: '/filter', message: "holds $match or $some: a webhook's filter names fields of the row and their values" },
    ]);
  if (parsed && holdsSearch(parsed)) {
    // A webhook may follow several collections, each with its own search index, or none.
    throw validationFailed('A webhook filter may not search.', [
      { in: 'body', name: '/filter', message: "holds $search: a webhook's filter names fields and their values" },
    ]);
  }
  const description = body.description === undefined ? (current?.description ?? null) : body.description;
  return { url, collections, events, filter, description };
}

/** The collections a key reaches: those it is limited to, or null for every one. */
const defaultCollections = (principal: Principal): string[] | null => (principal.collections ? [...principal.collections] : null);
