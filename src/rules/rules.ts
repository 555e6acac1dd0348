// A collection's rules (openapi.yaml, Rules; docs/access.md, "Rules"): what a caller holding a publishable
// key may read and write, as data. checkRules() refuses a body that is no rules with a 400 naming each
// place wrong by a JSON Pointer into it; compile.ts makes them into answers for a caller's claims.
//
// A rule is `false` (no one), `true` (anyone holding the publishable key), `"authenticated"` (any caller
// with a verified end-user token) or a filter of the query language (src/query/filter.ts) whose values may
// name a claim of the token: `{"$auth": "sub"}`, or a dotted path into the claims (`"app_metadata.org"`).
import { type FieldError, validationFailed } from '../errors.ts';
import { type FilterError, isObject, type JsonValue, pointerToken, readFilter, relatedRefused } from '../query/filter.ts';
import { setMember } from '../rows.ts';

export type Rule = boolean | 'authenticated' | { [key: string]: JsonValue };

/** A field's value from the caller's token: `{"$auth": "sub"}`, a claim's name or a dotted path into the claims. */
interface ClaimDefault {
  $auth: string;
}

/**
 * A field's own rules: one that is absent follows the row's rule of the operation. `default`: the claim a
 * caller's insert fills the field with when its row leaves the field out (docs/access.md, "Fields the
 * token fills").
 */
interface FieldRules {
  read?: Rule;
  write?: Rule;
  default?: ClaimDefault;
}

/** A collection's rules as stored: every operation's rule, `false` when the body left it out. */
export interface Rules {
  read: Rule;
  create: Rule;
  update: Rule;
  delete: Rule;
  fields: { [field: string]: FieldRules };
}

export const OPERATIONS = ['read', 'create', 'update', 'delete'] as const;
export type Operation = (typeof OPERATIONS)[number];

/** A body of rules, as JSON.stringify writes it, weighs this many bytes of UTF-8 at most. */
export const MAX_RULES_BYTES = 16 * 1024;
/** Fields named in `fields` at most. */
export const MAX_RULE_FIELDS = 64;
/** A claim's path is this many characters at most. */
const MAX_CLAIM_PATH = 256;

/**
 * Where a rule's filter names a claim: each placeholder that stands for `{"$auth": path}` in the copy of the
 * filter readFilter() reads, by identity (readFilter keeps operands as given, never copies them).
 * `spread`: the placeholder is the whole operand of `$in` or `$nin`, an array the claim must be.
 */
export interface ClaimSlot {
  path: readonly string[];
  spread: boolean;
}

/** A rule's filter with its `$auth`s made placeholders, and where each stands: what compile.ts reads. */
export interface RuleFilter {
  value: { [key: string]: unknown };
  slots: Map<object, ClaimSlot>;
}

/** The error of a rule's filter through a relation, which the 400's detail says why of (relatedRefused()). */
const THROUGH_RELATION = "reaches into related rows: a rule's filter names fields of the row and their values";

/**
 * `body` as rules, members left out made `false` (and `fields` `{}`), or a 400 validation_failed whose
 * errors each name a place in the body (`/read/owner/$auth`, `/fields/email/read`).
 */
export function checkRules(body: unknown): Rules {
  const errors: FilterError[] = [];
  const rules = readRules(body, errors);
  if (errors.length > 0 || !rules) {
    const related = errors.some(({ message }) => message === THROUGH_RELATION);
    throw validationFailed(
      related ? `The rules are not valid: ${relatedRefused("a rule's")}` : 'The rules are not valid.',
      errors.map(({ pointer, message }): FieldError => ({ in: 'body', name: pointer, message })),
    );
  }
  return rules;
}

function readRules(body: unknown, errors: FilterError[]): Rules | undefined {
  if (!isObject(body)) {
    errors.push({ pointer: '', message: 'must be a JSON object' });
    return undefined;
  }
  if (new TextEncoder().encode(JSON.stringify(body)).length > MAX_RULES_BYTES) {
    errors.push({ pointer: '', message: `must be at most ${MAX_RULES_BYTES} bytes as JSON` });
    return undefined;
  }
  const rules: Rules = { read: false, create: false, update: false, delete: false, fields: {} };
  for (const [key, value] of Object.entries(body)) {
    const pointer = `/${pointerToken(key)}`;
    if ((OPERATIONS as readonly string[]).includes(key)) {
      checkRule(value, pointer, errors);
      rules[key as Operation] = value as Rule;
    } else if (key === 'fields') {
      rules.fields = readFields(value, pointer, errors);
    } else {
      errors.push({ pointer, message: 'is not a member of rules: read, create, update, delete, fields' });
    }
  }
  return rules;
}

function readFields(value: unknown, pointer: string, errors: FilterError[]): Rules['fields'] {
  const fields: Rules['fields'] = {};
  if (!isObject(value)) {
    errors.push({ pointer, message: 'must be an object of fields, each with its read and write rules' });
    return fields;
  }
  const names = Object.keys(value);
  if (names.length > MAX_RULE_FIELDS) {
    errors.push({ pointer, message: `names ${names.length} fields, and may name ${MAX_RULE_FIELDS} at most` });
    return fields;
  }
  for (const [name, rules] of Object.entries(value)) {
    const at = `${pointer}/${pointerToken(name)}`;
    if (name === '' || name === 'id') {
      errors.push({ pointer: at, message: name === '' ? 'is no field name' : "is the row's id, which only the row's rules govern" });
      continue;
    }
    if (!isObject(rules)) {
      errors.push({ pointer: at, message: 'must be an object: {"read": <rule>, "write": <rule>}' });
      continue;
    }
    const own: FieldRules = {};
    for (const [key, rule] of Object.entries(rules)) {
      const ruleAt = `${at}/${pointerToken(key)}`;
      if (key === 'default') {
        if (checkDefault(rule, ruleAt, errors)) own.default = { $auth: rule.$auth };
      } else if (key === 'read' || key === 'write') {
        checkRule(rule, ruleAt, errors);
        own[key] = rule as Rule;
      } else errors.push({ pointer: ruleAt, message: "is not a member of a field's rules: read, write, default" });
    }
    // A field named __proto__ is a field like any other: defined, never assigned through the prototype.
    setMember(fields, name, own);
  }
  return fields;
}

/** Whether `value` is a field's default, `{"$auth": "<claim>"}`; what is wrong with it, at `pointer`, added to `errors`. */
function checkDefault(value: unknown, pointer: string, errors: FilterError[]): value is ClaimDefault {
  if (!isAuth(value)) {
    errors.push({
      pointer,
      message: 'must be {"$auth": "<claim>"}: a field\'s default is a claim of the caller\'s token, such as {"$auth": "sub"}',
    });
    return false;
  }
  const path = claimPath(value.$auth);
  if (typeof path !== 'string') return true;
  errors.push({ pointer: `${pointer}/$auth`, message: path });
  return false;
}

/** Collects what is wrong with `value` as a rule at `pointer`. */
function checkRule(value: unknown, pointer: string, errors: FilterError[]): void {
  if (typeof value === 'boolean' || value === 'authenticated') return;
  if (!isObject(value)) {
    errors.push({ pointer, message: 'must be false, true, "authenticated" or a filter' });
    return;
  }
  ruleFilter(value, pointer, errors);
}

/**
 * The rule's filter `value` with every `{"$auth": path}` made a placeholder, read by readFilter() to find
 * what the language refuses; the errors found (at `pointer` in the body) are added to `errors`.
 */
export function ruleFilter(value: { [key: string]: unknown }, pointer = '', errors: FilterError[] = []): RuleFilter {
  const slots = new Map<object, ClaimSlot>();
  const found: FilterError[] = [];
  const copy = new Placeholders(slots, found).filter(value, '');
  const read = readFilter(copy);
  if (read.errors) found.push(...read.errors);
  for (const error of found) errors.push({ pointer: pointer + error.pointer, message: error.message });
  return { value: copy, slots };
}

/** Copies a rule's filter, each `$auth` in it made a placeholder, and refuses `$auth` where no value may be. */
class Placeholders {
  constructor(
    private readonly slots: Map<object, ClaimSlot>,
    private readonly errors: FilterError[],
  ) {}

  filter(value: { [key: string]: unknown }, pointer: string): { [key: string]: unknown } {
    const copy: { [key: string]: unknown } = {};
    for (const [key, member] of Object.entries(value)) {
      const at = `${pointer}/${pointerToken(key)}`;
      let copied = member;
      if (key.includes('$auth')) {
        const message =
          key === '$auth'
            ? "names a claim, a value: it may stand for a condition's value, not a filter"
            : 'is a field path naming $auth: a claim is a value, never a field';
        this.errors.push({ pointer: at, message });
        continue;
      }
      if (key === '$search') {
        // A rule holds for a row whatever the collection's search index is, which may change or go.
        this.errors.push({ pointer: at, message: "is a search: a rule's filter names fields and their values" });
        continue;
      }
      if (!key.startsWith('$') && isObject(member) && (Object.hasOwn(member, '$match') || Object.hasOwn(member, '$some'))) {
        // A rule is tested on a row alone, in memory too (the feed), where no related row is at hand.
        this.errors.push({ pointer: at, message: THROUGH_RELATION });
        continue;
      }
      if ((key === '$and' || key === '$or') && Array.isArray(member)) {
        copied = member.map((item, index) => (isObject(item) ? this.filter(item, `${at}/${index}`) : item));
      } else if (key === '$not' && isObject(member)) copied = this.filter(member, at);
      else if (!key.startsWith('$')) copied = this.condition(member, at);
      setMember(copy, key, copied);
    }
    return copy;
  }

  /** A field's condition: a value (which may be a claim), or an object of operators. */
  private condition(value: unknown, pointer: string): unknown {
    if (isAuth(value)) return this.slot(value, pointer, false);
    if (!isObject(value) || !Object.keys(value).some((key) => key.startsWith('$'))) return this.plain(value, pointer);
    const copy: { [key: string]: unknown } = {};
    for (const [op, operand] of Object.entries(value)) {
      const at = `${pointer}/${pointerToken(op)}`;
      let copied: unknown;
      if (op === '$auth') {
        this.errors.push({ pointer: at, message: 'must be alone in its object: {"$auth": "<claim>"}' });
      } else if (isAuth(operand)) {
        if (!['$eq', '$ne', '$contains', '$in', '$nin'].includes(op)) {
          const message = 'names a claim where none may be: compare with a claim through $eq, $ne, $in, $nin or $contains';
          this.errors.push({ pointer: `${at}/$auth`, message });
          continue;
        }
        copied = this.slot(operand, at, op === '$in' || op === '$nin');
      } else if ((op === '$in' || op === '$nin') && Array.isArray(operand)) {
        copied = operand.map((item, index) =>
          isAuth(item) ? this.slot(item, `${at}/${index}`, false) : this.plain(item, `${at}/${index}`),
        );
      } else copied = this.plain(operand, at);
      if (op !== '$auth') setMember(copy, op, copied ?? operand);
    }
    return copy;
  }

  /** A placeholder for the claim `{"$auth": path}` at `pointer`, or the value unchanged if the path is wrong. */
  private slot(value: { $auth: unknown }, pointer: string, spread: boolean): unknown {
    const path = claimPath(value.$auth);
    if (typeof path === 'string') {
      this.errors.push({ pointer: `${pointer}/$auth`, message: path });
      // Refused once: readFilter() is handed a value, not the $auth it would refuse again.
      return spread ? [] : {};
    }
    const placeholder = spread ? [] : {};
    this.slots.set(placeholder, { path, spread });
    return placeholder;
  }

  /** A value compared as it is: `$auth` anywhere inside it is refused, a claim being a whole value. */
  private plain(value: unknown, pointer: string): unknown {
    if (value === null || typeof value !== 'object') return value;
    for (const [key, item] of Object.entries(value)) {
      const at = `${pointer}/${pointerToken(key)}`;
      if (key === '$auth' && !Array.isArray(value)) {
        this.errors.push({
          pointer: at,
          message: 'names a claim inside a value: a claim may stand only for a whole value, or an item of $in and $nin',
        });
      } else this.plain(item, at);
    }
    return value;
  }
}

/** The keys of a claim's dotted path, or what is wrong with it. */
function claimPath(value: unknown): readonly string[] | string {
  const wrong = 'must be a claim\'s name or a dotted path into the claims, such as "sub" or "app_metadata.org"';
  if (typeof value !== 'string' || value.length === 0 || value.length > MAX_CLAIM_PATH) return wrong;
  const keys = value.split('.');
  return keys.includes('') ? wrong : keys;
}

const isAuth = (value: unknown): value is { $auth: unknown } =>
  isObject(value) && Object.keys(value).length === 1 && Object.hasOwn(value, '$auth');
