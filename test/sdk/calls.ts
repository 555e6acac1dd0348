// What each caller of a generated client does and tells (test/contract/generated-clients.test.ts): every
// operation of openapi.yaml called once, in an order that makes each succeed, and what the answers say,
// read through the client's own types, with no cast. Compiled with the generated clients by tsc --strict,
// in a folder of their own: each caller's calls `satisfies` a Record over its client's operations, and so
// fail to compile when one is missing.

/** What the client's types let the caller read from the answers. */
export interface Facts {
  service: unknown;
  insertedIds: unknown;
  /** The `text` of each row of the page ordered by `n`, descending. */
  listedTexts: unknown;
  /**
   * Of the query of the rows with `n` of 2 or more, selecting `text`, by `n` descending, one row a page:
   * each row's `text`, the count, and whether a next page's cursor came (the page is full).
   */
  queried: { texts: unknown; total: unknown; next: unknown };
  patched: unknown;
  /** The `code` of the problem of a request to `/ws` that is no upgrade. */
  feedCode: unknown;
  /** The `code` of the problem of a collection that does not exist (any more). */
  missingCode: unknown;
}

export interface Outcome {
  /** The HTTP status each operation answered, by operationId. */
  statuses: Record<string, number>;
  facts: Facts;
}

/** The rows each caller inserts, then reads back ordered by `n`. */
export const rows = [
  { text: 'a', n: 1 },
  { text: 'b', n: 2 },
];

/** The query each caller makes, typed by its client: a filter, a selection, an order, a limit and a count. */
export const query = {
  filter: { n: { $gte: 2 } },
  select: ['text'],
  order: [{ field: 'n', direction: 'desc' as const }],
  limit: 1,
  count: 'exact' as const,
};

type Answers<Calls extends Record<string, () => Promise<unknown>>> = { [Name in keyof Calls]: Awaited<ReturnType<Calls[Name]>> };

/** Makes `calls` one after another, in their order, and gives each answer under the call's name. */
export async function inOrder<Calls extends Record<string, () => Promise<unknown>>>(calls: Calls): Promise<Answers<Calls>> {
  const answers: Record<string, unknown> = {};
  for (const [name, call] of Object.entries(calls)) answers[name] = await call();
  // The one cast: Object.entries cannot say that every name of Calls is now in answers.
  return answers as Answers<Calls>;
}

/** The token issuer each caller makes (named after its collection): of a shared secret, so nothing is fetched for it. */
export const issuerInput = { issuer: 'https://auth.example.com/', audiences: ['sdk'], secret: 'a shared secret, 32 bytes or more' };

/** A declaration of no section (docs/declarations.md): planned and applied, it leaves the account as it is. */
export const declarationInput = { declaration: 'version: 1\n' };

/** The URL of the webhook each caller makes: a port of this machine (the discard port), never another host. */
export const webhookUrl = 'http://127.0.0.1:9/hook';

/**
 * What each caller's PATCHes of rows tell: the status of each, by the format it sent (`merge`, a
 * top-level merge of one row; `merge-by-filter`, of the rows a filter matches; `merge-patch`;
 * `json-patch`), and the rows as the last left them. A top-level merge is sent as the client sends a body
 * when the call names no Content-Type; another format names its own in the call's headers, where the
 * client's types let its body be that format's.
 */
export interface Patched {
  statuses: Record<string, number>;
  rows: unknown;
}

/** The rows each caller patches, and its patches: the first row by each format, the second by filter. */
export const patching = {
  rows: [
    { text: 'a', n: 1, meta: { x: 1, y: 2 } },
    { text: 'b', n: 1 },
  ],
  merge: { n: 2 },
  filter: '{"text":"b"}',
  mergeByFilter: { n: 5 },
  mergePatch: { meta: { y: null } },
  jsonPatch: [{ op: 'increment' as const, path: '/n', value: 2 }],
  mergePatchType: { 'Content-Type': 'application/merge-patch+json' },
  jsonPatchType: { 'Content-Type': 'application/json-patch+json' },
};
