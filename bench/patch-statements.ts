// rowbase's statements of patches as the bare patch server (baseline-patch.ts) and patch-cost.ts run
// them: patchSql() says which statement a group of its size takes, and each distinct text is prepared
// once, so that both group as rowbase does whatever rule patchSql() follows.
import { patchSql } from '../src/db/sqlite-procedures.ts';

/** rowbase's statements for groups of patches that set one field, each prepared once with `prepare`. */
export function patchStatements<S>(prepare: (sql: string) => S) {
  const prepared = new Map<string, S>();
  return {
    /** The statement for a group of `size` patches. */
    forGroup(size: number): S {
      const sql = patchSql(1, size);
      let statement = prepared.get(sql);
      if (statement === undefined) {
        statement = prepare(sql);
        prepared.set(sql, statement);
      }
      return statement;
    },
    /** Every statement prepared so far. */
    prepared: () => [...prepared.values()],
  };
}
