// The SQL of token issuers both dialects run (openapi.yaml, the `auth` tag; docs/access.md, "Token
// issuers"). `audiences` is a JSON array of strings; of `jwks_uri`, `discovery_url` and `secret`, one
// is set. `collate` is the dialect's clause that orders text by code point (Dialect.codePointOrder).
const issuerColumns = 'id, name, issuer, audiences, jwks_uri, discovery_url, secret, created_at, updated_at';
export const listIssuersSql = (collate: string) => `select ${issuerColumns} from auth_issuers where account_id = ? order by name${collate}`;
export const issuerSql = `select ${issuerColumns} from auth_issuers where account_id = ? and name = ?`;
/** Replaces the settings of the account's issuer `?` (its name), answering its id and when it was made; no row when it has none. */
export const replaceIssuerSql = `update auth_issuers set issuer = ?, audiences = ?, jwks_uri = ?, discovery_url = ?, secret = ?, updated_at = ?
  where account_id = ? and name = ? returning id, created_at`;
/** Makes the account's issuer, unless it holds `?` already: then no row is answered. */
export const insertIssuerSql = `insert into auth_issuers (account_id, name, issuer, audiences, jwks_uri, discovery_url, secret, created_at, updated_at)
  select ?, ?, ?, ?, ?, ?, ?, ?, ? where (select count(*) from auth_issuers where account_id = ?) < ? returning id`;
export const deleteIssuerSql = 'delete from auth_issuers where account_id = ? and name = ? returning id';
