// The SQL of collections' rules both dialects run (openapi.yaml, the `rules` tag; docs/access.md,
// "Rules"): the rules' JSON text is a column of the collection (null for none), beside their version,
// moved on by every change and never reused by the collection.
/** The collection's id, rules (null for none) and their version, by account and name. */
export const collectionRulesSql = 'select id, rules, rules_version from collections where account_id = ? and name = ?';
/** Sets the collection's rules to `?` (null: none), moving their version on; no row when the account has no such collection. */
export const setCollectionRulesSql =
  'update collections set rules = ?, rules_version = rules_version + 1 where account_id = ? and name = ? returning id, rules_version';
/** The collection's rules gone, their version moved on; no row when it has none, or the account has no such collection. */
export const dropCollectionRulesSql =
  'update collections set rules = null, rules_version = rules_version + 1 where account_id = ? and name = ? and rules is not null returning id';
