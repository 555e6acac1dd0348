// The order of a page of rows (openapi.yaml, listRows and queryRows): one top-level field or more, each
// with its direction. A list's `order_by` is a comma list of fields and its `order` one direction for
// all of them or a comma list as long; a query's `order` is a list of `{field, direction}`. Ties break
// by id in the direction of the last key, unless `id` is one of the keys. `_score`, a search's relevance,
// orders alone, the most relevant first, ties by id ascending.
import { type FieldError, validationFailed } from '../errors.ts';
import { type Filter, rankedSearch } from './filter.ts';

export type Direction = 'asc' | 'desc';

/**
 * One key of a page's order: a top-level field (`id`, the row's id) and its direction; or, with `related`,
 * a field of the row its to-one relation names (`author.name`, the key's `field` as the request names it).
 */
export interface SortKey {
  field: string;
  direction: Direction;
  related?: RelatedKey;
}

/**
 * What a key of an order through a to-one relation reads (docs/relations.md, "Ordering by a related row's
 * field"): the related row's top-level field `name` (`id`: its id), of the row of `collection` whose id the
 * row's field `field` holds; a row naming none, or one `filter` does not keep (a caller's read rule), or
 * one missing the field, orders as a missing value does.
 */
export interface RelatedKey {
  field: string;
  collection: string;
  name: string;
  filter?: Filter;
}

/** Whether the order has a key through a relation: such a page is sorted whole, never read through a sort index. */
export const ordersRelated = (order: readonly SortKey[]) => order.some((key) => key.related !== undefined);

/** Keys of one order at most: each is a column of the page's statement, and of its cursor. */
const MAX_ORDER_KEYS = 8;
/** Characters of one field's name at most (openapi.yaml, OrderBy and OrderKey). */
const MAX_ORDER_FIELD_LENGTH = 256;

/** The order that the list parameters `order_by` and `order` name, or a 400 naming the one that is wrong. */
export function orderFromParameters(orderBy: string, order: string): SortKey[] {
  const fields = orderBy.split(',');
  const directions = order.split(',') as Direction[];
  if (directions.length !== 1 && directions.length !== fields.length) {
    throw orderInvalid({
      in: 'query',
      name: 'order',
      message: `must be one direction for every field of order_by, or one for each of its ${fields.length}`,
    });
  }
  const keys = fields.map((field, index) => ({ field, direction: directions.length === 1 ? directions[0] : directions[index] }));
  const wrong = keysError(keys);
  if (wrong) throw orderInvalid({ in: 'query', name: 'order_by', message: wrong });
  if (scoreDirectionError(keys)) throw orderInvalid({ in: 'query', name: 'order', message: SCORE_DIRECTION });
  return withScoreDirection(keys);
}

/** The order of a query's body (`order`, default by id ascending), or a 400 pointing into it. */
export function orderFromBody(order: readonly { field: string; direction?: Direction }[] | undefined): SortKey[] {
  if (order === undefined || order.length === 0) return [{ field: 'id', direction: 'asc' }];
  const keys = order.map(({ field, direction = 'asc' }) => ({ field, direction }));
  const wrong = keysError(keys);
  if (wrong) throw orderInvalid({ in: 'body', name: '/order', message: wrong });
  if (scoreDirectionError(keys)) throw orderInvalid({ in: 'body', name: '/order/0/direction', message: SCORE_DIRECTION });
  return withScoreDirection(keys);
}

/**
 * The relevance of a row to the search at its filter's top level (docs/search.md, "Ranking"): not a
 * field of the row, but a key of an order and a field of `select` (a stored field of the name is
 * neither ordered by nor selected).
 */
export const SCORE = '_score';

const SCORE_DIRECTION = `${SCORE} orders by relevance, most relevant first: it takes no direction but asc, the default`;

/** Whether `keys` order by `_score` in a direction it does not take (`desc`). */
const scoreDirectionError = (keys: readonly SortKey[]) => keys.some(({ field, direction }) => field === SCORE && direction === 'desc');

/** `keys`, with `_score`'s direction the one it orders in: the highest score first. */
const withScoreDirection = (keys: SortKey[]): SortKey[] => (keys[0].field === SCORE ? [{ field: SCORE, direction: 'desc' }] : keys);

/**
 * Where a row's words match the search at its filter's top level (docs/search.md, "Highlights"): not a
 * field of the row, but a field of `select` (a stored field of the name is not selected).
 */
export const HIGHLIGHT = '_highlight';

/**
 * Whether a page reads its rows' relevance (`_score`), ordered by it or selecting it, or selects their
 * highlights (`_highlight`): then its filter's top level must hold a `$search` (rankedSearch()), or the
 * request is a 400 naming where it asked.
 */
export function readsRelevance(
  read: { order: readonly SortKey[]; select?: readonly string[]; filter?: Filter },
  where: 'query' | 'body',
): boolean {
  const ordered = read.order.some(({ field }) => field === SCORE);
  const selected = read.select?.find((field) => field === SCORE || field === HIGHLIGHT);
  if (!ordered && !selected) return false;
  if (rankedSearch(read.filter)) return true;
  const name = ordered ? (where === 'query' ? 'order_by' : '/order/0/field') : where === 'query' ? 'select' : '/select';
  const named = ordered ? SCORE : (selected as string);
  throw validationFailed(`${named} is of the rows' words matching a search: the filter's top level must hold a $search.`, [
    { in: where, name, message: `names ${named} without a $search at the filter's top level (beside its other members, or in its $and)` },
  ]);
}

/** What is wrong with `keys` as an order, or undefined. */
function keysError(keys: readonly SortKey[]): string | undefined {
  if (keys.length > MAX_ORDER_KEYS) return `names ${keys.length} fields, and may name ${MAX_ORDER_KEYS} at most`;
  if (keys.some(({ field }) => field === '')) return 'names an empty field';
  if (keys.length > 1 && keys.some(({ field }) => field === SCORE)) return `names ${SCORE}, which orders a page alone (ties by id)`;
  if (keys.some(({ field }) => field.length > MAX_ORDER_FIELD_LENGTH)) {
    return `names a field longer than ${MAX_ORDER_FIELD_LENGTH} characters`;
  }
  const seen = new Set<string>();
  for (const { field } of keys) {
    if (seen.has(field)) return `names the field ${JSON.stringify(field)} twice`;
    seen.add(field);
  }
  return undefined;
}

const orderInvalid = (error: FieldError) => validationFailed('The order is not valid.', [error]);
