// SQLite: making a sort index (../sort-indexes.ts) in steps. The rows' later keys are kept by the
// triggers of every write (sql/). Made in one pass, the index of a large collection would hold the
// writer, and with it every account's writes, until it was done; a step holds it briefly, and the
// writes queued meanwhile go between two steps.

import { collectionNotFound } from '../../errors.ts';
import type { Dialect } from '../engine/dialect.ts';
import type { GroupedWrites } from '../engine/grouping.ts';
import { type SortedEntry, slotOf } from '../engine/sorted.ts';
import { setSortedSql } from '../engine/sql/collections.ts';
import {
  countersSql,
  dropKeysFromSlotSql,
  dropSlotKeysSql,
  dropStringKeysSql,
  dropTouchedKeysSql,
  keysSql,
  oldestEventSql,
  touchedRows,
} from './sql/collections.ts';

/** The rows an index's making keys in one write at most. */
export const SORT_INDEX_STEP_ROWS = 5000;

type Counters = { id: number | string; last_row_id: number | string; last_seq: number | string; sorted: string };

/**
 * Makes sort indexes one at a time per collection, so that two never take the same slot. The slot is
 * listed in `sorted` only at the end, so until then no page reads it and no write keeps it: the last
 * step keys again every row an event says was written since the first (inserted, patched or deleted
 * meanwhile), then lists the slot, in one write. Keys of the slot left by a making cut short (the
 * process ended) are dropped first.
 */
export class SortIndexMaker {
  /** The index being made of each collection in this process. */
  private readonly making = new Map<string, Promise<number>>();

  constructor(
    private readonly db: Dialect,
    private readonly writes: GroupedWrites,
  ) {}

  /** The slot of `field`'s sort index (a field's or a pair's) in the account's collection `name`, made now if it has none; -1 when it has `max`. */
  async make(accountId: number, name: string, field: SortedEntry, max: number): Promise<number> {
    const key = `${accountId}/${name}`;
    const before = this.making.get(key) ?? Promise.resolve(-1);
    const made = before.catch(() => -1).then(() => this.inSteps(accountId, name, field, max));
    this.making.set(key, made);
    try {
      return await made;
    } finally {
      if (this.making.get(key) === made) this.making.delete(key);
    }
  }

  private async inSteps(accountId: number, name: string, field: SortedEntry, max: number): Promise<number> {
    const { db, writes } = this;
    const start = await writes.run(async (trx) => {
      const [found] = await db.run<Counters>(trx, countersSql, [accountId, name]);
      if (!found) throw collectionNotFound(name);
      const sorted = JSON.parse(found.sorted) as SortedEntry[];
      const slot = slotOf(sorted, field);
      if (slot >= 0 || sorted.length >= max) return { slot };
      await db.run(trx, dropKeysFromSlotSql, [found.id, sorted.length]);
      return { slot: sorted.length, id: Number(found.id), lastRowId: Number(found.last_row_id), lastSeq: Number(found.last_seq) };
    });
    if (start.id === undefined) return start.slot;
    const { id, slot, lastRowId, lastSeq } = start;
    for (let from = 1; from <= lastRowId; from += SORT_INDEX_STEP_ROWS) {
      const to = Math.min(lastRowId, from + SORT_INDEX_STEP_ROWS - 1);
      const { sql, bindings } = keysSql(field, 'r.id between ? and ?', id);
      await writes.run((trx) => db.run(trx, sql, [id, slot, ...bindings, id, from, to]));
    }
    return writes.run(async (trx) => {
      const [found] = await db.run<Counters>(trx, countersSql, [accountId, name]);
      // Deleted meanwhile (and maybe made again): its keys went with it.
      if (!found || Number(found.id) !== id) return -1;
      const sorted = JSON.parse(found.sorted) as SortedEntry[];
      if (sorted.length !== slot) throw new Error(`the sort index of ${name} in slot ${slot} was made twice at once`);
      const [{ oldest }] = await db.run<{ oldest: number | null }>(trx, oldestEventSql, [id]);
      if (Number(found.last_seq) > lastSeq && (oldest === null || Number(oldest) > lastSeq + 1)) {
        // Events of the writes made meanwhile are pruned already: every row is keyed again.
        await db.run(trx, dropSlotKeysSql, [id, slot]);
        const { sql, bindings } = keysSql(field, 'r.id between 1 and ?', id);
        await db.run(trx, sql, [id, slot, ...bindings, id, Number(found.last_row_id)]);
      } else {
        await db.run(trx, dropTouchedKeysSql, [id, slot, id, lastSeq]);
        const { sql, bindings } = keysSql(field, `r.id in ${touchedRows}`, id);
        await db.run(trx, sql, [id, slot, ...bindings, id, id, lastSeq]);
      }
      await db.run(trx, setSortedSql, [JSON.stringify([...sorted, field]), id]);
      // The strings of the field's unique index are the sort index's to keep from now on (a pair keeps none).
      if (typeof field === 'string') await db.run(trx, dropStringKeysSql, [id, field]);
      return slot;
    });
  }
}
