// What a plan does to the account's contract (docs/declarations.md, "The contract's diff"): its OpenAPI and
// AsyncAPI documents as the API serves them (src/contract/), as a secret key sees them and as a publishable
// key's anonymous caller does, before and after, compared by api-smart-diff, which classifies each change
// as breaking or not for the clients generated from them. Only the collections whose part of the documents
// changes are in the documents compared (with those their relations name): the rest is the same on both sides.
import { apiCompare } from 'api-smart-diff';
import { AccountContracts, type ContractKind, type ServedCollection } from '../contract/served.ts';
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
    served.push({ name, schema: collection.schema as Record<string, unknown> | null, relations, rules });
  }
  return served;
}

/**
 * The document as api-smart-diff compares it: an OpenAPI document as it is; an AsyncAPI 3 document, which
 * it does not read (it reads AsyncAPI 2), as the JSON Schema whose $defs are its schemas, its messages'
 * payloads among them, whose changes it classifies as a JSON Schema's.
 */
function comparable(kind: ContractKind, document: { components?: { schemas?: unknown } }): object {
  return kind === 'openapi'
    ? document
    : { $schema: 'https://json-schema.org/draft/2020-12/schema', $defs: document.components?.schemas ?? {} };
}

/** The collections whose part of the documents differs between `before` and `after`, and those they are related to. */
function touched(before: Record<string, ModelCollection>, after: Record<string, ModelCollection>): Set<string> {
  const part = ({ schema, relations, rules }: ModelCollection) => canonical({ schema, relations, rules });
  const names = new Set<string>();
  for (const name of new Set([...Object.keys(before), ...Object.keys(after)])) {
    if (!before[name] || !after[name] || part(before[name]) !== part(after[name])) names.add(name);
  }
  for (const side of [before, after]) {
    for (const [name, { relations }] of Object.entries(side)) {
      for (const { collection } of Object.values(relations)) {
        if (names.has(name) || names.has(collection)) names.add(name).add(collection);
      }
    }
  }
  return names;
}

/**
 * What making the collections `current` the collections `target` does to the account's documents;
 * nothing is compared when no collection's part of them changes.
 */
export function contractDiff(current: Model, target: Model, documents: Record<ContractKind, string>): ContractDiff {
  const before = current.collections ?? {};
  const after = target.collections ?? before;
  const names = touched(before, after);
  const diff: ContractDiff = {
    breaking: false,
    documents: { openapi: { secret: [], publishable: [] }, asyncapi: { secret: [], publishable: [] } },
  };
  if (names.size === 0) return diff;
  const served = contractsOf(documents);
  const sides = [servedOf(before, names, 1), servedOf(after, names, -1)];
  for (const kind of ['openapi', 'asyncapi'] as const) {
    for (const viewer of ['secret', 'publishable'] as const) {
      const publishable = viewer === 'publishable' ? { claims: null } : undefined;
      const [was, will] = sides.map((collections) => comparable(kind, JSON.parse(served.document(kind, collections, publishable).json())));
      const changes = apiCompare(was, will).diffs.map(({ type, action, path, description }) => ({
        type,
        action,
        path: pointerOf(path),
        ...(description ? { description } : {}),
      }));
      if (changes.some((change) => change.type === 'breaking')) diff.breaking = true;
      diff.documents[kind][viewer] = changes.slice(0, MAX_LISTED);
    }
  }
  return diff;
}
