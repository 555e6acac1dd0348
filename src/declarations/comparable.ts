// The account's documents as api-smart-diff is given them (contract.ts, docs/declarations.md, "The
// contract's diff"): the parts that hold no change and bear on none left out of both, and the `$ref`s it
// is not to follow compared by what they name. api-smart-diff follows every `$ref` it meets and reports a
// change of the type it names again at every path that reaches it, through as many `$ref`s as it took,
// each report a copy with its own path: how many reports a change makes is how many ways there are to reach
// it, which grows with every type on the way that names the next twice (exponentially with their depth).
import { rowTypeName } from '../contract/names.ts';
import type { ContractKind } from '../contract/served.ts';
import { canonical } from './model.ts';

/**
 * The document as api-smart-diff compares it: an OpenAPI document as it is; an AsyncAPI 3 document, which
 * it does not read (it reads AsyncAPI 2), as the JSON Schema whose $defs are its schemas, its messages'
 * payloads among them, whose changes it classifies as a JSON Schema's. The maps the parts that hold no
 * change are left out of (withoutSamePaths, withoutSameComponents) are its own; the rest is the
 * document's, shared with the base documents, and not changed.
 */
export function comparable(kind: ContractKind, document: { paths?: object; components?: Record<string, object> }): object {
  if (kind === 'asyncapi') return { $schema: 'https://json-schema.org/draft/2020-12/schema', $defs: { ...document.components?.schemas } };
  const components = Object.fromEntries(
    Object.entries(document.components ?? {}).map(([section, entries]) => [section, isMap(entries) ? { ...entries } : entries]),
  );
  return { ...document, ...(document.paths ? { paths: { ...document.paths } } : {}), ...(document.components ? { components } : {}) };
}

const isMap = (value: unknown): value is object => value !== null && typeof value === 'object' && !Array.isArray(value);

/**
 * `document` (comparable()) as a value of its own, which api-smart-diff may change as it compares (it
 * writes what it makes of each part back into the document it walks).
 */
const copied = (document: object): object => JSON.parse(JSON.stringify(document));

export type Paths = { paths?: Record<string, unknown> };

/**
 * Leaves out of both documents the paths that are the same in each and are none of the collections
 * `names`: they hold no change. (A collection's own paths stay, the same or not: api-smart-diff
 * classifies a change of the types they name by where they use them, as a request's or an answer's.)
 * Over them all, api-smart-diff took about three times as long.
 */
export function withoutSamePaths(was: Paths, will: Paths, names: ReadonlySet<string>): void {
  const own = (path: string) => /^\/v1\/collections\/([^/{}]+)/.exec(path)?.[1];
  for (const path of Object.keys(was.paths ?? {})) {
    const collection = own(path);
    if (collection !== undefined && names.has(collection)) continue;
    const [before, after] = [was.paths?.[path], will.paths?.[path]];
    if (will.paths && path in will.paths && (before === after || canonical(before) === canonical(after))) {
      delete was.paths?.[path];
      delete will.paths[path];
    }
  }
}

type Sections = Record<string, Record<string, unknown> | undefined>;

/** Where each document keeps the parts a `$ref` names: OpenAPI's components (bar the security schemes, named by no `$ref`), the AsyncAPI comparable's `$defs`. */
const sectionsOf = (kind: ContractKind, document: { components?: Sections; $defs?: Record<string, unknown> }): Sections => {
  if (kind === 'asyncapi') return { $defs: document.$defs };
  const { securitySchemes, ...sections } = document.components ?? {};
  return sections;
};

/**
 * The component a `$ref` names, as `<section>/<name>`: of OpenAPI, `#/components/<section>/<name>`; of the
 * AsyncAPI comparable, whose `$defs` are the document's `components.schemas`, those named either way.
 */
function refTarget(kind: ContractKind, ref: string): string | undefined {
  const [, section, name] = /^#\/(?:components\/)?([^/]+)\/([^/]+)$/.exec(ref) ?? [];
  if (section === undefined || name === undefined) return undefined;
  const unescaped = name.replaceAll('~1', '/').replaceAll('~0', '~');
  return kind === 'asyncapi' && (section === 'schemas' || section === '$defs') ? `$defs/${unescaped}` : `${section}/${unescaped}`;
}

/** The components the `$ref`s within `value` name (refTarget), each with how many times, added to `into`. */
function refsOf(kind: ContractKind, value: unknown, into: Map<string, number>): Map<string, number> {
  if (Array.isArray(value)) for (const item of value) refsOf(kind, item, into);
  else if (value !== null && typeof value === 'object')
    for (const [key, item] of Object.entries(value)) {
      const target = key === '$ref' && typeof item === 'string' ? refTarget(kind, item) : undefined;
      if (target !== undefined) into.set(target, (into.get(target) ?? 0) + 1);
      else refsOf(kind, item, into);
    }
  return into;
}

/**
 * refsOf() of a part of a document, found once for each part: the base documents' parts, the same
 * objects in every document built of them, are walked once in a worker's life. Parts are never changed.
 */
const namedBy = { openapi: new WeakMap<object, Map<string, number>>(), asyncapi: new WeakMap<object, Map<string, number>>() };

function refsOfPart(kind: ContractKind, part: unknown): ReadonlyMap<string, number> {
  if (part === null || typeof part !== 'object') return new Map();
  let named = namedBy[kind].get(part);
  if (named === undefined) {
    named = refsOf(kind, part, new Map());
    namedBy[kind].set(part, named);
  }
  return named;
}

/**
 * Leaves out of both documents the components that hold no change and bear on none: those the same in
 * each, which neither the paths left (withoutSamePaths) nor a component kept names, and which name no
 * component that changed. What api-smart-diff reports is the same; it walks only what is left (the
 * generic types of openapi.yaml, most of a document, took it four fifths of its time). Answers the
 * components that changed, as `<section>/<name>`.
 */
export function withoutSameComponents(kind: ContractKind, was: object, will: object): ReadonlySet<string> {
  const sides = [sectionsOf(kind, was), sectionsOf(kind, will)];
  const parts = new Map<string, { section: string; name: string; values: unknown[] }>();
  for (const [side, sections] of sides.entries()) {
    for (const [section, entries] of Object.entries(sections)) {
      for (const [name, value] of Object.entries(entries ?? {})) {
        const key = `${section}/${name}`;
        const part = parts.get(key) ?? { section, name, values: [undefined, undefined] };
        part.values[side] = value;
        parts.set(key, part);
      }
    }
  }
  const changed = new Set<string>();
  const names = new Map<string, Set<string>>();
  for (const [key, { values }] of parts) {
    const [before, after] = values;
    if (
      before === undefined ||
      after === undefined ||
      (before !== after && JSON.stringify(before) !== JSON.stringify(after) && canonical(before) !== canonical(after))
    )
      changed.add(key);
    names.set(key, new Set([...refsOfPart(kind, before).keys(), ...refsOfPart(kind, after).keys()]));
  }
  // What changed, and what names it, however indirectly: its meaning changes with it.
  const affected = new Set(changed);
  for (let grew = true; grew; ) {
    grew = false;
    for (const [key, named] of names) {
      if (affected.has(key) || ![...named].some((each) => affected.has(each))) continue;
      affected.add(key);
      grew = true;
    }
  }
  // Kept: those, what the paths name, and whatever the kept name.
  const waiting = [...affected];
  for (const document of [was, will]) {
    for (const item of Object.values((document as Paths).paths ?? {})) waiting.push(...refsOfPart(kind, item).keys());
  }
  const kept = new Set<string>();
  for (let key = waiting.pop(); key !== undefined; key = waiting.pop()) {
    if (kept.has(key)) continue;
    kept.add(key);
    waiting.push(...(names.get(key) ?? []));
  }
  for (const [key, { section, name }] of parts) {
    if (kept.has(key)) continue;
    for (const sections of sides) delete sections[section]?.[name];
  }
  return changed;
}

/** One change to a document (openapi.yaml, ContractChange). */
export interface ContractChange {
  /** breaking, non-breaking, annotation, deprecated, or unclassified (what api-smart-diff cannot judge). */
  type: string;
  action: string;
  /** Where in the document, as a JSON Pointer. */
  path: string;
  description?: string;
}

/**
 * Where a `$ref` is moved to in the documents compared (byName) for api-smart-diff to compare it as a
 * value, by what it names, and not follow it; what it reports there is reported as the `$ref`'s.
 */
const NAMED_REF = 'x-rowbase-named-ref';

/**
 * The most places api-smart-diff may list the changes of the components that changed at (reachOf), before
 * every `$ref` from one component to another is compared by name: it lists a change again for each way
 * to it, through `$ref`s, from each place a path or a component names a type. A hundred collections each
 * changed reach theirs some 3,000 to 20,000 places (a collection's row type a few dozen: its paths, its
 * pages); a schema's `$defs` that each name the next twice, twenty deep, reach the last 2^20 ways from
 * each. Far fewer than the changes that would run a worker's stack out, listed at once (some 500,000).
 */
const MAX_REACHED = 100_000;

/**
 * Copies of `was` and `will` (comparable(), with the parts that bear on no change left out), which
 * api-smart-diff may change as it compares (it writes what it makes of each part back into the document it
 * walks). Of the OpenAPI documents, the `$ref`s it is not to follow are compared by name: those of the
 * expansions of the collections `names`, their `<Prefix>Expand` types, each of which names related
 * collections' row types (whose changes are reported at those collections' own paths); and every `$ref`
 * from one component to another when the components that changed (`changed`, withoutSameComponents)
 * would still be reached at more than MAX_REACHED places. A change is then reported where a path names its
 * type, and at the type itself. (The AsyncAPI comparable's `$ref`s name `#/components/schemas/…`, which
 * it does not hold: api-smart-diff compares each by name already.)
 */
export function compared(
  kind: ContractKind,
  was: object,
  will: object,
  names: ReadonlySet<string>,
  changed: ReadonlySet<string>,
): object[] {
  const documents = [copied(was), copied(will)];
  if (kind === 'asyncapi') return documents;
  const expansions = new Set([...names].map((name) => rowTypeName(name, 'expand')));
  const schemasOf = (document: object) => (document as { components?: { schemas?: Record<string, unknown> } }).components?.schemas ?? {};
  for (const schemas of documents.map(schemasOf)) {
    for (const name of expansions) if (schemas[name] !== undefined) schemas[name] = byName(schemas[name]);
  }
  // Counted over `was` and `will`, whose parts' `$ref`s are known already (refsOfPart), the expansions' not followed.
  const unfollowed = new Set([...expansions].map((name) => `schemas/${name}`));
  if ([was, will].every((document) => reachOf(kind, document, changed, unfollowed) <= MAX_REACHED)) return documents;
  for (const document of documents) {
    for (const entries of Object.values(sectionsOf(kind, document))) {
      for (const [name, value] of Object.entries(entries ?? {})) (entries as Record<string, unknown>)[name] = byName(value);
    }
  }
  return documents;
}

/** `value` with each `$ref` member moved to NAMED_REF. */
function byName(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(byName);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(Object.entries(value).map(([key, item]) => [key === '$ref' ? NAMED_REF : key, byName(item)]));
}

/**
 * How many places api-smart-diff reaches the components `changed` of `document` at: a component once as
 * itself, and once for each way to it through `$ref`s from the paths and from the components that reach
 * it (but those of the components `unfollowed`, compared by name), a `$ref` back to one already on the way
 * not followed (neither does api-smart-diff follow those). Counted up to MAX_REACHED and a little past.
 */
function reachOf(kind: ContractKind, document: object, changed: ReadonlySet<string>, unfollowed: ReadonlySet<string>): number {
  const entries = new Map<string, number>();
  const namers = new Map<string, Map<string, number>>();
  for (const item of Object.values((document as Paths).paths ?? {}))
    for (const [target, times] of refsOfPart(kind, item)) entries.set(target, (entries.get(target) ?? 0) + times);
  for (const [section, parts] of Object.entries(sectionsOf(kind, document))) {
    for (const [name, value] of Object.entries(parts ?? {})) {
      const key = `${section}/${name}`;
      entries.set(key, (entries.get(key) ?? 0) + 1);
      if (unfollowed.has(key)) continue;
      for (const [target, times] of refsOfPart(kind, value)) namers.set(target, (namers.get(target) ?? new Map()).set(key, times));
    }
  }
  const counted = new Map<string, number>();
  const onTheWay = new Set<string>();
  const reached = (key: string): number => {
    const known = counted.get(key);
    if (known !== undefined) return known;
    if (onTheWay.has(key)) return 0;
    onTheWay.add(key);
    let found = entries.get(key) ?? 0;
    for (const [namer, times] of namers.get(key) ?? []) {
      if (found > MAX_REACHED) break;
      found += times * reached(namer);
    }
    onTheWay.delete(key);
    counted.set(key, Math.min(found, MAX_REACHED + 1));
    return Math.min(found, MAX_REACHED + 1);
  };
  let total = 0;
  for (const key of changed) {
    total += reached(key);
    if (total > MAX_REACHED) break;
  }
  return total;
}

/**
 * A change api-smart-diff reports (`path` the members' names from the document's root) as the plan lists
 * it. A `$ref` compared by name that names another type is breaking: the member is now of another type
 * (a related collection's rows, for a relation that names another collection).
 */
export function changeOf({
  type,
  action,
  path,
  description,
}: {
  type: string;
  action: string;
  path: readonly (string | number)[];
  description?: string;
}): ContractChange {
  const retyped = path.at(-1) === NAMED_REF && action === 'replace';
  const pointer = path
    .map((part) => `/${(part === NAMED_REF ? '$ref' : String(part)).replaceAll('~', '~0').replaceAll('/', '~1')}`)
    .join('');
  // Its description names the member it was compared as (as an unknown member, an annotation).
  const described = description?.replaceAll(`annotation (${NAMED_REF})`, '$ref').replaceAll(NAMED_REF, '$ref');
  return { type: retyped ? 'breaking' : type, action, path: pointer, ...(described ? { description: described } : {}) };
}
