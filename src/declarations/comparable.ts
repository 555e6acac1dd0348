// The account's documents as api-smart-diff is given them (contract.ts, docs/declarations.md, "The
// contract's diff"): the parts that hold no change and bear on none left out of both, and the `$ref`s it
// is not to follow compared by what they name. api-smart-diff follows every `$ref` it meets and reports a
// change of the type it names again at every path that reaches it, through as many `$ref`s as it took,
// each report a copy with its own path: how many reports a change makes is how many ways there are to reach
// it, which grows with every type on the way that names the next twice (exponentially with their depth).
// A part that only one side holds (a new collection's paths and types) it reports added or removed at its
// place without walking it, unless a `$ref` of what it walks leads there: it is given a stand-in of that
// part (withPathStandIns, withoutSameComponents).
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
 * A path as api-smart-diff pairs the paths of two documents (its `pathMappingResolver`): each template
 * parameter as `*`, so that `/a/{x}` of one is `/a/{y}` of the other.
 */
const pathTemplate = (path: string) => path.replace(/{.*?}/g, '*');

/** The paths of `document` that the other document `other` holds too, as api-smart-diff pairs them (pathTemplate). */
function pairedPaths(document: Paths, other: Paths): string[] {
  const others = new Set(Object.keys(other.paths ?? {}).map(pathTemplate));
  return Object.keys(document.paths ?? {}).filter((path) => others.has(pathTemplate(path)));
}

/**
 * Leaves out of both documents the components that hold no change and bear on none, and stands in for
 * those of one document only that api-smart-diff does not walk. It walks the paths both documents hold
 * (pairedPaths; the others stand in already: withPathStandIns), the components both hold, and what their
 * `$ref`s lead to, on either side. A component both hold is left out when it is the same in each, names
 * no component that changed, and nothing walked names it; one that one document holds alone, it reports
 * added or removed at its place, as its rule of that place classifies it, without looking into it: when
 * nothing walked names it, an empty object stands in for it. What api-smart-diff reports is the same
 * (test/declarations/contract.test.ts compares it with the documents whole); it walks, and compared()
 * copies, only what is left (the generic types of openapi.yaml, most of a document, took it four fifths
 * of its time; a hundred new collections' types, the rest). Answers the components that changed, as
 * `<section>/<name>`.
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
  const both = new Set<string>();
  for (const [key, { values }] of parts) {
    const [before, after] = values;
    if (before !== undefined && after !== undefined) both.add(key);
    if (
      before === undefined ||
      after === undefined ||
      (before !== after && JSON.stringify(before) !== JSON.stringify(after) && canonical(before) !== canonical(after))
    )
      changed.add(key);
  }
  // What a component's `$ref`s name, on either side.
  const namesOf = (key: string) => new Set((parts.get(key)?.values ?? []).flatMap((value) => [...refsOfPart(kind, value).keys()]));
  // What changed, and what names it, however indirectly: its meaning changes with it.
  const affected = new Set(changed);
  const bothNames = new Map([...both].map((key) => [key, namesOf(key)]));
  for (let grew = true; grew; ) {
    grew = false;
    for (const [key, named] of bothNames) {
      if (affected.has(key) || ![...named].some((each) => affected.has(each))) continue;
      affected.add(key);
      grew = true;
    }
  }
  // Walked: those both hold, kept; what the paths both hold name; and whatever the walked name.
  const waiting = [...affected].filter((key) => both.has(key));
  for (const [document, other] of [
    [was, will],
    [will, was],
  ] as Paths[][]) {
    for (const path of pairedPaths(document, other)) waiting.push(...refsOfPart(kind, document.paths?.[path]).keys());
  }
  const walked = new Set<string>();
  for (let key = waiting.pop(); key !== undefined; key = waiting.pop()) {
    if (walked.has(key) || !parts.has(key)) continue;
    walked.add(key);
    waiting.push(...(bothNames.get(key) ?? namesOf(key)));
  }
  for (const [key, { section, name }] of parts) {
    if (walked.has(key)) continue;
    for (const sections of sides) {
      const entries = sections[section];
      if (entries?.[name] === undefined) continue;
      if (both.has(key)) delete entries[name];
      else entries[name] = {};
    }
  }
  return changed;
}

/**
 * Stands in for each path that one document holds and the other does not (a new collection's, or a
 * dropped one's), as api-smart-diff pairs them (pathTemplate): it reports each of its operations added
 * or removed, as its rule of that place classifies it, and walks none of them, so the stand-in holds only
 * its methods, each an empty object (methodsOf).
 */
export function withPathStandIns(was: Paths, will: Paths): void {
  for (const [document, other] of [
    [was, will],
    [will, was],
  ]) {
    const paired = new Set(pairedPaths(document, other));
    for (const [path, item] of Object.entries(document.paths ?? {}))
      if (!paired.has(path)) (document.paths as Record<string, unknown>)[path] = methodsOf(item);
  }
}

/** The methods of a path item, in the order api-smart-diff's `transformPathItems` lists them. */
const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

/**
 * The methods of the OpenAPI path item `item`, each an empty object, in the order api-smart-diff lists
 * their adds or removals: the item's own, or, when it holds members other than methods (which its
 * `transformPathItems` copies into each), METHODS' order.
 */
function methodsOf(item: unknown): Record<string, object> {
  const members = isMap(item) ? (item as Record<string, unknown>) : {};
  const keys = Object.keys(members);
  const methods = keys.every((key) => METHODS.includes(key)) ? keys : METHODS.filter((method) => isMap(members[method]));
  return Object.fromEntries(methods.map((method) => [method, {}]));
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
