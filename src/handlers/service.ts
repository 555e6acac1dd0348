// The handlers of the `service` and `contract` tags: health, readiness and the account's own documents.
import type { ContractKind } from '../contract/served.ts';
import type { Principal } from '../db/accounts/keys.ts';
import { ApiError, unavailable } from '../errors.ts';
import { ifNoneMatch } from '../http/conditional.ts';
import type { Claims as RuleClaims } from '../rules/compile.ts';
import type { Deps, Handlers, Input, Result } from './types.ts';

/** How long readiness waits for the database's answer before it answers 503 (openapi.yaml, getReadiness). */
const READY_WAIT_MS = 2000;

const up = { status: 200, body: { ok: true, service: 'rowbase' } } as const;

export const serviceHandlers: Handlers<'getHealth' | 'getReadiness' | 'getAccountOpenApi' | 'getAccountAsyncApi'> = {
  // Liveness: the process answers, with no query (openapi.yaml, getHealth).
  async getHealth(_input, { store }) {
    if (!store.isOpen()) throw unavailable('The service is shutting down.');
    return up;
  },

  // Readiness: a query through the writer's queue or the pool, bounded in time (openapi.yaml, getReadiness).
  async getReadiness(_input, { store }) {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(unavailable(`The database did not answer within ${READY_WAIT_MS / 1000} seconds.`)), READY_WAIT_MS);
    });
    try {
      await Promise.race([store.ping(), late]);
    } catch (error) {
      throw error instanceof ApiError && error.code === 'unavailable' ? error : unavailable();
    } finally {
      clearTimeout(timer);
    }
    return up;
  },

  getAccountOpenApi: (input, deps) => answerDocument('openapi', input, deps, input.query.version),
  getAccountAsyncApi: (input, deps) => answerDocument('asyncapi', input, deps),
};

/**
 * The account's document of `kind`, with the collections the key can see and their schemas, and its
 * ETag; 304 when If-None-Match names it (RFC 9110 §13.1.2). To a publishable key, what its caller may use
 * (docs/access.md, "The contract follows the caller").
 */
async function answerDocument(
  kind: ContractKind,
  { principal, headers, claims }: Pick<Input<'getAccountOpenApi'>, 'principal' | 'headers' | 'claims'>,
  { store, contracts }: Deps,
  version?: '3.1' | '3.2',
): Promise<Result> {
  // The claims of a verified token are plain JSON data (src/tokens/verifier.ts).
  const publishable = principal.kind === 'publishable' ? { claims: (claims ?? null) as RuleClaims } : undefined;
  const { tag, json } = contracts.document(kind, await visibleCollections(store, principal), publishable, version);
  const etag = { ETag: tag };
  // The tag is quoted already (documentTag); If-None-Match names its opaque text.
  if (ifNoneMatch(headers)(tag.slice(1, -1))) return { status: 304, headers: etag };
  return { status: 200, body: json(), contentType: 'application/json', headers: etag };
}

/** The account's collections with their schemas and rules, those the key is limited to if it is. */
async function visibleCollections(store: Deps['store'], principal: Principal) {
  const all = await store.listCollectionContracts(principal.accountId);
  const { collections } = principal;
  return collections ? all.filter(({ name }) => collections.has(name)) : all;
}
