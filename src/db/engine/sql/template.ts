// SQL as values: text with its bindings (`Sql`), written by a template (`sql`), and the conditions every
// builder joins (`allOf`, `anyOf`). Every value placed in a template is a binding, never text; `raw` is
// for the text the code makes. The ground of the builders both dialects share (filter.ts, pages.ts).
import type { SqlValue } from '../dialect.ts';

/** SQL and its bindings, one for each `?` in it, in order. */
export type Sql = { sql: string; params: SqlValue[] };

/** SQL from a template: an Sql placed in it brings its text and bindings, any other value is a binding. */
export function sql(strings: TemplateStringsArray, ...values: (Sql | SqlValue)[]): Sql {
  let text = strings[0];
  const params: SqlValue[] = [];
  for (let index = 0; index < values.length; index++) {
    const value = values[index];
    if (value !== null && typeof value === 'object') {
      text += value.sql;
      for (const param of value.params) params.push(param);
    } else {
      text += '?';
      params.push(value);
    }
    text += strings[index + 1];
  }
  return { sql: text, params };
}

/** A statement whose text is written once (template()), its bindings made anew at each use. */
export interface Template<K extends string> {
  sql: string;
  /** The statement's bindings, each hole's from `values`, the others as the text was written with. */
  bind(values: Record<K, SqlValue>): SqlValue[];
}

/**
 * A statement written once by `make`, with a hole for each of `names`: an Sql of one binding, placed as
 * any other value is. One text serves every use, and `bind` fills the holes: the values that change from
 * one use to the next are bindings, as every value is, never text.
 */
export function template<K extends string>(names: readonly K[], make: (holes: Record<K, Sql>) => Sql): Template<K> {
  // Each hole's binding is an object of its own, found again by identity in the statement's bindings.
  const marks = new Map<unknown, K>();
  const holes = {} as Record<K, Sql>;
  for (const name of names) {
    const mark = { hole: name };
    marks.set(mark, name);
    holes[name] = { sql: '?', params: [mark as unknown as SqlValue] };
  }
  const { sql: text, params } = make(holes);
  const at = params.map((param) => marks.get(param));
  return {
    sql: text,
    bind(values) {
      const bound = params.slice();
      for (let index = 0; index < at.length; index++) {
        const name = at[index];
        if (name !== undefined) bound[index] = values[name];
      }
      return bound;
    },
  };
}

/** SQL text the code makes (a table's alias, an operator's sign), never a client's. */
export const raw = (text: string): Sql => ({ sql: text, params: [] });

export const TRUE = raw('true');
export const FALSE = raw('false');

/**
 * Every one of `parts`, `true` when there are none. Nested in halves, so that a long list nests no
 * deeper than its logarithm: SQLite refuses an expression nested past a thousand levels.
 */
export const allOf = (parts: Sql[]) => joined(parts, 'and', TRUE);

/** Any one of `parts`, `false` when there are none; nested as allOf() nests. */
export const anyOf = (parts: Sql[]) => joined(parts, 'or', FALSE);

function joined(parts: Sql[], op: 'and' | 'or', none: Sql): Sql {
  if (parts.length === 0) return none;
  if (parts.length === 1) return parts[0];
  const half = parts.length >> 1;
  return sql`(${joined(parts.slice(0, half), op, none)}) ${raw(op)} (${joined(parts.slice(half), op, none)})`;
}

/** `parts` one after another, `separator` between each two (a list's commas, a union's `union all`). */
export const listOf = (parts: readonly Sql[], separator: string): Sql => ({
  sql: parts.map((part) => part.sql).join(separator),
  params: parts.flatMap((part) => part.params),
});
