// What a plan does to the account's contract (docs/declarations.md, "The contract's diff"): its OpenAPI and
// AsyncAPI documents as the API serves them (src/contract/), as a secret key sees them and as a publishable
// key's anonymous caller does, before and after, compared by api-smart-diff, which classifies each change
// as breaking or not for the clients generated from them. Only the collections whose part of the documents
// changes are in the documents compared (with those their relations name): the rest is the same on both sides.
// What api-smart-diff is given of them, and how what it reports is listed: comparable.ts.
// The comparison runs in the declarations' worker thread (contractDiffAside, aside.ts), off the thread that answers requests.
import { apiCompare } from 'api-smart-diff';
import { AccountContracts, type ContractKind, type ServedCollection } from '../contract/served.ts';
import { ApiError, unavailable } from '../errors.ts';
import { aside, OverTime } from './aside.ts';
import {
  type ContractChange,
  changeOf,
  comparable,
  compared,
  type Paths,
  withoutSameComponents,
  withoutSamePaths,
  withPathStandIns,
} from './comparable.ts';
import { canonical, type Model, type ModelCollection } from './model.ts';

/** Whose view of the documents: a secret key's, or a publishable key's anonymous caller's. */
type Viewer = 'secret' | 'publishable';

/** The changes to each document, for each viewer, and whether any is breaking. */
export interface ContractDiff {
  breaking: boolean;
  documents: Record<ContractKind, Record<Viewer, ContractChange[]>>;
}

/** Changes listed at most a document and viewer; the others are counted in none. */
const MAX_LISTED = 500;

/**
 * How long a plan waits for its contract's diff (its wait for the worker included) before the worker is
 * ended and the plan refused: a hundred collections each changed in a dozen ways take some 10 s of CPU.
 */
const DIFF_DEADLINE_MS = 60_000;

/** Collections whose documents are compared at once (contractDiff). */
const COMPARED_AT_ONCE = 100;

let contracts: AccountContracts | undefined;

/** `openapi` and `asyncapi`: the texts of openapi.yaml and asyncapi.yaml, parsed the first time a diff is made. */
function contractsOf(documents: Record<ContractKind, string>): AccountContracts {
  contracts ??= new AccountContracts(documents);
  return contracts;
}

/**
 * Diffs made in this thread: the version of the rules of each diff's collections, by which their
 * compiled rules are kept (servedOf), so that no diff finds those of another diff's collections.
 */
let diffsMade = 0;

/**
 * The collections of `model` as the documents take them; `ids` numbers their rules, which are compiled by
 * id and `version` (a diff's own: diffsMade) and kept (AccountContracts).
 */
function servedOf(model: Record<string, ModelCollection>, names: ReadonlySet<string>, ids: number, version: number): ServedCollection[] {
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
    const rules = collection.rules === null ? null : { collectionId: ids * (index + 1), version, rules: collection.rules };
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
 * that change or bear on a change (withoutSamePaths, withoutSameComponents), and those of one side only
 * that api-smart-diff does not walk as stand-ins (withPathStandIns): api-smart-diff's time and
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
  const version = ++diffsMade;
  const seen = new Set<string>();
  for (let from = 0; from < changed.length; from += COMPARED_AT_ONCE) {
    const names = touched(before, after, new Set(changed.slice(from, from + COMPARED_AT_ONCE)));
    const sides = [servedOf(before, names, 1, version), servedOf(after, names, -1, version)] as const;
    // A collection of one side alone: api-smart-diff lists its operations and looks into none (withPathStandIns).
    const outlined = oneSided(...sides);
    for (const kind of ['openapi', 'asyncapi'] as const) {
      for (const viewer of ['secret', 'publishable'] as const) {
        const publishable = viewer === 'publishable' ? { claims: null } : undefined;
        const [was, will] = sides.map((collections) => comparable(kind, served.built(kind, collections, publishable, outlined)));
        if (kind === 'openapi') {
          withoutSamePaths(was as Paths, will as Paths, names);
          withPathStandIns(was as Paths, will as Paths);
        }
        const changedParts = withoutSameComponents(kind, was, will);
        const listed = diff.documents[kind][viewer];
        const [older, newer] = compared(kind, was, will, names, changedParts);
        for (const reported of apiCompare(older, newer).diffs) {
          const change = changeOf(reported);
          const key = `${kind} ${viewer} ${canonical(change)}`;
          if (seen.has(key)) continue;
          seen.add(key);
          if (change.type === 'breaking') diff.breaking = true;
          if (listed.length < MAX_LISTED) listed.push(change);
        }
      }
    }
  }
  return diff;
}

/** The names of the collections that one of `before` and `after` holds and the other does not. */
function oneSided(before: readonly ServedCollection[], after: readonly ServedCollection[]): Set<string> {
  const [was, will] = [new Set(before.map(({ name }) => name)), new Set(after.map(({ name }) => name))] as const;
  return new Set([...was, ...will].filter((name) => !was.has(name) || !will.has(name)));
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
 * A diff not made within `deadlineMs` (DIFF_DEADLINE_MS by default), or that fails, is a 503 `unavailable`:
 * a plan without it would say no change breaks the clients.
 */
export async function contractDiffAside(
  current: Model,
  target: Model,
  documents: Record<ContractKind, string>,
  deadlineMs = DIFF_DEADLINE_MS,
): Promise<ContractDiff> {
  const before = current.collections ?? {};
  if (touched(before, target.collections ?? before, undefined).size === 0) return noChange();
  try {
    return await aside<ContractDiff>({ contractDiff: { documents, current, target } satisfies DiffJob }, deadlineMs);
  } catch (error) {
    if (error instanceof OverTime)
      throw unavailable(
        `The plan's diff of the account's documents took longer than ${deadlineMs / 1000} s and was stopped: no plan is made. docs/declarations.md, "The contract's diff".`,
      );
    // Refused already, as waiting in a worker another job's deadline ended (aside): said as it is.
    if (error instanceof ApiError) throw error;
    // What failed goes to the log with the problem (its cause), not to the client.
    throw Object.assign(
      unavailable(`The plan's diff of the account's documents failed: no plan is made. docs/declarations.md, "The contract's diff".`),
      { cause: error },
    );
  }
}

/** contractDiff() of a DiffJob, as the worker answers it. */
export function diffAnswer(job: unknown): ContractDiff {
  const { current, target, documents } = job as DiffJob;
  return contractDiff(current, target, documents);
}
