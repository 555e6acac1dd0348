// The expansions a read asks for (openapi.yaml, `expand`; docs/relations.md), resolved against the
// relations of each collection they go through, and bound to the rules the caller is held to in each.
import type { components } from '../../generated/openapi.ts';
import type { Principal } from '../db/accounts/keys.ts';
import type { Store } from '../db/open-store.ts';
import type { Expansion } from '../db/reads/expand.ts';
import { type FieldError, validationFailed } from '../errors.ts';
import { parseFilter } from '../query/filter.ts';
import { orderFromBody } from '../query/order.ts';
import { filterFields } from '../rules/access.ts';
import type { Claims } from '../tokens/verifier.ts';
import { grantIn } from './grants.ts';
import { checkReaches, relatedFilter, relatedOrder } from './related.ts';

type ExpandOptions = components['schemas']['ExpandLast'] & { expand?: Record<string, ExpandOptions> };
type ExpandQuery = Record<string, ExpandOptions>;

/** Relations expanded one within another at most. */
const MAX_DEPTH = 3;
/** A to-many relation's rows of each row, when the request says not, and at most. */
const DEFAULT_MANY = 10;

/** A place of the request: the query parameter `expand`, or a JSON Pointer into the body. */
type Place = { in: 'query' } | { in: 'body'; pointer: string };

/**
 * Reads the query parameter `expand` (`author,comments.author`) as the body's `expand` would say it. Each
 * level is an object without a prototype, so that every name is a member of its own, as JSON.parse makes
 * the body's: `__proto__` or `constructor` is a relation that is none (400), never a property every
 * object inherits, which a request would otherwise change for all the server's requests.
 */
export function expandParameter(text: string): ExpandQuery {
  const query: ExpandQuery = Object.create(null);
  for (const dotted of text.split(',')) {
    let level = query;
    for (const name of dotted.split('.')) {
      level[name] ??= { expand: Object.create(null) };
      level = level[name].expand as ExpandQuery;
    }
  }
  return query;
}

/**
 * The expansions `query` asks of the collection's rows, each relation looked up in its collection (400
 * for a name that is none, or deeper than MAX_DEPTH), with the rules the caller is held to in the related
 * collection: its rows filtered by the read rule, their hidden fields masked.
 */
export async function expansionsOf(
  store: Store,
  principal: Principal,
  claims: Claims | null | undefined,
  collection: string,
  query: ExpandQuery,
  place: Place,
  depth = 1,
  path = '',
): Promise<Expansion[]> {
  const names = Object.keys(query);
  if (names.length === 0) return [];
  const at = (name: string, member = ''): FieldError =>
    place.in === 'query'
      ? { in: 'query', name: 'expand', message: `${path}${name}${member ? ` (${member})` : ''}` }
      : { in: 'body', name: `${place.pointer}/${name}${member ? `/${member}` : ''}`, message: '' };
  if (depth > MAX_DEPTH)
    throw validationFailed(`Relations expand ${MAX_DEPTH} deep at most.`, [
      { ...at(names[0]), message: `${at(names[0]).message} expands deeper than ${MAX_DEPTH} relations`.trim() },
    ]);
  const relations = await store.findRelations(principal.accountId, collection);
  const expansions: Expansion[] = [];
  for (const name of names) {
    const options = query[name];
    const relation = relations.find((candidate) => candidate.name === name);
    if (!relation)
      throw validationFailed(`Collection ${collection} has no relation named ${name}.`, [
        { ...at(name), message: `${at(name).message} names no relation of ${collection}`.trim() },
      ]);
    checkReaches(principal, relation);
    const toMany = relation.kind === 'to_many';
    for (const member of ['filter', 'order', 'limit'] as const)
      if (!toMany && options[member] !== undefined)
        throw validationFailed(`A to-one relation's row is one: ${member} is for a to-many relation.`, [
          { ...at(name, member), message: `${at(name, member).message} is for a to-many relation only`.trim() },
        ]);
    const filterPlace =
      place.in === 'query' ? { in: 'query' as const, name: 'expand' } : { in: 'body' as const, name: at(name, 'filter').name };
    const grant = await grantIn(store, principal, claims, relation.collection);
    const asked = options.filter === undefined ? undefined : parseFilter(options.filter, filterPlace);
    // Its conditions through relations of the related collection, held to the rules of theirs.
    const filter = await relatedFilter(store, principal, claims, relation.collection, asked, grant, filterPlace);
    const orderPlace = (index: number) =>
      place.in === 'query'
        ? { in: 'query' as const, name: 'expand' }
        : { in: 'body' as const, name: `${at(name, 'order').name}/${index}/field` };
    // Its keys through relations of the related collection (`author.name`), held to the rules of theirs.
    const order = await relatedOrder(store, principal, claims, relation.collection, orderFromBody(options.order), grant, orderPlace);
    grant?.checkReadable(
      [...filterFields(filter), ...(options.select ?? []), ...order.flatMap(({ field, related }) => (related ? [] : [field]))]
        .filter((field) => field !== 'id')
        .map((field) => ({ field, at: { in: filterPlace.in, name: filterPlace.name } })),
    );
    const nested = place.in === 'query' ? place : { in: 'body' as const, pointer: `${place.pointer}/${name}/expand` };
    expansions.push({
      name,
      kind: relation.kind,
      collection: relation.collection,
      field: relation.field,
      filter: grant ? grant.scope(filter, 'read') : filter,
      order,
      limit: options.limit ?? DEFAULT_MANY,
      mask: grant && ((json) => grant.maskRows(json)),
      select: options.select?.filter((field) => field !== 'id'),
      expand: await expansionsOf(store, principal, claims, relation.collection, options.expand ?? {}, nested, depth + 1, `${path}${name}.`),
    });
  }
  return expansions;
}
