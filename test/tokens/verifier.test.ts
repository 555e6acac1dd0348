// Verifying end users' tokens (src/tokens/verifier.ts; docs/access.md, "Token issuers"), and the attacks on
// them (issue 53, "Bad input and attacks"): each refused with 401 invalid_token, saying why. The issuers
// are made over HTTP on a real server, on each backend, that allows private addresses; their keys are
// served by a server of this test on 127.0.0.1, the only address anything here connects to (10.0.0.1
// and 169.254.169.254 are values that are refused before any connection).
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { type CryptoKey, exportJWK, exportSPKI, generateKeyPair, type JWK, type JWTPayload, SignJWT, UnsecuredJWT } from 'jose';
import type { AccountIssuers } from '../../src/db/auth/issuers.ts';
import { ApiError } from '../../src/errors.ts';
import { GuardedFetcher } from '../../src/net/guarded-fetch.ts';
import { TokenVerifier, type TokenVerifierOptions } from '../../src/tokens/verifier.ts';
import { describeEachBackend } from '../support/backends.ts';
import type { Client } from '../support/client.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

const ISS = 'https://auth.example/';
const AUD = 'notes-app';
const SECRET = 'the backend secret, at least 32 bytes long';

/** What the key server answers at a path: a status, headers and a body; counted per path. */
type Answer = (request: IncomingMessage, response: ServerResponse) => void;

class KeyServer {
  readonly routes = new Map<string, Answer>();
  readonly hits = new Map<string, number>();
  private constructor(
    private readonly server: Server,
    readonly url: string,
  ) {}

  static async start(): Promise<KeyServer> {
    let self: KeyServer | undefined;
    const server = createServer((request, response) => {
      const path = request.url ?? '';
      self?.hits.set(path, (self.hits.get(path) ?? 0) + 1);
      const answer = self?.routes.get(path);
      if (answer) answer(request, response);
      else response.writeHead(404).end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    self = new KeyServer(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    return self;
  }

  /** Serves `body` as JSON at `path`, with `headers`. */
  json(path: string, body: unknown, headers: Record<string, string> = {}): void {
    this.routes.set(path, (_request, response) =>
      response.writeHead(200, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body)),
    );
  }

  count(path: string): number {
    return this.hits.get(path) ?? 0;
  }

  stop(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

interface KeyPair {
  privateKey: CryptoKey;
  publicKey: CryptoKey;
  jwk: JWK;
  alg: string;
  kid: string;
}

async function keyPair(alg: string, kid: string): Promise<KeyPair> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
  return { privateKey, publicKey, jwk: { ...(await exportJWK(publicKey)), kid, alg, use: 'sig' }, alg, kid };
}

const inSeconds = (seconds: number) => Math.floor(Date.now() / 1000) + seconds;

/** A token signed by `key`: issued by ISS for AUD, expiring in an hour, unless `claims` says otherwise. */
function signed(key: KeyPair, claims: JWTPayload = {}, header: Record<string, unknown> = {}): Promise<string> {
  return new SignJWT({ iss: ISS, aud: AUD, sub: 'user-1', exp: inSeconds(3600), ...claims })
    .setProtectedHeader({ alg: key.alg, kid: key.kid, ...header })
    .sign(key.privateKey);
}

/** The detail of the 401 invalid_token `verifying` is refused with; fails when it is not refused so. */
async function refusal(verifying: Promise<unknown>): Promise<string> {
  try {
    await verifying;
  } catch (error) {
    expect(error).to.be.instanceOf(ApiError);
    expect(error).to.include({ code: 'invalid_token', status: 401 });
    return (error as ApiError).detail;
  }
  throw new Error('the token was accepted');
}

describeEachBackend('verifying end users’ tokens', (backend) => {
  let server: TestServer;
  let keys: KeyServer;
  let rsa: KeyPair;
  let accounts = 0;
  /** The verifier's clock, moved by the tests: tokens are made on the real one. */
  let now = Date.now();
  let verifier: TokenVerifier;
  let admin: Client;
  let accountId: number;

  before(async () => {
    server = await startTestServer({ webhooksAllowPrivate: true }, { backend });
    keys = await KeyServer.start();
    rsa = await keyPair('RS256', 'rsa-1');
  });
  after(async () => {
    await server.stop();
    await keys.stop();
  });
  beforeEach(async () => {
    now = Date.now();
    verifier = new TokenVerifier({ allowPrivate: true, clock: () => now });
    const account = `tokens-${backend}-${++accounts}`;
    admin = await server.client(account);
    accountId = (await server.store.accountIdOf(account)) as number;
    keys.routes.clear();
    keys.hits.clear();
    keys.json('/jwks', { keys: [rsa.jwk] });
  });
  afterEach(() => verifier.close());

  /** Sets the account's issuer `name` to `settings` over HTTP. */
  async function putIssuer(name: string, settings: Record<string, unknown>): Promise<void> {
    const put = await admin.put(`/v1/auth/issuers/${name}`, { issuer: ISS, audiences: [AUD], ...settings });
    expect(put.status, put.text).to.be.oneOf([200, 201]);
  }
  const issuers = (): Promise<AccountIssuers> => server.store.findIssuers(accountId);
  const verify = async (token: string) => verifier.verifyToken(token, await issuers());
  /** Why a verifier of `options` of its own (the address rule on, unless they say otherwise) refuses a token of the account. */
  async function refusalBy(options: TokenVerifierOptions): Promise<string> {
    const own = new TokenVerifier({ clock: () => now, ...options });
    try {
      return await refusal(own.verifyToken(await signed(rsa), await issuers()));
    } finally {
      await own.close();
    }
  }

  describe('accepts', () => {
    it('a token of each asymmetric algorithm, the key chosen by its kid, and answers its claims', async () => {
      const pairs = await Promise.all([keyPair('PS256', 'ps'), keyPair('ES256', 'es'), keyPair('EdDSA', 'ed'), rsa]);
      keys.json('/jwks', { keys: pairs.map(({ jwk }) => jwk) });
      await putIssuer('idp', { jwks_uri: `${keys.url}/jwks` });
      for (const pair of pairs) expect(await verify(await signed(pair, { sub: pair.kid }))).to.include({ iss: ISS, sub: pair.kid });
      expect(keys.count('/jwks')).to.equal(1);
    });

    it('an HS256 token of an issuer with a secret', async () => {
      await putIssuer('backend', { secret: SECRET });
      const token = await new SignJWT({ iss: ISS, aud: [AUD, 'other'], sub: 'u', exp: inSeconds(60) })
        .setProtectedHeader({ alg: 'HS256' })
        .sign(new TextEncoder().encode(SECRET));
      expect(await verify(token)).to.include({ sub: 'u' });
    });

    it('a token past its exp or before its nbf by less than 60 s of skew', async () => {
      await putIssuer('idp', { jwks_uri: `${keys.url}/jwks` });
      expect(await verify(await signed(rsa, { exp: inSeconds(-30) }))).to.include({ sub: 'user-1' });
      expect(await verify(await signed(rsa, { nbf: inSeconds(30) }))).to.include({ sub: 'user-1' });
    });

    it('claims as plain values: an operator, arrays and __proto__ are data', async () => {
      await putIssuer('idp', { jwks_uri: `${keys.url}/jwks` });
      const claims = JSON.parse('{"owner": {"$ne": null}, "orgs": ["a", {"$in": ["b"]}], "__proto__": {"admin": true}}');
      const verified = await verify(await signed(rsa, claims));
      expect(verified.owner).to.deep.equal({ $ne: null });
      expect(verified.orgs).to.deep.equal(['a', { $in: ['b'] }]);
      expect(Object.getPrototypeOf(verified)).to.equal(Object.prototype);
      expect(Object.hasOwn(verified, '__proto__')).to.equal(true);
      expect(Object.getOwnPropertyDescriptor(verified, '__proto__')?.value).to.deep.equal({ admin: true });
      expect((verified as { admin?: unknown }).admin).to.equal(undefined);
      expect(Object.isFrozen(verified) && Object.isFrozen(verified.orgs)).to.equal(true);
    });
  });

  describe('refuses', () => {
    beforeEach(() => putIssuer('idp', { jwks_uri: `${keys.url}/jwks` }));

    it('alg none', async () => {
      const token = new UnsecuredJWT({ sub: 'user-1' }).setIssuer(ISS).setAudience(AUD).setExpirationTime('1h').encode();
      expect(await refusal(verify(token))).to.equal("The token's algorithm none is not one its issuer uses.");
    });

    it("HS256 signed with the issuer's RSA public key (algorithm confusion)", async () => {
      const publicKey = new TextEncoder().encode(await exportSPKI(rsa.publicKey));
      const token = await new SignJWT({ iss: ISS, aud: AUD, exp: inSeconds(3600) })
        .setProtectedHeader({ alg: 'HS256', kid: rsa.kid })
        .sign(publicKey);
      expect(await refusal(verify(token))).to.equal("The token's algorithm HS256 is not one its issuer uses.");
    });

    it('an RS256 token of an issuer with a secret', async () => {
      await putIssuer('idp', { secret: SECRET });
      expect(await refusal(verify(await signed(rsa)))).to.equal("The token's algorithm RS256 is not one its issuer uses.");
    });

    it('a bad signature', async () => {
      const other = await keyPair('RS256', rsa.kid);
      expect(await refusal(verify(await signed(other)))).to.equal("The token's signature does not verify.");
      const token = await signed(rsa);
      // The signature's first character changed (one in 64 signatures starts with the A it was once set to).
      const start = token.lastIndexOf('.') + 1;
      const tampered = `${token.slice(0, start)}${token[start] === 'A' ? 'B' : 'A'}${token.slice(start + 1)}`;
      expect(await refusal(verify(tampered))).to.equal("The token's signature does not verify.");
    });

    it('an expired token, and one without exp', async () => {
      expect(await refusal(verify(await signed(rsa, { exp: inSeconds(-61) })))).to.equal('The token has expired.');
      const token = await new SignJWT({ iss: ISS, aud: AUD }).setProtectedHeader({ alg: 'RS256', kid: rsa.kid }).sign(rsa.privateKey);
      expect(await refusal(verify(token))).to.equal('The token has no exp claim.');
    });

    it('a token not yet valid', async () => {
      expect(await refusal(verify(await signed(rsa, { nbf: inSeconds(120) })))).to.equal('The token is not yet valid.');
    });

    it('a wrong iss', async () => {
      expect(await refusal(verify(await signed(rsa, { iss: 'https://other.example/' })))).to.equal(
        'The token is of an issuer the account does not have (its iss).',
      );
    });

    it('a wrong aud', async () => {
      expect(await refusal(verify(await signed(rsa, { aud: 'another-app' })))).to.equal('The token is for another audience.');
      expect(await refusal(verify(await signed(rsa, { aud: undefined })))).to.equal('The token has no aud claim.');
    });

    it("a token of another account's issuer", async () => {
      const other = `tokens-${backend}-other-${++accounts}`;
      const otherAdmin = await server.client(other);
      const otherIss = 'https://other-idp.example/';
      expect(
        (await otherAdmin.put('/v1/auth/issuers/idp', { issuer: otherIss, audiences: [AUD], jwks_uri: `${keys.url}/jwks` })).status,
      ).to.equal(201);
      const token = await signed(rsa, { iss: otherIss });
      const otherId = (await server.store.accountIdOf(other)) as number;
      expect(await verifier.verifyToken(token, await server.store.findIssuers(otherId))).to.include({ iss: otherIss });
      expect(await refusal(verify(token))).to.equal('The token is of an issuer the account does not have (its iss).');
    });

    it('a token of 100 KB, before parsing it', async () => {
      expect(await refusal(verify('a'.repeat(100_000)))).to.equal('The token is longer than 16384 characters.');
      const large = await signed(rsa, { padding: 'x'.repeat(100_000) });
      expect(await refusal(verify(large))).to.equal('The token is longer than 16384 characters.');
      expect(keys.count('/jwks')).to.equal(0);
    });

    it('what is no JWT', async () => {
      for (const token of ['', 'a.b', 'a.b.c', '...', 'eyJhbGciOiJSUzI1NiJ9.e30.']) {
        expect(await refusal(verify(token)), token).to.match(/^The token is/);
      }
    });

    it('an unknown kid, reading the key set again at most once a minute', async () => {
      expect(await verify(await signed(rsa))).to.include({ sub: 'user-1' });
      expect(keys.count('/jwks')).to.equal(1);
      // Within the minute of the first read: the set is not read again.
      expect(await refusal(verify(await signed(rsa, {}, { kid: 'unknown-1' })))).to.equal("No key of the token's issuer matches its kid.");
      expect(keys.count('/jwks')).to.equal(1);
      now += 61_000;
      expect(await refusal(verify(await signed(rsa, {}, { kid: 'unknown-2' })))).to.equal("No key of the token's issuer matches its kid.");
      expect(keys.count('/jwks')).to.equal(2);
      expect(await refusal(verify(await signed(rsa, {}, { kid: 'unknown-3' })))).to.equal("No key of the token's issuer matches its kid.");
      expect(keys.count('/jwks')).to.equal(2);
      // A key the issuer added since is found by the next read a minute on.
      const added = await keyPair('ES256', 'added');
      keys.json('/jwks', { keys: [rsa.jwk, added.jwk] });
      now += 61_000;
      expect(await verify(await signed(added))).to.include({ sub: 'user-1' });
      expect(keys.count('/jwks')).to.equal(3);
    });

    it('a jwks_uri on a private address, at connection, where the server does not allow them', async () => {
      expect(await refusalBy({})).to.equal(
        "The keys of the token's issuer cannot be read: address refused: 127.0.0.1 is a private address.",
      );
      expect(keys.count('/jwks')).to.equal(0);
    });

    it('a key set of more than 64 KiB', async () => {
      keys.json('/jwks', { keys: [rsa.jwk], padding: 'x'.repeat(64 * 1024) });
      expect(await refusal(verify(await signed(rsa)))).to.equal(
        "The keys of the token's issuer cannot be read: answered more than 65536 bytes.",
      );
    });

    it('a key set that redirects, following no redirect', async () => {
      keys.routes.set('/jwks', (_request, response) => response.writeHead(302, { location: '/elsewhere' }).end());
      keys.json('/elsewhere', { keys: [rsa.jwk] });
      expect(await refusal(verify(await signed(rsa)))).to.equal("The keys of the token's issuer cannot be read: answered 302.");
      expect(keys.count('/elsewhere')).to.equal(0);
    });

    it('a key set that is none', async () => {
      keys.json('/jwks', { keys: 'none' });
      expect(await refusal(verify(await signed(rsa)))).to.equal(
        "The keys of the token's issuer cannot be read: the key set is no JSON Web Key Set.",
      );
    });
  });

  describe('reads the keys', () => {
    it('and keeps the last good ones while the issuer is unreachable', async () => {
      await putIssuer('idp', { jwks_uri: `${keys.url}/jwks` });
      expect(await verify(await signed(rsa, { sub: 'before' }))).to.include({ sub: 'before' });
      keys.routes.set('/jwks', (_request, response) => response.socket?.destroy());
      now += 5 * 60_000 + 1000;
      expect(await verify(await signed(rsa, { sub: 'during' }))).to.include({ sub: 'during' });
      expect(keys.count('/jwks')).to.equal(2);
      // Tried again a minute later, not on every token.
      expect(await verify(await signed(rsa, { sub: 'still' }))).to.include({ sub: 'still' });
      expect(keys.count('/jwks')).to.equal(2);
      now += 61_000;
      expect(await verify(await signed(rsa, { sub: 'later' }))).to.include({ sub: 'later' });
      expect(keys.count('/jwks')).to.equal(3);
    });

    it('from the jwks_uri of the discovery document, read once', async () => {
      keys.json('/.well-known/openid-configuration', { issuer: ISS, jwks_uri: `${keys.url}/jwks` });
      await putIssuer('idp', { discovery_url: `${keys.url}/.well-known/openid-configuration` });
      expect(await verify(await signed(rsa, { sub: 'first' }))).to.include({ sub: 'first' });
      now += 5 * 60_000 + 1000;
      expect(await verify(await signed(rsa, { sub: 'second' }))).to.include({ sub: 'second' });
      expect(keys.count('/.well-known/openid-configuration')).to.equal(1);
      expect(keys.count('/jwks')).to.equal(2);
    });

    it('refusing a discovery document of another issuer, or whose jwks_uri is on a private address', async () => {
      keys.json('/discovery', { issuer: 'https://another.example/', jwks_uri: `${keys.url}/jwks` });
      await putIssuer('idp', { discovery_url: `${keys.url}/discovery` });
      expect(await refusal(verify(await signed(rsa)))).to.equal(
        "The keys of the token's issuer cannot be read: the discovery document names another issuer.",
      );
      keys.json('/discovery', { issuer: ISS, jwks_uri: 'http://169.254.169.254/jwks' });
      // The discovery document is read from 127.0.0.1, which this fetcher allows; the address rule of the
      // verifier judges the jwks_uri it names, and nothing connects to it.
      expect(await refusalBy({ fetcher: new GuardedFetcher({ allowPrivate: true }) })).to.equal(
        "The keys of the token's issuer cannot be read: the discovery document's jwks_uri must not point at a private address (169.254.169.254).",
      );
      expect(keys.count('/jwks')).to.equal(0);
    });

    /** Verifies a new token once the clock has moved `ms` on, and answers how often the key set was read by then. */
    async function readsAfter(ms: number): Promise<number> {
      now += ms;
      await verify(await signed(rsa, { jti: String(Math.random()) }));
      return keys.count('/jwks');
    }

    it('again once its Cache-Control max-age has passed, bounded to 60 s at least', async () => {
      keys.json('/jwks', { keys: [rsa.jwk] }, { 'cache-control': 'public, max-age=120' });
      await putIssuer('idp', { jwks_uri: `${keys.url}/jwks` });
      expect([await readsAfter(0), await readsAfter(100_000), await readsAfter(30_000)]).to.deep.equal([1, 1, 2]);
      keys.json('/jwks', { keys: [rsa.jwk] }, { 'cache-control': 'max-age=1' });
      expect([await readsAfter(121_000), await readsAfter(30_000), await readsAfter(31_000)]).to.deep.equal([3, 3, 4]);
    });

    it('again after 5 minutes when the answer says nothing of caching', async () => {
      await putIssuer('idp', { jwks_uri: `${keys.url}/jwks` });
      expect([await readsAfter(0), await readsAfter(4 * 60_000), await readsAfter(61_000)]).to.deep.equal([1, 1, 2]);
    });
  });

  describe('remembers a verified token', () => {
    beforeEach(() => putIssuer('idp', { jwks_uri: `${keys.url}/jwks` }));

    it('verifying it once, not once a request, for a minute at most', async () => {
      const token = await signed(rsa);
      const first = await verify(token);
      expect(await verify(token)).to.equal(first);
      now += 59_000;
      expect(await verify(token)).to.equal(first);
      now += 2000;
      const again = await verify(token);
      expect(again).not.to.equal(first);
      expect(again).to.deep.equal(first);
    });

    it('and not past its exp', async () => {
      const token = await signed(rsa, { exp: inSeconds(10) });
      const first = await verify(token);
      now += 9000;
      expect(await verify(token)).to.equal(first);
      now += 62_000;
      expect(await refusal(verify(token))).to.equal('The token has expired.');
    });

    it('verifying it again once its issuer is changed or deleted', async () => {
      const token = await signed(rsa);
      await verify(token);
      await putIssuer('idp', { jwks_uri: `${keys.url}/jwks`, audiences: ['another-app'] });
      expect(await refusal(verify(token))).to.equal('The token is for another audience.');
      await putIssuer('idp', { jwks_uri: `${keys.url}/jwks` });
      await verify(token);
      expect((await admin.delete('/v1/auth/issuers/idp')).status).to.equal(204);
      expect(await refusal(verify(token))).to.equal('The token is of an issuer the account does not have (its iss).');
    });

    it('by its exact text: a token one character apart from one remembered is verified on its own, and refused', async () => {
      const token = await signed(rsa);
      const first = await verify(token);
      const [header, payload, signature] = token.split('.');
      // The first character of the signature (the last holds bits base64url pads with).
      const forged = `${header}.${payload}.${signature.startsWith('A') ? 'B' : 'A'}${signature.slice(1)}`;
      expect(await refusal(verify(forged))).to.equal("The token's signature does not verify.");
      expect(await refusal(verify(`${token}.`))).to.equal('The token is no JWT.');
      expect(await verify(token)).to.equal(first);
    });

    it('within a budget of characters: past it, the oldest token is forgotten and verified again', async () => {
      const tokens = await Promise.all([1, 2, 3].map((n) => signed(rsa, { sub: `user-${n}` })));
      // Room for two of them (each remembered by the account's id and the token), not three.
      const own = new TokenVerifier({ allowPrivate: true, clock: () => now, maxTokenChars: 2 * tokens[0].length + 20 });
      try {
        const [first, second] = [await own.verifyToken(tokens[0], await issuers()), await own.verifyToken(tokens[1], await issuers())];
        expect(await own.verifyToken(tokens[0], await issuers())).to.equal(first);
        // The third token's characters put the remembered past the budget: the oldest one remembered goes.
        await own.verifyToken(tokens[2], await issuers());
        expect(await own.verifyToken(tokens[1], await issuers())).to.equal(second);
        const again = await own.verifyToken(tokens[0], await issuers());
        expect(again).not.to.equal(first);
        expect(again).to.deep.equal(first);
      } finally {
        await own.close();
      }
    });

    it("apart for each account: another account's issuer of the same iss verifies it again", async () => {
      const token = await signed(rsa);
      await verify(token);
      const other = `tokens-${backend}-same-${++accounts}`;
      await server.client(other);
      const otherId = (await server.store.accountIdOf(other)) as number;
      expect(await refusal(verifier.verifyToken(token, await server.store.findIssuers(otherId)))).to.equal(
        'The token is of an issuer the account does not have (its iss).',
      );
    });
  });
});
