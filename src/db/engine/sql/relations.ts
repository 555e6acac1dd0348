// The SQL of relations both dialects run (openapi.yaml, the `relations` tag; docs/relations.md): each a
// row of collection_relations, declared of its collection, naming the collection its field's ids are of.
const relationColumns = `r.name, r.field, r.on_delete, r.reverse, r.created_at, r.collection_id, r.target_id,
  s.name as source_name, t.name as target_name`;
const relationJoins = 'collection_relations r join collections s on s.id = r.collection_id join collections t on t.id = r.target_id';

/** The relations of the collection `?` and to it (the collection `?` again), in the order they were declared. */
export const relationsOfSql = `select ${relationColumns} from ${relationJoins} where r.collection_id = ? or r.target_id = ? order by r.id`;
/**
 * The account's collection `?` named `?`: its id, schema id and sort indexes' fields, then each relation of
 * it and to it (as relationsOfSql, one a row, with the fields each side has sort indexes of, and the
 * related collection's unique indexes), or one row of
 * nulls beside them when it has none. No row: no such collection. One read where a filter through
 * relations made three.
 */
export const relationsOfNamedSql = `select c.id, c.schema_id, c.sorted, c.ttl_field, ${relationColumns}, s.sorted as source_sorted, s.ttl_field as source_ttl,
  t.sorted as target_sorted, t.ttl_field as target_ttl, t.uniques as target_uniques
  from collections c left join (${relationJoins}) on r.collection_id = c.id or r.target_id = c.id
  where c.account_id = ? and c.name = ? order by r.id`;
/** Every relation of the account's collections (`?`), in the order they were declared. */
export const accountRelationsSql = `select ${relationColumns} from ${relationJoins} where s.account_id = ? order by r.id`;
/** Declares the relation, replacing the one of that name the collection had. */
export const insertRelationSql = `insert into collection_relations (collection_id, name, field, target_id, on_delete, reverse, created_at)
  values (?, ?, ?, ?, ?, ?, ?)`;
/** The collection `?`'s relation `?`, gone; answers the collection it named. */
export const deleteRelationSql = 'delete from collection_relations where collection_id = ? and name = ? returning target_id';
/** Every relation of and to the collection `?` (`?` again), gone; answers the other collections they joined. */
export const dropRelationsSql =
  'delete from collection_relations where collection_id = ? or target_id = ? returning collection_id, target_id';
/** The collection `?`'s schema id and name. */
export const collectionByIdSql = 'select schema_id, name from collections where id = ?';
/** The fields the collection `?` has sort indexes of, by id, as a JSON array (a name's place its slot). */
export const sortedSql = 'select sorted from collections where id = ?';
