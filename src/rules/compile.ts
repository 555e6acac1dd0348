// A collection's rules compiled once per rules version (docs/access.md, "Rules"): for the claims of a
// verified token, or null for an anonymous caller, each operation's rule, and each field's, is `deny`,
// `all`, or a filter (src/query/filter.ts's tree) in which every `$auth` is the claim's value.
//
// The tree is built from the one readFilter() read of the rule, its placeholders replaced by the claims'
// values as operands: a claim is always a value, never an operator (a claim holding `{"$ne": null}` is
// compared equal to that object), and no claim's content is ever read as a filter. A rule naming a claim
// the token lacks matches nothing.
import type { FieldCondition, Filter, JsonValue } from '../query/filter.ts';
import { readFilter } from '../query/filter.ts';
import { type ClaimSlot, OPERATIONS, type Operation, type Rule, type Rules, ruleFilter } from './rules.ts';

/** The claims of a verified end-user token, a plain JSON object; null for an anonymous caller. */
export type Claims = { readonly [claim: string]: JsonValue } | null;

/** What a rule grants a caller: nothing, every row, or the rows that match `filter`. */
export type Access = { kind: 'deny'; why: DenyReason } | { kind: 'all' } | { kind: 'filter'; filter: Filter };

/**
 * Why a rule denies a caller: it is `false`; it is `"authenticated"`, or names `claim`, and the caller is
 * anonymous; or a claim it names is missing from the token (or of no use to its operator).
 */
type DenyReason = { kind: 'false' } | { kind: 'anonymous'; claim?: string } | { kind: 'claim'; claim: string };

/** A field's rules, compiled: an absent one follows the row's rule. `default`: the path of the claim an insert fills it with. */
export interface CompiledField {
  read?: CompiledRule;
  write?: CompiledRule;
  default?: readonly string[];
}

/** One rule, compiled: its access for a caller's claims, and the rule as written (for the reasons of a check). */
export interface CompiledRule {
  rule: Rule;
  access(claims: Claims): Access;
}

export interface CompiledRules {
  operations: Record<Operation, CompiledRule>;
  /** By field name, the fields `fields` names. */
  fields: ReadonlyMap<string, CompiledField>;
}

const ALL: Access = { kind: 'all' };

/** `rules` (checked already: checkRules) compiled: each filter read once, its claims filled in per call. */
export function compileRules(rules: Rules): CompiledRules {
  const operations = Object.fromEntries(OPERATIONS.map((operation) => [operation, compileRule(rules[operation])])) as Record<
    Operation,
    CompiledRule
  >;
  const fields = new Map<string, CompiledField>();
  for (const [name, own] of Object.entries(rules.fields)) {
    const field: CompiledField = {};
    if (own.read !== undefined) field.read = compileRule(own.read);
    if (own.write !== undefined) field.write = compileRule(own.write);
    if (own.default !== undefined) field.default = own.default.$auth.split('.');
    fields.set(name, field);
  }
  return { operations, fields };
}

/** The rules of a collection that has none: nothing is allowed (docs/access.md, "Rules"). */
export const NO_ACCESS = compileRules({ read: false, create: false, update: false, delete: false, fields: {} });

function compileRule(rule: Rule): CompiledRule {
  if (rule === true) return { rule, access: () => ALL };
  if (rule === false) return { rule, access: () => ({ kind: 'deny', why: { kind: 'false' } }) };
  if (rule === 'authenticated') return { rule, access: (claims) => (claims === null ? { kind: 'deny', why: { kind: 'anonymous' } } : ALL) };
  const { value, slots } = ruleFilter(rule);
  const read = readFilter(value);
  if (read.errors) throw new Error('compileRules was given rules checkRules refuses');
  const template = read.filter;
  if (slots.size === 0) return { rule, access: () => ({ kind: 'filter', filter: template }) };
  // A rule naming a claim needs a token: without one it is refused as "authenticated" is, never an empty
  // answer that would hide the token's absence (docs/access.md, "End-user tokens on requests").
  const named = [...slots.values()][0].path.join('.');
  return {
    rule,
    access(claims) {
      if (claims === null) return { kind: 'deny', why: { kind: 'anonymous', claim: named } };
      const missing: string[] = [];
      const filter = fill(template, slots, claims, missing);
      return missing.length > 0 ? { kind: 'deny', why: { kind: 'claim', claim: missing[0] } } : { kind: 'filter', filter };
    },
  };
}

/** `filter` with each placeholder the value of its claim; a claim missing, or unfit for its operator, is added to `missing`. */
function fill(filter: Filter, slots: Map<object, ClaimSlot>, claims: Claims, missing: string[]): Filter {
  switch (filter.kind) {
    case 'and':
    case 'or':
      return { kind: filter.kind, filters: filter.filters.map((each) => fill(each, slots, claims, missing)) };
    case 'not':
      return { kind: 'not', filter: fill(filter.filter, slots, claims, missing) };
    case 'search':
    case 'related':
      return filter; // none in a rule (rules.ts refuses them)
    default:
      return { ...filter, operand: operandOf(filter, slots, claims, missing) } as FieldCondition;
  }
}

function operandOf(condition: FieldCondition, slots: Map<object, ClaimSlot>, claims: Claims, missing: string[]): JsonValue {
  const { operand } = condition;
  if (operand === null || typeof operand !== 'object') return operand;
  const slot = slots.get(operand);
  if (slot) {
    const value = claimOf(claims, slot.path);
    // The whole operand of $in or $nin is a claim that must be an array.
    if (value === undefined || (slot.spread && !Array.isArray(value))) missing.push(slot.path.join('.'));
    return value ?? null;
  }
  if (!Array.isArray(operand)) return operand;
  return operand.map((item) => {
    const itemSlot = item !== null && typeof item === 'object' ? slots.get(item) : undefined;
    if (!itemSlot) return item;
    const value = claimOf(claims, itemSlot.path);
    if (value === undefined) missing.push(itemSlot.path.join('.'));
    return value ?? null;
  });
}

/** The claim at `path`, through plain objects only and their own members (never a prototype's); undefined when absent. */
export function claimOf(claims: Claims, path: readonly string[]): JsonValue | undefined {
  let value: JsonValue | undefined = claims;
  for (const key of path) {
    if (value === null || typeof value !== 'object' || Array.isArray(value) || !Object.hasOwn(value, key)) return undefined;
    value = value[key];
  }
  return value;
}

/** Compiled rules kept at most; the least recently used is dropped first (and compiled again if needed). */
const MAX_COMPILED = 1000;

/** Rules compiled once per version, kept by collection id and version (a version is never reused by its collection). */
export class CompiledRulesCache {
  private readonly compiled = new Map<string, CompiledRules>();

  /** The compiled rules of version `version` of collection `collectionId`, compiled from `rules` the first time. */
  get(collectionId: number, version: number, rules: Rules): CompiledRules {
    const key = `${collectionId}/${version}`;
    const kept = this.compiled.get(key);
    if (kept) this.compiled.delete(key);
    const compiled = kept ?? compileRules(rules);
    this.compiled.set(key, compiled);
    if (this.compiled.size > MAX_COMPILED) this.compiled.delete(this.compiled.keys().next().value as string);
    return compiled;
  }
}
