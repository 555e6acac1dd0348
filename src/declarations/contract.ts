// What a plan does to the account's contract (docs/declarations.md, "The contract's diff"): its OpenAPI and
// AsyncAPI documents as the API serves them (src/contract/), as a secret key sees them and as a publishable
// key's anonymous caller does, before and after, compared by api-smart-diff, which classifies each change
// as breaking or not for the clients generated from them. Only the collections whose part of the documents
// changes are in the documents compared (with those their relations name): the rest is the same on both sides.
// The comparison runs in the declarations' worker thread (contractDiffAside, aside.ts), off the thread that answers requests.
import { apiCompare } from 'api-smart-diff';
import { AccountContracts, type ContractKind, type ServedCollection } from '../contract/served.ts';
import { aside } from './aside.ts';
import { canonical, type Model, type ModelCollection } from './model.ts';

/** One change to a document (openapi.yaml, ContractChange). */
interface ContractChange {
  /** breaking, non-breaking, annotation, deprecated, or unclassified (what api-smart-diff cannot judge). */
  type: string;
  action: string;
  /** Where in the document, as a JSON Pointer. */
  path: string;
  description?: string;
}

/** Whose view of the documents: a secret key's, or a publishable key's anonymous caller's. */
type Viewer = 'secret' | 'publishable';

/** The changes to each document, for each viewer, and whether any is breaking. */
export interface ContractDiff {
  breaking: boolean;
  documents: Record<ContractKind, Record<Viewer, ContractChange[]>>;
}

/** Changes listed at most a document and viewer; the others are counted in none. */
const MAX_LISTED = 500;

/** Collections whose documents are compared at once (contractDiff). */
const COMPARED_AT_ONCE = 100;

let contracts: AccountContracts | undefined;

/** `openapi` and `asyncapi`: the texts of openapi.yaml and asyncapi.yaml, parsed the first time a diff is made. */
function contractsOf(documents: Record<ContractKind, string>): AccountContracts {
  contracts ??= new AccountContracts(documents);
  return contracts;
}

const pointerOf = (path: readonly (string | number)[]) =>
  path.map((part) => `/${String(part).replaceAll('~', '~0').replaceAll('/', '~1')}`).join('');

/** The collections of `model` as the documents take them; `ids` numbers their rules, which are compiled by id and version. */
function servedOf(model: Record<string, ModelCollection>, names: ReadonlySet<string>, ids: number): ServedCollection[] {
  const served: ServedCollection[] = [];
  for (const [index, [name, collection]] of Object.entries(model).entries()) {
    if (!names.has(name)) continue;
    const relations: { name: string; kind: 'to_one' | 'to_many'; collection: string }[] = Object.entries(collection.relations).map(
      ([relation, { collection: related }]) => ({
        name: relation,
        kind: 'to_one' as const,
        collection: related,
      }),
    );
    for (const [source, other] of Object.entries(model)) {
      for (const { collection: target, reverse } of Object.values(other.relations)) {
        if (target === name && reverse !== null) relations.push({ name: reverse, kind: 'to_many', collection: source });
      }
    }
    const rules = collection.rules === null ? null : { collectionId: ids * (index + 1), version: 1, rules: collection.rules };
    served.push({
      name,
      schema: collection.schema as Record<string, unknown> | null,
      relations,
      rules,
      ttl: collection.ttl?.field ?? null,
    });
  }
  return served;
}

/**
 * The document as api-smart-diff compares it: an OpenAPI document as it is; an AsyncAPI 3 document, which
 * it does not read (it reads AsyncAPI 2), as the JSON Schema whose $defs are its schemas, its messages'
 * payloads among them, whose changes it classifies as a JSON Schema's. The maps the parts that hold no
 * change are left out of (withoutSamePaths, withoutSameComponents) are its own; the rest is the
 * document's, shared with the base documents, and not changed.
 */
function comparable(kind: ContractKind, document: { paths?: object; components?: Record<string, object> }): object {
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

type Paths = { paths?: Record<string, unknown> };

/**
 * Leaves out of both documents the paths that are the same in each and are none of the collections
 * `names`: they hold no change. (A collection's own paths stay, the same or not: api-smart-diff
 * classifies a change of the types they name by where they use them, as a request's or an answer's.)
 * Over them all, api-smart-diff took about three times as long.
 */
function withoutSamePaths(was: Paths, will: Paths, names: ReadonlySet<string>): void {
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

/** The components the `$ref`s within `value` name (refTarget), added to `into`. */
function refsOf(kind: ContractKind, value: unknown, into: Set<string>): Set<string> {
  if (Array.isArray(value)) for (const item of value) refsOf(kind, item, into);
  else if (value !== null && typeof value === 'object')
    for (const [key, item] of Object.entries(value)) {
      const target = key === '$ref' && typeof item === 'string' ? refTarget(kind, item) : undefined;
      if (target !== undefined) into.add(target);
      else refsOf(kind, item, into);
    }
  return into;
}

/**
 * refsOf() of a part of a document, found once for each part: the base documents' parts, the same
 * objects in every document built of them, are walked once in a worker's life. Parts are never changed.
 */
const namedBy = { openapi: new WeakMap<object, Set<string>>(), asyncapi: new WeakMap<object, Set<string>>() };

function refsOfPart(kind: ContractKind, part: unknown): ReadonlySet<string> {
  if (part === null || typeof part !== 'object') return new Set();
  let named = namedBy[kind].get(part);
  if (named === undefined) {
    named = refsOf(kind, part, new Set());
    namedBy[kind].set(part, named);
  }
  return named;
}

/**
 * Leaves out of both documents the components that hold no change and bear on none: those the same in
 * each, which neither the paths left (withoutSamePaths) nor a component kept names, and which name no
 * component that changed. What api-smart-diff reports is the same; it walks only what is left (the
 * generic types of openapi.yaml, most of a document, took it four fifths of its time).
 */
function withoutSameComponents(kind: ContractKind, was: object, will: object): void {
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
    names.set(key, new Set([...refsOfPart(kind, before), ...refsOfPart(kind, after)]));
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
    for (const item of Object.values((document as Paths).paths ?? {})) waiting.push(...refsOfPart(kind, item));
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
}

/**
 * The collections whose part of the documents differs between `before` and `after`; with `only`, those of
 * `only` and the collections related to them, whose types name theirs (their expansions), not those
 * related to these in turn.
 */
function touched(
  before: Record<string, ModelCollection>,
  after: Record<string, ModelCollection>,
  only: ReadonlySet<string> | undefined,
): Set<string> {
  if (only === undefined) {
    const part = ({ schema, relations, rules }: ModelCollection) => canonical({ schema, relations, rules });
    const names = [...new Set([...Object.keys(before), ...Object.keys(after)])];
    return new Set(names.filter((name) => !before[name] || !after[name] || part(before[name]) !== part(after[name])));
  }
  const names = new Set(only);
  for (const side of [before, after]) {
    for (const [name, { relations }] of Object.entries(side)) {
      for (const { collection } of Object.values(relations)) {
        if (only.has(name) || only.has(collection)) names.add(name).add(collection);
      }
    }
  }
  return names;
}

/**
 * What making the collections `current` the collections `target` does to the account's documents;
 * nothing is compared when no collection's part of them changes. The collections touched are compared
 * COMPARED_AT_ONCE at a time (each group with those related to it), each document with only the parts
 * that change or bear on a change (withoutSamePaths, withoutSameComponents): api-smart-diff's time and
 * memory grow with what it is given (a hundred collections in whole documents ran out of 4 GB; without
 * the parts that do not change, 0.2 GB). A change found in several groups' documents (a path of every
 * collection's) is listed once; one that only the whole documents show (a tag's place in the list)
 * is not seen across groups.
 */
function contractDiff(current: Model, target: Model, documents: Record<ContractKind, string>): ContractDiff {
  const before = current.collections ?? {};
  const after = target.collections ?? before;
  const diff = noChange();
  const changed = [...touched(before, after, undefined)];
  const served = contractsOf(documents);
  const seen = new Set<string>();
  for (let from = 0; from < changed.length; from += COMPARED_AT_ONCE) {
    const names = touched(before, after, new Set(changed.slice(from, from + COMPARED_AT_ONCE)));
    const sides = [servedOf(before, names, 1), servedOf(after, names, -1)];
    for (const kind of ['openapi', 'asyncapi'] as const) {
      for (const viewer of ['secret', 'publishable'] as const) {
        const publishable = viewer === 'publishable' ? { claims: null } : undefined;
        const [was, will] = sides.map((collections) => comparable(kind, served.built(kind, collections, publishable)));
        if (kind === 'openapi') withoutSamePaths(was as Paths, will as Paths, names);
        withoutSameComponents(kind, was, will);
        const listed = diff.documents[kind][viewer];
        for (const { type, action, path, description } of apiCompare(copied(was), copied(will)).diffs) {
          const change = { type, action, path: pointerOf(path), ...(description ? { description } : {}) };
          const key = `${kind} ${viewer} ${canonical(change)}`;
          if (seen.has(key)) continue;
          seen.add(key);
          if (type === 'breaking') diff.breaking = true;
          if (listed.length < MAX_LISTED) listed.push(change);
        }
      }
    }
  }
  return diff;
}

const noChange = (): ContractDiff => ({
  breaking: false,
  documents: { openapi: { secret: [], publishable: [] }, asyncapi: { secret: [], publishable: [] } },
});

/** What the worker is handed: the texts of the documents, and the models to compare. */
interface DiffJob {
  documents: Record<ContractKind, string>;
  current: Model;
  target: Model;
}

/**
 * contractDiff() in the declarations' worker (aside.ts), which runs diffAnswer(): the comparison takes
 * seconds of CPU for many collections (api-smart-diff), during which the thread that answers requests
 * would answer nothing, every account's requests waiting; its memory, hundreds of MB, is the worker's,
 * given back when it ends. A plan that changes no collection's part of the documents compares nothing.
 */
export async function contractDiffAside(current: Model, target: Model, documents: Record<ContractKind, string>): Promise<ContractDiff> {
  const before = current.collections ?? {};
  if (touched(before, target.collections ?? before, undefined).size === 0) return noChange();
  return aside<ContractDiff>({ contractDiff: { documents, current, target } satisfies DiffJob });
}

/** contractDiff() of a DiffJob, as the worker answers it. */
export function diffAnswer(job: unknown): ContractDiff {
  const { current, target, documents } = job as DiffJob;
  return contractDiff(current, target, documents);
}
