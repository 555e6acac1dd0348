// The rows that live (docs/expiry.md): a request's change or delete by filter reaches no expired row.
import { expiryNow } from '../../expiry/ttl.ts';
import { liveWhereSql } from '../engine/sql/expiry.ts';
import type { Sql } from '../engine/sql/template.ts';

/** `where`, of the rows that have not expired by now. */
export const liveWhere = (where: Sql): Sql => ({ sql: liveWhereSql(where.sql), params: [...where.params, expiryNow()] });
