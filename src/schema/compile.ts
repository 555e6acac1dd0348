// A collection's schema compiled into the function its rows are validated with: once for each version
// of the schema, never for each request (the caller keeps it beside the collection).
import { rowAjv } from './ajv.ts';
import { issueOf, type RowIssue } from './issues.ts';

declare const checked: unique symbol;

/** A schema checkRowSchema accepted: the only kind compileRowSchema compiles. */
export type RowSchema = Record<string, unknown> & { readonly [checked]: true };

export type { RowIssue };

/** The issues of a row's fields (without its `id`) against the schema: none for a valid row, at most maxRowIssues. */
export type RowValidator = (fields: Record<string, unknown>) => RowIssue[];

/** The most issues reported for one row: a row can fail in as many places as it has values, and the answer stays small. */
export const maxRowIssues = 100;

/**
 * Compiles a schema that checkRowSchema accepted. The validator is given a row's fields without `id`,
 * which is the service's and never validated: so `id` is taken out of the root's `required`, where a
 * schema may list it. Under `properties`, `id` declares an integer and never applies, as rows have no
 * `id` field to validate; an `additionalProperties` of the root never sees one either.
 *
 * Each validator has an Ajv of its own (rowAjv), which nothing else holds: dropping the validator frees
 * it, with everything compiled for it.
 */
export function compileRowSchema(schema: RowSchema): RowValidator {
  const validate = rowAjv().compile(withoutRequiredId(schema));
  return (fields) => {
    if (validate(fields)) return [];
    return (validate.errors ?? []).slice(0, maxRowIssues).map(issueOf);
  };
}

/**
 * Compiles a schema that checkRowSchema's other steps accepted as compileRowSchema does, to see that it
 * compiles (throws what Ajv throws), keeping nothing: with the options of a compile whose code never runs
 * (ajv.ts, rowAjv's `check`).
 */
export function checkCompiles(schema: RowSchema): void {
  rowAjv(true).compile(withoutRequiredId(schema));
}

/** The schema as the validator uses it: its root's `required` without `id`. The schema itself is left as it is. */
function withoutRequiredId(schema: Record<string, unknown>): Record<string, unknown> {
  const { required } = schema;
  return Array.isArray(required) ? { ...schema, required: required.filter((name) => name !== 'id') } : schema;
}
