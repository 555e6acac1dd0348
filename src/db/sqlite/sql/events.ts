// SQLite's SQL of events: a change's events written (../../events/events.ts, appendEvents).
import type { EventsWrite, SqlValue } from '../../engine/dialect.ts';

/**
 * The events of one change as one INSERT of a row of values each: collection, seq, type, row id, row,
 * the row before (or null), time, and the reason with one. SQLite prepares each such text once
 * (../writer.ts, StatementCache); its limit of 32,766 bound values holds a statement of
 * EVENTS_PER_STATEMENT events (../../events/events.ts).
 */
export function insertEventsSql({ collectionId, first, type, at, rows, reason }: EventsWrite): { sql: string; params: SqlValue[] } {
  const columns = reason === undefined ? '' : ', reason';
  const values = reason === undefined ? '(?, ?, ?, ?, ?, ?, ?)' : '(?, ?, ?, ?, ?, ?, ?, ?)';
  const params = rows.flatMap((row, index) => {
    const event: SqlValue[] = [collectionId, first + index, type, row.id, row.json, row.previous ?? null, at];
    return reason === undefined ? event : [...event, reason];
  });
  return {
    sql: `insert into events (collection_id, seq, type, row_id, row, previous, at${columns}) values ${Array.from(rows, () => values).join(', ')}`,
    params,
  };
}
