// The account's token issuers (openapi.yaml, the `auth` tag; docs/access.md, "Token issuers"): who may
// sign the tokens of the account's end users, and with which keys. Tokens are verified outside the data
// layer (src/tokens/verifier.ts), with the issuers read here.
import { conflict } from '../../errors.ts';
import type { Once } from '../../idempotency/answers.ts';
import type { Dialect, SqlValue, WriteTx } from '../engine/dialect.ts';
import { deleteIssuerSql, insertIssuerSql, issuerSql, listIssuersSql, replaceIssuerSql } from '../engine/sql/auth.ts';
import { lockAccountSql } from '../engine/sql/collections.ts';
import { beginOnce, recordOnce } from '../rows/idempotency.ts';

/** What an issuer's owner sets of it (openapi.yaml, IssuerInput): exactly one of the three key sources is set. */
export interface IssuerSettings {
  /** The `iss` its tokens carry. */
  issuer: string;
  /** The `aud` values its tokens may carry for this account: one of them at least. */
  audiences: string[];
  /** Where its public keys are (a JWKS). */
  jwks_uri: string | null;
  /** Where its OpenID discovery document is, whose `jwks_uri` names its JWKS. */
  discovery_url: string | null;
  /** The shared secret of its HS256 tokens, which is never answered back. */
  secret: string | null;
}

/** An issuer as stored, with its id (new each time one is made) and its name among the account's. */
export interface Issuer extends IssuerSettings {
  id: number;
  name: string;
  created_at: string;
  updated_at: string;
}

/** An account's issuers, as a token of the account is verified with them (src/tokens/verifier.ts, verifyToken). */
export interface AccountIssuers {
  accountId: number;
  issuers: readonly Issuer[];
}

/** What a PUT of an issuer came to: the issuer as it now is, and whether it was made (else replaced). */
export interface PutIssuer {
  issuer: Issuer;
  created: boolean;
}

export type IssuerRow = Omit<Issuer, 'id' | 'audiences'> & { id: number | string; audiences: string };

export const issuerOf = (row: IssuerRow): Issuer => ({ ...row, id: Number(row.id), audiences: JSON.parse(row.audiences) as string[] });

const settingsValues = (settings: IssuerSettings): SqlValue[] => [
  settings.issuer,
  JSON.stringify(settings.audiences),
  settings.jwks_uri,
  settings.discovery_url,
  settings.secret,
];

/**
 * Sets the account's issuer `name` to `settings`: replaces it, or makes it unless the account holds `max`
 * issuers already (409). Exact under concurrency, as createWebhook is: the account's row is held until
 * commit. With an Idempotency-Key, its answer is stored in the same transaction (idempotency.ts).
 */
export async function putIssuer(
  db: Dialect,
  accountId: number,
  name: string,
  settings: IssuerSettings,
  max: number,
  once?: Once<PutIssuer>,
): Promise<PutIssuer> {
  return db.knex.transaction(async (trx) => {
    if (once) await beginOnce(db, trx, accountId, once);
    const put = await putIssuerIn(db, trx, accountId, name, settings, max);
    if (once) await recordOnce(db, trx, accountId, once, put);
    return put;
  });
}

/** putIssuer() inside the write `trx`, which then holds the account's row. */
export async function putIssuerIn(db: Dialect, trx: WriteTx, accountId: number, name: string, settings: IssuerSettings, max: number) {
  await db.run(trx, lockAccountSql, [accountId]);
  const now = new Date().toISOString();
  const [replaced] = await db.run<{ id: number | string; created_at: string }>(trx, replaceIssuerSql, [
    ...settingsValues(settings),
    now,
    accountId,
    name,
  ]);
  let put: PutIssuer;
  if (replaced) {
    put = { issuer: { id: Number(replaced.id), name, ...settings, created_at: replaced.created_at, updated_at: now }, created: false };
  } else {
    const params = [accountId, name, ...settingsValues(settings), now, now, accountId, max];
    const [inserted] = await db.run<{ id: number | string }>(trx, insertIssuerSql, params);
    if (!inserted) throw conflict(`The account holds ${max} token issuers, the most it may: delete one to make another.`);
    put = { issuer: { id: Number(inserted.id), name, ...settings, created_at: now, updated_at: now }, created: true };
  }
  return put;
}

/** The account's issuers, by name in code point order. */
export async function listIssuers({ query, codePointOrder }: Dialect, accountId: number): Promise<Issuer[]> {
  return (await query<IssuerRow>(listIssuersSql(codePointOrder), [accountId])).map(issuerOf);
}

/** The account's issuer `name`, or undefined when it has none of that name. */
export async function getIssuer({ query }: Dialect, accountId: number, name: string): Promise<Issuer | undefined> {
  const [row] = await query<IssuerRow>(issuerSql, [accountId, name]);
  return row && issuerOf(row);
}

/** Deletes the account's issuer `name`; false when it has none. With an Idempotency-Key, its answer stored. */
export async function deleteIssuer(db: Dialect, accountId: number, name: string, once?: Once<boolean>): Promise<boolean> {
  return db.knex.transaction(async (trx) => {
    if (once) await beginOnce(db, trx, accountId, once);
    const deleted = await deleteIssuerIn(db, trx, accountId, name);
    // An issuer not found is a 404, which stores no answer.
    if (deleted && once) await recordOnce(db, trx, accountId, once, true);
    return deleted;
  });
}

/** deleteIssuer() inside the write `trx`: false when the account has no such issuer. */
export async function deleteIssuerIn(db: Dialect, trx: WriteTx, accountId: number, name: string): Promise<boolean> {
  return (await db.run(trx, deleteIssuerSql, [accountId, name])).length > 0;
}
