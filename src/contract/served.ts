// The account's documents as the API serves them (openapi.yaml, getAccountOpenApi and getAccountAsyncApi):
// the base documents parsed once, each document built once for its tag and kept (cache.ts). For a
// publishable key, what its caller may use: each collection's rules compiled once per version, and the
// caller's view of them (caller.ts) part of the tag, so that a change of the rules, read with the
// collections on every request, shows at once, on every instance.
import type { StoredRules } from '../db/rules/rules.ts';
import { type Claims, CompiledRulesCache } from '../rules/compile.ts';
import { accountAsyncApi, accountOpenApi, type CollectionContract, documentTag } from './account.ts';
import { parseBases } from './bases.ts';
import { DocumentCache } from './cache.ts';
import { collectionView, type DocumentCaller, takesPublishable } from './caller.ts';

/** Which of the two documents. */
export type ContractKind = 'openapi' | 'asyncapi';

const build = { openapi: accountOpenApi, asyncapi: accountAsyncApi };

/** A collection as the server reads it: its name, its schema, its relations, and its rules (null for none). */
export interface ServedCollection {
  name: string;
  schema: Record<string, unknown> | null;
  relations: CollectionContract['relations'];
  rules: StoredRules | null;
  ttl: string | null;
}

/** The account documents of one server: `documents` are the texts of openapi.yaml and asyncapi.yaml it serves. */
export class AccountContracts {
  private parsed?: { bases: Record<ContractKind, object>; feedTakesPublishable: boolean };
  private readonly documents = new DocumentCache();
  private readonly compiled = new CompiledRulesCache();

  constructor(private readonly texts: Record<ContractKind, string>) {}

  /**
   * The base documents parsed, when first asked for (some 2 MB of objects an idle server need not hold),
   * and whether the feed takes a publishable key (openapi.yaml marks `openFeed`): its AsyncAPI document
   * then shows it.
   */
  private get bases() {
    if (!this.parsed) {
      const bases = parseBases(this.texts);
      this.parsed = { bases, feedTakesPublishable: takesPublishable(bases.openapi, 'openFeed') };
    }
    return this.parsed;
  }

  /**
   * The document's tag for `collections` (its ETag), and its JSON text, built only when asked for. With
   * `publishable`, for a caller holding a publishable key whose end user has `claims` (null: anonymous):
   * only what the collections' rules grant it, a collection without rules none of it.
   */
  document(
    kind: ContractKind,
    collections: readonly ServedCollection[],
    publishable?: { claims: Claims },
    version: '3.1' | '3.2' = '3.1',
  ): { tag: string; json: () => string } {
    const { base, contracts, caller } = this.inputs(kind, collections, publishable);
    const tag = documentTag(base, contracts, caller);
    if (kind === 'openapi' && version === '3.2') {
      // The same document as OpenAPI 3.2 (openapi-32.ts), under a tag of its own.
      const tag32 = `${tag.slice(0, -1)}-32"`;
      return { tag: tag32, json: () => this.documents.get(tag32, () => JSON.stringify(accountOpenApi(base, contracts, caller, '3.2'))) };
    }
    return { tag, json: () => this.documents.get(tag, () => JSON.stringify(build[kind](base, contracts, caller))) };
  }

  /**
   * The document `document()` answers (OpenAPI 3.1), as the object it is built as, neither kept nor
   * made text: its parts are shared with the base documents and with other documents built of them, so
   * it is not to be changed. The collections `outlined` have their operations made as outlines
   * (account.ts, `outline`).
   */
  built(
    kind: ContractKind,
    collections: readonly ServedCollection[],
    publishable?: { claims: Claims },
    outlined?: ReadonlySet<string>,
  ): object {
    const { base, contracts, caller } = this.inputs(kind, collections, publishable);
    return build[kind](base, outlined ? contracts.map((each) => ({ ...each, outline: outlined.has(each.name) })) : contracts, caller);
  }

  /** What the document of `kind` for `collections` (and `publishable`'s caller) is built of. */
  private inputs(kind: ContractKind, collections: readonly ServedCollection[], publishable: { claims: Claims } | undefined) {
    const { bases, feedTakesPublishable } = this.bases;
    const caller: DocumentCaller = publishable ? { publishable: true, feed: feedTakesPublishable } : {};
    const contracts = publishable
      ? this.viewed(collections, publishable.claims)
      : collections.map(({ name, schema, relations, ttl }) => ({ name, schema, relations, ttl }));
    return { base: bases[kind], contracts, caller };
  }

  /** The collections whose rules grant a caller with `claims` anything, each with what they grant. */
  private viewed(collections: readonly ServedCollection[], claims: Claims): CollectionContract[] {
    const viewed: CollectionContract[] = [];
    for (const { name, schema, relations, rules, ttl } of collections) {
      if (rules === null) continue;
      const view = collectionView(this.compiled.get(rules.collectionId, rules.version, rules.rules), claims);
      if (view.operations.length > 0) viewed.push({ name, schema, view, relations, ttl });
    }
    return viewed;
  }
}
