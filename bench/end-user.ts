// The app of get-row-app and list-app (issue 53, "Speed"): what an app that calls rowbase directly sends,
// a publishable key and its user's token, and what the account holds for it: the token issuer of the app's
// own backend (HS256, a shared secret; docs/access.md, "Token issuers") and the one-field rule of `bench`
// that lets a user read the rows it owns. Every row of `bench` is the bench user's (seed.ts, ownedRow).
import { SignJWT } from 'jose';
import { BENCH_USER, collections, send } from './seed.ts';

/** The issuer of the app's backend, as PUT /v1/auth/issuers/{name} takes it. */
export const issuer = {
  name: 'bench-app',
  issuer: 'https://auth.bench.example',
  audiences: ['rowbase-bench'],
  secret: 'the bench app backend signs its users tokens with this',
} as const;

/** The rules of `bench` (openapi.yaml, Rules): a user reads the rows it owns, and writes none through the app. */
export const rules = { read: { owner: { $auth: 'sub' } } };

/**
 * Sets up the app on the account of `key` (an admin key) in the rowbase at `url`: the issuer, the rules of
 * `bench`, and a publishable key of one origin and no rate per end user, whose key it answers. Stored in
 * the database, so that every copy of a seeded file holds them.
 */
export async function setUpApp(url: string, key: string): Promise<string> {
  const { name, ...settings } = issuer;
  await send(url, key, 'PUT', `/v1/auth/issuers/${name}`, settings);
  await send(url, key, 'PUT', `/v1/collections/${collections.rows}/rules`, rules);
  const created = (await send(url, key, 'POST', '/v1/keys', { kind: 'publishable', origins: ['https://app.bench.example'] })) as {
    key: string;
  };
  return created.key;
}

/**
 * The rules of the feed's `fanout` for fanout-rules: a user reads the rows of the teams its token names
 * (seed.ts, fanoutClaims), and no row's `text`: each subscriber's own rows, each message masked.
 */
export const fanoutRules = { read: { team: { $in: { $auth: 'teams' } } }, fields: { text: { read: false } } };

/** A token of the app's user `subject` (the bench user's by default), as the app's backend mints it, valid for `seconds` from now. */
export function endUserToken(seconds: number, claims: Record<string, unknown> = {}, subject: string = BENCH_USER): Promise<string> {
  return new SignJWT(claims)
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setIssuer(issuer.issuer)
    .setAudience(issuer.audiences[0])
    .setSubject(subject)
    .setIssuedAt()
    .setExpirationTime(Math.floor(Date.now() / 1000) + seconds)
    .sign(new TextEncoder().encode(issuer.secret));
}
