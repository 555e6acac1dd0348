// What one subscriber sees of its collection's changes (asyncapi.yaml, "Rules"): the rows its filter
// matches and, with a publishable key, only those its end user's read rule grants, without the fields
// the rules hide from them. The rule is the HTTP API's (rules/access.ts, Grant): its filter ANDed into
// the subscription's, tested in memory on the rows each message already holds, never by a query.
import { compileFilter, type RowTest } from '../query/evaluate.ts';
import type { Filter } from '../query/filter.ts';
import { filterFields, Grant } from '../rules/access.ts';
import type { CompiledRules, Claims as RuleClaims } from '../rules/compile.ts';

/** What a subscriber sees of each change: which changes touch its view, and how the rows they carry are shown. */
export interface FeedView {
  /** The subscription's filter, ANDed with the end user's read rule; undefined: every row. */
  test: RowTest | undefined;
  /**
   * The end user's grant, when the rows a message carries depend on it: a read rule that is a filter (a
   * row the message carries outside it is shown by its id alone) or fields it hides (masked).
   * Undefined: messages carry their rows as they are, framed once for every subscriber.
   */
  grant?: Grant;
}

/** With a publishable key, the end user a subscription is held to. */
export interface EndUser {
  /** Their token, verified again while the socket is open; absent for an anonymous caller. */
  token?: string;
  claims: RuleClaims;
  /** When the token is refused as expired (ms since the epoch), and the socket closes; absent for an anonymous caller. */
  refusedFrom?: number;
  /** The rules the view was made from: made again when the collection's compiled rules are others. */
  rules: CompiledRules;
}

/** A view no change touches: a subscriber whose rules could not be worked out gets nothing. */
export const NOTHING: FeedView = { test: () => false };

/**
 * The view of a subscription whose filter is `filter`, held to `grant` (undefined with a secret key).
 * Throws the 403 of the upgrade, as the HTTP API answers a read: the read rule grants the caller no
 * row at all, or the filter names a field the rules hide from them.
 */
export function feedView(filter: Filter | undefined, grant: Grant | undefined): FeedView {
  if (!grant) return { test: filter && compileFilter(filter) };
  const scoped = grant.scope(filter, 'read');
  grant.checkReadable(filterFields(filter).map((field) => ({ field, at: { in: 'query', name: 'filter' } })));
  const test = scoped && compileFilter(scoped);
  return grant.scope(undefined, 'read') !== undefined || grant.hides ? { test, grant } : { test };
}

/** The view of `endUser` as `rules` hold them, for a subscription filtered by `filter` of `collection` (throws as feedView does). */
export const endUserView = (filter: Filter | undefined, endUser: EndUser, rules: CompiledRules, collection: string): FeedView =>
  feedView(filter, new Grant(rules, endUser.claims, collection));
