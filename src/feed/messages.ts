// The one bridge from stored events to the messages of the feed channel in asyncapi.yaml; the message
// types are generated from that document (`npm run generate`).
import type { CollectionDeletedMessage, FeedMessage, ReadyMessage } from '../../generated/asyncapi.ts';
import type { EventType, StoredEvent } from '../db/events/events.ts';

export type ChangeMessage = Extract<FeedMessage, { type: EventType }>;

/** Every kind of change, in the order `ready.events` lists them. */
export const eventKinds: readonly EventType[] = ['insert', 'update', 'delete'];

export const readyMessage = (collection: string, events: EventType[], seq: number): ReadyMessage => ({
  type: 'ready',
  collection,
  events,
  seq,
});

/**
 * The message of a committed change. A delete by the sweeper says it expired (`reason`). An update carries the row as it was (`previous`) when its event
 * kept it, and, with `left`, `"matches": false`: to a filtered subscriber, the row left its view.
 */
export function changeMessage(
  collection: string,
  event: Pick<StoredEvent, 'type' | 'seq' | 'at' | 'row' | 'previous' | 'reason'>,
  left = false,
): ChangeMessage {
  const { type, seq, at, row, previous } = event;
  if (type === 'delete' && event.reason) return { type, collection, seq, at, row, reason: event.reason };
  if (type !== 'update') return { type, collection, seq, at, row };
  const message: ChangeMessage = { type, collection, seq, at, row };
  if (previous) message.previous = previous;
  if (left) message.matches = false;
  return message;
}

/**
 * JSON.stringify(changeMessage(collection, event, left)): made of the texts of the event's rows as stored
 * (StoredEvent.texts), which are JSON.stringify's of those rows, where it has them (an event read from the
 * table): no row parsed, none written again.
 */
export function changeMessageJson(collection: string, event: StoredEvent, left = false): string {
  const { type, seq, at, texts } = event;
  if (!texts) return JSON.stringify(changeMessage(collection, event, left));
  const head = `{"type":"${type}","collection":${JSON.stringify(collection)},"seq":${seq},"at":${JSON.stringify(at)},"row":${texts.row}`;
  if (type === 'delete' && event.reason) return `${head},"reason":${JSON.stringify(event.reason)}}`;
  if (type !== 'update') return `${head}}`;
  return `${head}${texts.previous === undefined ? '' : `,"previous":${texts.previous}`}${left ? ',"matches":false' : ''}}`;
}

export const collectionDeletedMessage = (collection: string): CollectionDeletedMessage => ({ type: 'collection_deleted', collection });

/**
 * The close codes the server sends (asyncapi.yaml, `x-close-codes` of the feed channel). `ws` itself
 * closes with 1009 when a client message exceeds `maxPayload`.
 */
export const closeCodes = {
  shuttingDown: { code: 1001, reason: 'server shutting down' },
  internal: { code: 1011, reason: 'internal error' },
  slowConsumer: { code: 4008, reason: 'slow consumer' },
  keyRevoked: { code: 4401, reason: 'key revoked' },
  keyExpired: { code: 4401, reason: 'key expired' },
  tokenExpired: { code: 4401, reason: 'token expired' },
  tokenRefused: { code: 4401, reason: 'token refused' },
  rulesChanged: { code: 4403, reason: 'rules changed' },
  collectionDeleted: { code: 4404, reason: 'collection deleted' },
  gone: { code: 4410, reason: 'gone' },
} as const;

export type CloseCode = (typeof closeCodes)[keyof typeof closeCodes];
