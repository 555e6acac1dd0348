// What a plan does to the account's contract (docs/declarations.md, "The contract's diff"): its OpenAPI and
// AsyncAPI documents as the API serves them (src/contract/), as a secret key sees them and as a publishable
// key's anonymous caller does, before and after, compared by api-smart-diff, which classifies each change
// as breaking or not for the clients generated from them. Only the collections whose part of the documents
// changes are in the documents compared (with those their relations name): the rest is the same on both sides.
// The comparison runs in a worker thread of its own (contractDiffAside), off the thread that answers requests.
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
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

/** Collections whose documents are compared at once (contractDiff). */
const COMPARED_AT_ONCE = 10;

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
 * payloads among them, whose changes it classifies as a JSON Schema's.
 */
function comparable(kind: ContractKind, document: { components?: { schemas?: unknown } }): object {
  return kind === 'openapi'
    ? document
    : { $schema: 'https://json-schema.org/draft/2020-12/schema', $defs: document.components?.schemas ?? {} };
}

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
    if (will.paths && path in will.paths && canonical(was.paths?.[path]) === canonical(will.paths[path])) {
      delete was.paths?.[path];
      delete will.paths[path];
    }
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
 * COMPARED_AT_ONCE at a time (each group with those related to it): api-smart-diff's time and memory grow
 * faster than the documents (a hundred collections made at once ran out of 4 GB). A change found in several
 * groups' documents (a path of every collection's) is listed once.
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
        const [was, will] = sides.map((collections) =>
          comparable(kind, JSON.parse(served.document(kind, collections, publishable).json())),
        );
        if (kind === 'openapi') withoutSamePaths(was as Paths, will as Paths, names);
        const listed = diff.documents[kind][viewer];
        for (const { type, action, path, description } of apiCompare(was, will).diffs) {
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

/** What a worker of contractDiffAside() is handed, as its workerData. */
interface DiffJob {
  contractDiff: true;
  current: Model;
  target: Model;
  documents: Record<ContractKind, string>;
}

/**
 * contractDiff() in a worker thread, started for it and ended with it: the comparison takes seconds of
 * CPU for many collections (api-smart-diff), during which the thread that answers requests would answer
 * nothing, every account's requests waiting; and its memory, hundreds of MB, is the worker's, given back
 * when it ends. The worker runs this module (the bundle's chunk that holds it), which, in a worker handed
 * a DiffJob, compares and posts the diff. A plan that changes no collection's part of the documents
 * compares nothing, and starts no worker.
 */
export async function contractDiffAside(current: Model, target: Model, documents: Record<ContractKind, string>): Promise<ContractDiff> {
  const before = current.collections ?? {};
  if (touched(before, target.collections ?? before, undefined).size === 0) return noChange();
  const job: DiffJob = { contractDiff: true, current, target, documents };
  const worker = workerOfThisModule(job);
  try {
    return await new Promise<ContractDiff>((resolve, reject) => {
      worker.once('message', resolve);
      worker.once('error', reject);
      worker.once('exit', (code) => reject(new Error(`the contract's diff ended (exit code ${code}) before it answered`)));
    });
  } finally {
    await worker.terminate();
  }
}

/**
 * A worker running this module. Run from TypeScript (tsx: the tests, bench/declarations.ts), the worker
 * registers tsx's loader before it imports it, as Node 20's workers do not run the parent's `--import`.
 */
function workerOfThisModule(job: DiffJob): Worker {
  if (!import.meta.url.endsWith('.ts')) return new Worker(new URL(import.meta.url), { workerData: job });
  const source = `import('tsx/esm/api').then(({ register }) => { register(); return import(${JSON.stringify(import.meta.url)}); })`;
  return new Worker(source, { eval: true, workerData: job });
}

if (!isMainThread && (workerData as DiffJob | undefined)?.contractDiff === true) {
  const { current, target, documents } = workerData as DiffJob;
  parentPort?.postMessage(contractDiff(current, target, documents));
}
