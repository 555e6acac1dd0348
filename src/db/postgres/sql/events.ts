// PostgreSQL's SQL of events: a change's events written (../../events/events.ts, appendEvents).
import type { EventsWrite, SqlValue } from '../../engine/dialect.ts';

/**
 * The events of one change as one statement of one text however many they are, so that each connection
 * parses and plans it once (../statements.ts, named statements): the rows' ids joined by commas, their
 * texts and the texts before joined by newlines (no row's JSON text holds one: each is as
 * JSON.stringify writes it), a row with none before an empty text, as unnest() pads the shorter list.
 * A VALUES row an event made a text for each number of events, each parsed and planned again on each
 * connection (docs/performance.md, "A cascade on PostgreSQL: its events as one text").
 */
export function insertEventsSql({ collectionId, first, type, at, rows, reason }: EventsWrite): { sql: string; params: SqlValue[] } {
  return {
    sql: `insert into events (collection_id, seq, type, row_id, row, previous, at, reason)
    select ?::integer, ?::bigint + e.ord - 1, ?, e.row_id::bigint, e.row, nullif(e.previous, ''), ?, ?
      from unnest(string_to_array(?::text, ','), string_to_array(?::text, chr(10)), string_to_array(?::text, chr(10)))
        with ordinality as e(row_id, row, previous, ord)`,
    params: [
      collectionId,
      first,
      type,
      at,
      reason ?? null,
      rows.map((row) => row.id).join(','),
      rows.map((row) => row.json).join('\n'),
      rows.map((row) => row.previous ?? '').join('\n'),
    ],
  };
}
