import type { Knex } from 'knex';
import { insertMany } from './insert.ts';
import type { Row } from './rows.ts';

export type EventType = 'insert' | 'update' | 'delete';

export interface StoredEvent {
  collectionId: number;
  seq: number;
  type: EventType;
  row: Row;
  at: string;
}

/**
 * Writes the events of one change inside its transaction. `lastSeq` is the collection's seq after the
 * change, so the events take the consecutive numbers that end there.
 */
export async function appendEvents(
  trx: Knex.Transaction,
  collectionId: number,
  lastSeq: number,
  type: EventType,
  rows: Row[],
): Promise<StoredEvent[]> {
  const at = new Date().toISOString();
  const first = lastSeq - rows.length + 1;
  const events = rows.map((row, index) => ({ collectionId, seq: first + index, type, row, at }));
  const values = events.map((event) => [collectionId, event.seq, type, event.row.id, JSON.stringify(event.row), at]);
  await insertMany(trx, 'events', ['collection_id', 'seq', 'type', 'row_id', 'row', 'at'], values);
  return events;
}
