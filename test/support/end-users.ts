// End users of an app, as tests make them (docs/access.md): an HS256 issuer registered on the account,
// a publishable key, and a Client per user that sends the key and the user's token on every request.
import { SignJWT } from 'jose';
import { Client, type RequestOptions, type Response } from './client.ts';

const APP_SECRET = 'a shared secret of at least 32 bytes';
const APP_ISSUER = 'https://backend.example/';

/** An HS256 token of the app's backend for `sub` (any JSON value), `claims` merged in, expiring in `seconds`. */
export function tokenOf(sub: unknown, { seconds = 300, audience = 'app', claims = {} as Record<string, unknown> } = {}): Promise<string> {
  return new SignJWT({ ...claims, sub } as Record<string, unknown>)
    .setProtectedHeader({ alg: 'HS256' })
    .setIssuer(APP_ISSUER)
    .setAudience(audience)
    .setIssuedAt()
    .setExpirationTime(Math.floor(Date.now() / 1000) + seconds)
    .sign(new TextEncoder().encode(APP_SECRET));
}

/** Registers the app's issuer on the admin's account and makes a publishable key of it: the key. */
export async function appKey(admin: Client, key: Record<string, unknown> = {}): Promise<string> {
  const issuer = await admin.put('/v1/auth/issuers/app', { issuer: APP_ISSUER, audiences: ['app'], secret: APP_SECRET });
  if (issuer.status !== 201 && issuer.status !== 200) throw new Error(`the issuer was answered ${issuer.status}`);
  const made = await admin.post<{ key: string }>('/v1/keys', { kind: 'publishable', origins: ['https://app.example'], ...key });
  if (made.status !== 201) throw new Error(`the publishable key was answered ${made.status}`);
  return made.body.key;
}

/** A client of the app: the publishable key in x-api-key, and the user's token when there is one. */
export class EndUser extends Client {
  constructor(
    url: string,
    readonly publishableKey: string,
    readonly token?: string,
  ) {
    super(url);
  }

  override request<T = unknown>(method: string, path: string, options: RequestOptions = {}): Promise<Response<T>> {
    const headers = { 'x-api-key': this.publishableKey, ...(this.token ? { authorization: `Bearer ${this.token}` } : {}) };
    return super.request<T>(method, path, { ...options, headers: { ...headers, ...options.headers } });
  }
}
