// The account's documents as the API serves them (openapi.yaml, getAccountOpenApi and getAccountAsyncApi):
// the base documents parsed once, each document built once for its tag and kept (cache.ts).
import { parse } from 'yaml';
import { accountAsyncApi, accountOpenApi, type CollectionContract, documentTag } from './account.ts';
import { DocumentCache } from './cache.ts';

/** Which of the two documents. */
export type ContractKind = 'openapi' | 'asyncapi';

const build = { openapi: accountOpenApi, asyncapi: accountAsyncApi };

/** The account documents of one server: `documents` are the texts of openapi.yaml and asyncapi.yaml it serves. */
export class AccountContracts {
  private readonly bases: Record<ContractKind, object>;
  private readonly documents = new DocumentCache();

  constructor(documents: Record<ContractKind, string>) {
    this.bases = { openapi: parse(documents.openapi), asyncapi: parse(documents.asyncapi) };
  }

  /** The document's tag for `collections` (its ETag), and its JSON text, built only when asked for. */
  document(kind: ContractKind, collections: readonly CollectionContract[]): { tag: string; json: () => string } {
    const base = this.bases[kind];
    const tag = documentTag(base, collections);
    return { tag, json: () => this.documents.get(tag, () => JSON.stringify(build[kind](base, collections))) };
  }
}
