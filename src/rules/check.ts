// What a collection's rules decide for one operation, one caller's claims and one row (openapi.yaml,
// checkCollectionRules; docs/access.md, "Checking rules"): allowed or not, and the rule or field that
// decided, evaluated in memory (src/query/evaluate.ts) as the rules will be on requests.
import { isDeepStrictEqual } from 'node:util';
import { compareCodePoints, matches, type Row } from '../query/evaluate.ts';
import type { JsonValue } from '../query/filter.ts';
import { setMember } from '../rows.ts';
import { type Access, type Claims, type CompiledField, type CompiledRule, type CompiledRules, claimOf } from './compile.ts';
import type { Operation } from './rules.ts';

/** A check asked for: `change` holds the fields an update sets (ignored for the other operations). */
export interface RulesCheck {
  operation: Operation;
  claims: Claims;
  row: { [field: string]: JsonValue };
  change?: { [field: string]: JsonValue };
}

export interface RulesCheckResult {
  allowed: boolean;
  reason: string;
  /** For a read allowed: the fields named in `fields` whose read rule hides them from this caller. */
  hidden?: string[];
}

/** A rule's decision on the rows it must hold for, as the reason names it (`read`, `fields.email.write`). */
export interface Decision {
  allowed: boolean;
  reason: string;
}

/**
 * What `rules` decide of `check`: the operation's rule must hold for the row (for an update, the row before
 * and after the change, the row merged with `change` at top level), and the write rule of each field the
 * create's row or the update's change sets (in code point order of their names), the first refusal deciding.
 */
export function checkAccess(rules: CompiledRules, { operation, claims, row: given, change }: RulesCheck): RulesCheckResult {
  let row = given;
  if (operation === 'create') {
    const filled = filledRow(rules.fields, claims, given);
    if ('refusal' in filled) return filled.refusal;
    row = filled.row;
  }
  const after = operation === 'update' ? { ...row, ...change } : row;
  const rows = operation === 'update' ? [row, after] : [row];
  const decided = decide(operation, rules.operations[operation], rules.operations[operation].access(claims), rows);
  if (!decided.allowed) return decided;
  if (operation === 'read') {
    const hidden = [...rules.fields]
      .filter(([, field]) => field.read && !decide('', field.read, field.read.access(claims), rows).allowed)
      .map(([name]) => name)
      .sort(compareCodePoints);
    return { ...decided, hidden };
  }
  if (operation === 'create' || operation === 'update') {
    const set = Object.keys(operation === 'create' ? row : (change ?? {})).sort(compareCodePoints);
    for (const name of set) {
      const write = rules.fields.get(name)?.write;
      if (!write || (operation === 'create' && isDefault(rules.fields.get(name), claims, row[name]))) continue;
      const field = decide(`fields.${name}.write`, write, write.access(claims), rows);
      if (!field.allowed) return field;
    }
  }
  return decided;
}

/** Whether `rule` (named `name`), whose access for the caller's claims is `access`, holds for every one of `rows`, and why. */
export function decide(name: string, rule: CompiledRule, access: Access, rows: readonly { readonly [field: string]: unknown }[]): Decision {
  if (access.kind === 'all') {
    return { allowed: true, reason: `${name}: ${rule.rule === true ? 'true allows every caller' : 'allowed to authenticated callers'}` };
  }
  if (access.kind === 'deny') {
    const why = access.why;
    if (why.kind === 'false') return { allowed: false, reason: `${name}: false denies every caller` };
    if (why.kind === 'anonymous') {
      const needs = why.claim === undefined ? '' : `: it names the claim ${why.claim}, and the caller has no token`;
      return { allowed: false, reason: `${name}: denied to anonymous callers${needs}` };
    }
    return { allowed: false, reason: `${name}: the claim ${why.claim} is missing or unfit for its operator, so the rule matches nothing` };
  }
  const written = JSON.stringify(rule.rule);
  for (const [index, each] of rows.entries()) {
    if (!matches(access.filter, each as Row)) {
      const which = rows.length === 1 ? 'the row' : index === 0 ? 'the row before the change' : 'the row after the change';
      return { allowed: false, reason: `${name}: ${which} does not match ${written} for these claims` };
    }
  }
  return { allowed: true, reason: `${name}: the row matches ${written} for these claims` };
}

/**
 * `row` as a create by a caller with `claims` writes it (docs/access.md, "Fields the token fills"): each
 * field with a `default` that the row leaves out set to its claim; or the refusal naming
 * `fields.<name>.default` when the caller has no such claim.
 */
export function filledRow<R extends { readonly [field: string]: unknown }>(
  fields: ReadonlyMap<string, CompiledField>,
  claims: Claims,
  row: R,
): { row: R } | { refusal: Decision } {
  let filled: R | undefined;
  for (const [name, field] of fields) {
    if (!field.default || Object.hasOwn(row, name)) continue;
    const value = claimOf(claims, field.default);
    if (value === undefined) {
      const claim = field.default.join('.');
      const why = claims === null ? `names the claim ${claim}, and the caller has no token` : `the token has no claim ${claim}`;
      return { refusal: { allowed: false, reason: `fields.${name}.default: ${why}, so the field cannot be filled` } };
    }
    filled ??= { ...row };
    // A field named __proto__ is a field like any other: defined, never set through the prototype.
    setMember(filled, name, value);
  }
  return { row: filled ?? row };
}

/**
 * Whether `value`, a new row's value of a field, is the claim the field's `default` names: the value the
 * service would set, which a caller may send as it is whatever the field's write rule.
 */
export function isDefault(field: CompiledField | undefined, claims: Claims, value: unknown): boolean {
  if (!field?.default) return false;
  const claim = claimOf(claims, field.default);
  return claim !== undefined && isDeepStrictEqual(claim, value);
}
