// PostgreSQL's SQL of relations (../../relations/, docs/relations.md).
import { idList } from './collections.ts';

/**
 * Which of the ids `?` (joined by commas) are rows of the collection `?`, each held FOR KEY SHARE until
 * the write's commit: a delete of one waits for the write, and a write that comes after a delete waits
 * for it, then finds the row gone. Held in id order.
 */
export const existingIdsSql = `select id from rows where collection_id = ? and ${idList} order by id for key share`;
