// The handlers of the `auth` tag: the account's issuers of end users' tokens.
import type { components } from '../../generated/openapi.ts';
import type { Principal } from '../db/accounts/keys.ts';
import type { IssuerSettings, PutIssuer, Issuer as StoredIssuer } from '../db/auth/issuers.ts';
import { forbidden, notFound, validationFailed } from '../errors.ts';
import { answerOnce } from '../idempotency/answers.ts';
import { urlProblem } from '../webhooks/address.ts';
import type { Handlers, Result } from './types.ts';

type Issuer = components['schemas']['Issuer'];
type IssuerInput = components['schemas']['IssuerInput'];

/** The most token issuers an account holds (openapi.yaml, putIssuer). */
const MAX_ISSUERS_PER_ACCOUNT = 20;

/** Where an issuer's key may come from, one of which each issuer has. */
const keySources = ['jwks_uri', 'discovery_url', 'secret'] as const;

// The account's issuers of end users' tokens (openapi.yaml, the `auth` tag; docs/access.md, "Token
// issuers"), managed by its admin keys. Tokens are verified with them by src/tokens/verifier.ts.
export const authHandlers: Handlers<'listIssuers' | 'getIssuer' | 'putIssuer' | 'deleteIssuer'> = {
  async listIssuers({ principal }, { store }) {
    wholeAccount(principal);
    return { status: 200, body: (await store.listIssuers(principal.accountId)).map(shown) };
  },

  async getIssuer({ principal, path }, { store }) {
    wholeAccount(principal);
    const issuer = await store.getIssuer(principal.accountId, path.issuer_name);
    if (!issuer) throw issuerNotFound(path.issuer_name);
    return { status: 200, body: shown(issuer) };
  },

  async putIssuer({ principal, path, body, once }, { store, config }) {
    wholeAccount(principal);
    const settings = await settingsOf(body, config.webhooksAllowPrivate);
    const put = await store.putIssuer(
      principal.accountId,
      path.issuer_name,
      settings,
      MAX_ISSUERS_PER_ACCOUNT,
      once && answerOnce(once, answerPut),
    );
    return answerPut(put);
  },

  async deleteIssuer({ principal, path, once }, { store }) {
    wholeAccount(principal);
    if (!(await store.deleteIssuer(principal.accountId, path.issuer_name, once && answerOnce(once, answerDeleted)))) {
      throw issuerNotFound(path.issuer_name);
    }
    return answerDeleted();
  },
};

// The answers of the writes an Idempotency-Key may replay, each made by one function, which the write
// is also handed to store the answer it makes (idempotency/answers.ts, answerOnce).

function answerPut({ issuer, created }: PutIssuer): Result {
  return { status: created ? 201 : 200, body: shown(issuer) };
}

function answerDeleted(): Result {
  return { status: 204 };
}

const issuerNotFound = (name: string) => notFound(`There is no token issuer named ${name}.`);

/**
 * 403 for a key limited to collections: an issuer's tokens reach every collection of the account, so
 * such a key, which sees only what it could have made (openapi.yaml, the `keys` tag), manages none.
 */
function wholeAccount(principal: Principal): void {
  if (principal.collections) throw forbidden("This key is limited to collections: token issuers are the whole account's.");
}

/** The issuer as answered: which key it has, never its secret. */
function shown({ name, issuer, audiences, jwks_uri, discovery_url, created_at, updated_at }: StoredIssuer): Issuer {
  const key_source = jwks_uri !== null ? 'jwks_uri' : discovery_url !== null ? 'discovery_url' : 'secret';
  return { name, issuer, audiences, key_source, jwks_uri, discovery_url, created_at, updated_at };
}

/**
 * The settings a request asks for: 400 unless exactly one key source is given, or for a URL the
 * address rule of webhooks refuses (checked again on every connection: src/net/guarded-fetch.ts).
 */
async function settingsOf(body: IssuerInput, allowPrivate: boolean): Promise<IssuerSettings> {
  const given = keySources.filter((source) => body[source] !== undefined);
  if (given.length !== 1) {
    const message = 'exactly one of jwks_uri, discovery_url and secret must be given';
    const errors =
      given.length === 0
        ? [{ in: 'body' as const, name: '', message }]
        : given.map((source) => ({ in: 'body' as const, name: `/${source}`, message }));
    throw validationFailed(
      `An issuer has one key: ${given.length === 0 ? 'none was given' : `${given.join(' and ')} were given`}.`,
      errors,
    );
  }
  for (const source of ['jwks_uri', 'discovery_url'] as const) {
    const url = body[source];
    const problem = url === undefined ? undefined : await urlProblem(url, allowPrivate);
    if (problem) throw validationFailed(`The ${source} ${problem}.`, [{ in: 'body', name: `/${source}`, message: problem }]);
  }
  return {
    issuer: body.issuer,
    audiences: [...body.audiences],
    jwks_uri: body.jwks_uri ?? null,
    discovery_url: body.discovery_url ?? null,
    secret: body.secret ?? null,
  };
}
