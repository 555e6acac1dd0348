// Filters through relations (`$match`, `$some`) and orders by a related row's field (`author.name`;
// docs/relations.md) as the caller may use them: each resolved against the relations of the collection it
// is a filter or an order of, a related collection the key is not limited to refused (403), and for a
// caller held to rules (a publishable key) the related collection's rules applied, as a read of that
// collection would apply them: its read rule ANDed into the inner filter, so that a related row the caller
// may not read never matches (and orders as a missing value), and a field it hides refused (403 naming
// it), as a filter or an order on a hidden field is. The store then reads them.
import type { components } from '../../generated/openapi.ts';
import type { Principal } from '../db/accounts/keys.ts';
import type { Store } from '../db/open-store.ts';
import { type FieldError, forbidden, validationFailed } from '../errors.ts';
import { type Filter, holdsRelated, type RelatedCondition } from '../query/filter.ts';
import type { SortKey } from '../query/order.ts';
import { filterFields, type Grant } from '../rules/access.ts';
import type { Claims } from '../tokens/verifier.ts';
import { grantIn } from './grants.ts';

type Relation = components['schemas']['Relation'];

/** Where the request holds a filter, as its errors name it. */
export type FilterPlace = Omit<FieldError, 'message'>;

/** 403 unless the key reaches `relation`'s collection: one limited to named collections reaches no other through a relation. */
export function checkReaches(principal: Principal, relation: Relation): void {
  if (principal.collections && !principal.collections.has(relation.collection))
    throw forbidden(
      `The key is limited to collections it names, and ${relation.collection}, which ${relation.name} relates to, is not one of them.`,
    );
}

/**
 * `filter` (of `collection`), each of its conditions through a relation resolved as the caller may use it;
 * `grant` is what the caller may do with `collection` (undefined for a secret key). 400 for a name that is
 * no relation of its kind; 403 for a related collection the key does not reach, whose rules deny the caller
 * every row, or that hide a field the condition names (or the relation's field: which related row a row
 * names tells its value). A filter without such conditions comes back as it is.
 */
export async function relatedFilter<F extends Filter | undefined>(
  store: Store,
  principal: Principal,
  claims: Claims | null | undefined,
  collection: string,
  filter: F,
  grant: Grant | undefined,
  at: FilterPlace,
): Promise<F> {
  if (!filter || !holdsRelated(filter) || (claims === undefined && !principal.collections)) return filter;
  const resolver = new Resolver(store, principal, claims, at);
  return (await resolver.resolve(collection, filter, grant)) as F;
}

class Resolver {
  private readonly relations = new Map<string, Promise<Relation[]>>();

  constructor(
    private readonly store: Store,
    private readonly principal: Principal,
    private readonly claims: Claims | null | undefined,
    private readonly at: FilterPlace,
  ) {}

  async resolve(collection: string, filter: Filter, grant: Grant | undefined): Promise<Filter> {
    switch (filter.kind) {
      case 'and':
      case 'or': {
        const filters: Filter[] = [];
        for (const each of filter.filters) filters.push(await this.resolve(collection, each, grant));
        return { kind: filter.kind, filters };
      }
      case 'not':
        return { kind: 'not', filter: await this.resolve(collection, filter.filter, grant) };
      case 'related':
        return this.related(collection, filter, grant);
      default:
        return filter;
    }
  }

  private async related(collection: string, condition: RelatedCondition, grant: Grant | undefined): Promise<RelatedCondition> {
    const relation = await this.relationOf(collection, condition);
    checkReaches(this.principal, relation);
    if (this.claims === undefined) return { ...condition, filter: await this.resolve(relation.collection, condition.filter, undefined) };
    const related = (await grantIn(this.store, this.principal, this.claims, relation.collection)) as Grant;
    // The field holding the ids: this collection's for a to-one, the related one's for a to-many.
    (condition.op === '$match' ? grant : related)?.checkReadable([{ field: relation.field, at: this.at }]);
    related.checkReadable(filterFields(condition.filter).map((field) => ({ field, at: this.at })));
    const inner = await this.resolve(relation.collection, condition.filter, related);
    return { ...condition, filter: related.scope(inner, 'read') };
  }

  /** The relation `condition` names: a to-one for `$match`, a to-many for `$some`; 400 for none. */
  private async relationOf(collection: string, condition: RelatedCondition): Promise<Relation> {
    let relations = this.relations.get(collection);
    if (!relations) {
      relations = this.store.findRelations(this.principal.accountId, collection);
      this.relations.set(collection, relations);
    }
    const kind = condition.op === '$match' ? 'to_one' : 'to_many';
    const found = (await relations).find((relation) => relation.name === condition.relation && relation.kind === kind);
    if (found) return found;
    const named = kind === 'to_one' ? 'to-one' : 'to-many';
    throw validationFailed(`Collection ${collection} has no ${named} relation named ${condition.relation}.`, [
      { ...this.at, message: `${condition.relation}: ${condition.op} names no ${named} relation of ${collection}` },
    ]);
  }
}

/**
 * `order` (of `collection`), each key that names a to-one relation's field (`author.name`: the relation,
 * a dot, a top-level field of the related row) resolved to a key through it; a key whose part before its
 * first dot names no to-one relation stays a top-level field of the row, as before relations. `grant` as
 * relatedFilter()'s; `at(index)` is where the request names the key. 400 for a relation followed by no
 * field; 403 for a related collection the key does not reach, whose rules deny the caller every row, or
 * that hide the field (or the relation's field, hidden in this collection).
 */
export async function relatedOrder(
  store: Store,
  principal: Principal,
  claims: Claims | null | undefined,
  collection: string,
  order: SortKey[],
  grant: Grant | undefined,
  at: (index: number) => FilterPlace,
): Promise<SortKey[]> {
  if (!order.some(({ field }) => field.includes('.'))) return order;
  const relations = (await store.findRelations(principal.accountId, collection)).filter((relation) => relation.kind === 'to_one');
  const keys: SortKey[] = [];
  for (const [index, key] of order.entries()) {
    const dot = key.field.indexOf('.');
    const relation = dot > 0 ? relations.find(({ name }) => name === key.field.slice(0, dot)) : undefined;
    if (!relation) {
      keys.push(key);
      continue;
    }
    const name = key.field.slice(dot + 1);
    if (name === '')
      throw validationFailed(`An order through the relation ${relation.name} names a field of its rows after the dot.`, [
        { ...at(index), message: `${key.field} names no field of ${relation.collection}` },
      ]);
    checkReaches(principal, relation);
    const related = await grantIn(store, principal, claims, relation.collection);
    grant?.checkReadable([{ field: relation.field, at: at(index) }]);
    if (name !== 'id') related?.checkReadable([{ field: name, at: at(index) }]);
    const filter = related?.scope(undefined, 'read');
    keys.push({ ...key, related: { field: relation.field, collection: relation.collection, name, ...(filter ? { filter } : {}) } });
  }
  return keys;
}
