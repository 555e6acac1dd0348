// `rowbase tokens mint`: an end user's token (a JWT) signed with one of an account's HS256 issuers, as the
// app's own backend signs them (docs/access.md, "Tokens from the app's backend"), for development and tests.
// The token carries what the server's verification asks of it (src/tokens/verifier.ts): the issuer's `iss`,
// one of its audiences in `aud`, `sub`, `iat` and `exp`.
import { SignJWT } from 'jose';
import bounds from '../../generated/bounds.json' with { type: 'json' };
import type { Issuer } from '../db/auth/issuers.ts';
import { setMember } from '../rows.ts';
import { accountId } from './collection-file.ts';
import { type Command, durationMs, print, required, UsageError, type Values, withStore } from './command.ts';

const issuerName = new RegExp(bounds.IssuerName.pattern);

/** The claims a token's issuer and --expires-in set, which --claim may not. */
const SET_CLAIMS = ['iss', 'aud', 'exp', 'iat', 'nbf', 'sub'];

/** How long a token lives without --expires-in. */
const DEFAULT_LIFETIME = '1h';

export const tokensMintCommand: Command = {
  usage:
    'rowbase tokens mint --account <name> --issuer <name> --sub <subject> [--claim <name>=<value> …] [--audience <aud>] [--expires-in <1h>]',
  summary:
    "Sign an end user's token with an account's HS256 issuer, as the app's backend would, and print it. For development and tests: the issuer is one set with a secret, and the token carries iss, aud, sub, iat and exp as the server verifies them. An issuer of a key set (jwks_uri, discovery_url) is refused: its identity provider signs its tokens (docs/access.md).",
  options: {
    account: { type: 'string', description: 'the account whose issuer signs' },
    issuer: { type: 'string', description: "the issuer's name, as in PUT /v1/auth/issuers/{name}" },
    sub: { type: 'string', description: 'the end user: the token\'s sub, which rules name as {"$auth": "sub"}' },
    claim: {
      type: 'string',
      multiple: true,
      description: 'another claim, name=value, the value read as JSON when it is JSON (n=5, orgs=["a"]) and else a string; repeatable',
    },
    audience: { type: 'string', description: "the token's aud, one of the issuer's audiences; default its first" },
    'expires-in': {
      type: 'string',
      description: `the token expires after this long: a whole number and s, m, h or d (default ${DEFAULT_LIFETIME})`,
    },
  },
  async run(values) {
    const account = required(values, 'account');
    const name = required(values, 'issuer');
    if (!issuerName.test(name))
      throw new UsageError(`--issuer must be an issuer's name (openapi.yaml, IssuerName), not ${JSON.stringify(name)}`);
    const sub = required(values, 'sub');
    const claims = extraClaims(values);
    const lifetime = durationMs((values['expires-in'] as string | undefined) ?? DEFAULT_LIFETIME, '--expires-in');
    // Every refusal comes before withStore's line about the database, which only work done prints.
    const { issuer, secret, audience } = await withStore(async (store) => {
      const found = await store.getIssuer(await accountId(store, account), name);
      if (!found) throw new UsageError(`account ${account} has no issuer named ${name}; set one with PUT /v1/auth/issuers/${name}`);
      const wanted = (values.audience as string | undefined) ?? found.audiences[0];
      if (!found.audiences.includes(wanted)) {
        throw new UsageError(
          `--audience must be one of issuer ${name}'s audiences (${found.audiences.join(', ')}), not ${JSON.stringify(wanted)}`,
        );
      }
      return { issuer: found, secret: signingSecret(found, account), audience: wanted };
    });
    const now = Math.floor(Date.now() / 1000);
    const expires = now + Math.ceil(lifetime / 1000);
    const token = await new SignJWT({ ...claims, sub })
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setIssuer(issuer.issuer)
      .setAudience(audience)
      .setIssuedAt(now)
      .setExpirationTime(expires)
      .sign(new TextEncoder().encode(secret));
    const until = new Date(expires * 1000).toISOString();
    process.stderr.write(`rowbase: a token of issuer ${name} (iss ${issuer.issuer}, aud ${audience}) for sub ${sub}, until ${until}\n`);
    print(token);
  },
};

/** The secret an issuer signs with: 400-like refusal (exit 2) for an issuer of a key set, whose keys are not ours. */
function signingSecret(issuer: Issuer, account: string): string {
  if (issuer.secret !== null) return issuer.secret;
  const source = issuer.jwks_uri === null ? 'the key set its discovery_url names' : 'the key set at its jwks_uri';
  throw new UsageError(
    `issuer ${issuer.name} of account ${account} takes tokens signed with ${source}, whose private keys rowbase does not hold: its identity provider signs them; tokens mint signs for an issuer set with a secret`,
  );
}

/** The claims of --claim, by name; a claim the issuer or another option sets, or one given twice, is refused. */
function extraClaims(values: Values): Record<string, unknown> {
  const given = (values.claim as unknown as string[] | undefined) ?? [];
  const claims: Record<string, unknown> = {};
  for (const each of given) {
    const equals = each.indexOf('=');
    if (equals < 1) throw new UsageError(`--claim must be name=value, not ${JSON.stringify(each)}`);
    const name = each.slice(0, equals);
    const text = each.slice(equals + 1);
    if (SET_CLAIMS.includes(name)) {
      throw new UsageError(
        name === 'sub' ? '--claim may not set sub: give --sub' : `--claim may not set ${name}: the issuer and --expires-in set it`,
      );
    }
    if (Object.hasOwn(claims, name)) throw new UsageError(`--claim names ${name} twice`);
    let value: unknown = text;
    try {
      value = JSON.parse(text);
    } catch {
      // Not JSON: the value is the text itself (role=admin).
    }
    // A claim named __proto__ is a claim like any other: defined, never set through the prototype.
    setMember(claims, name, value);
  }
  return claims;
}
