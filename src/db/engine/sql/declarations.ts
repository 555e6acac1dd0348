// The SQL of an account's declaration (docs/declarations.md) that no other area runs: what it reads of
// the whole account at once, a statement a kind of object, where an area's own reads take one collection.
/** Every index of the account's collections (`?`), each with its collection's name, in the order they were made. */
export const accountIndexesSql = `select c.name as collection, i.id, i.fields, i.is_unique, i.is_search from collection_indexes i
  join collections c on c.id = i.collection_id where c.account_id = ? order by i.id`;
/** The secrets of the account's webhooks (`?`), by id: compared, never shown. */
export const webhookSecretsSql = 'select id, secret from webhooks where account_id = ?';
/**
 * Lists the sort indexes (`?`, the JSON array of their fields) of the account's (`?`) collection `?`,
 * which a declaration's apply makes, in the transaction that makes it: it holds no row to key yet.
 */
export const setSortedOfNameSql = 'update collections set sorted = ? where account_id = ? and name = ?';
