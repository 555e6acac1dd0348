// The handlers of the `contract` tag: the account's own OpenAPI and AsyncAPI documents (docs/contract.md).
import type { ContractKind } from '../contract/served.ts';
import type { Principal } from '../db/accounts/keys.ts';
import { ifNoneMatch } from '../http/conditional.ts';
import type { Claims as RuleClaims } from '../rules/compile.ts';
import type { Deps, Handlers, Input, Result } from './types.ts';

export const contractHandlers: Handlers<'getAccountOpenApi' | 'getAccountAsyncApi'> = {
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
