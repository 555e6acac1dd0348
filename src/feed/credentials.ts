// What an open socket or stream of the feed was opened with (ws/feed.ts), checked while it is open: its
// key's and its token's expiry, its key's revocation and its token's issuers, each pass closing those
// that no longer hold (asyncapi.yaml, close code 4401).
import type { AccountIssuers } from '../db/auth/issuers.ts';
import type { Store } from '../db/open-store.ts';
import { ApiError } from '../errors.ts';
import type { Logger } from '../log.ts';
import type { TokenVerifier } from '../tokens/verifier.ts';
import { closeCodes } from './messages.ts';
import type { Subscriber } from './subscriber.ts';

/**
 * How often the keys and tokens of open sockets are checked: an expired key's or token's sockets close
 * (4401) within a second of its expiry, a revoked key's within a second of the revocation, wherever it
 * was made, for which they are looked up again, and a token's within a second of the change of its
 * account's issuers that refuses it, for which they are read again (asyncapi.yaml, close code 4401). One
 * query per pass for up to this many keys, and one for each account whose sockets hold tokens:
 */
const KEY_CHECK_INTERVAL_MS = 500;
const KEY_CHECK_BATCH = 500;

/** What a socket was opened with, checked while it is open. */
export interface Credentials {
  /** The hash of its key. */
  hash: string;
  /** When its key expires (ms since the epoch), or null. */
  expiresAt: number | null;
  accountId: number;
  /** Beside a publishable key, the end user's token; absent for a secret key or an anonymous caller. */
  token?: EndUserToken;
}

interface EndUserToken {
  token: string;
  /** When it is refused as expired (ms since the epoch). */
  refusedFrom: number;
}

/** Closes the sockets whose key or token has expired: the expiry of each is known, and never changes. */
function closeExpired(subscribers: Map<Subscriber, Credentials>): void {
  const now = Date.now();
  for (const [subscriber, { expiresAt, token }] of subscribers) {
    if (expiresAt !== null && now >= expiresAt) subscriber.close(closeCodes.keyExpired);
    else if (token && now >= token.refusedFrom) subscriber.close(closeCodes.tokenExpired);
  }
}

/**
 * Closes the sockets whose end user's token no longer verifies with its account's issuers, read again
 * (not the half-second-old answer of Store.findIssuers, which would add its age to the second a change
 * may take): one deleted, or changed so that it refuses the token. A token verified is remembered by
 * the verifier while its issuer is unchanged, so that most passes verify nothing again. Issuers that
 * cannot be read close nothing.
 */
async function closeRefused(subscribers: Map<Subscriber, Credentials>, store: Store, tokens: TokenVerifier, log: Logger): Promise<void> {
  const byAccount = new Map<number, [Subscriber, EndUserToken][]>();
  for (const [subscriber, { accountId, token }] of subscribers) {
    if (!token) continue;
    const held = byAccount.get(accountId) ?? [];
    held.push([subscriber, token]);
    byAccount.set(accountId, held);
  }
  for (const [accountId, held] of byAccount) {
    let issuers: AccountIssuers;
    try {
      issuers = { accountId, issuers: await store.listIssuers(accountId) };
    } catch (error) {
      log.warn({ err: error }, 'feed could not check the tokens of its sockets');
      continue;
    }
    for (const [subscriber, { token, refusedFrom }] of held) {
      try {
        await tokens.verifyToken(token, issuers);
      } catch (error) {
        if (!(error instanceof ApiError && error.code === 'invalid_token')) {
          log.warn({ err: error }, 'feed could not check the token of a socket');
        } else subscriber.close(Date.now() >= refusedFrom ? closeCodes.tokenExpired : closeCodes.tokenRefused);
      }
    }
  }
}

/** Closes the sockets whose key has been revoked. A database that does not answer closes nothing. */
async function closeRevoked(subscribers: Map<Subscriber, Credentials>, store: Store, log: Logger): Promise<void> {
  const hashes = [...new Set([...subscribers.values()].map(({ hash }) => hash))];
  const live = new Set<string>();
  try {
    for (let start = 0; start < hashes.length; start += KEY_CHECK_BATCH) {
      for (const hash of await store.liveKeyHashes(hashes.slice(start, start + KEY_CHECK_BATCH))) live.add(hash);
    }
  } catch (error) {
    log.warn({ err: error }, 'feed could not check the keys of its sockets');
    return;
  }
  const revoked = new Set(hashes.filter((hash) => !live.has(hash)));
  for (const [subscriber, { hash }] of subscribers) if (revoked.has(hash)) subscriber.close(closeCodes.keyRevoked);
}

/** The checks of the open sockets' keys and tokens, every KEY_CHECK_INTERVAL_MS, until stop(). */
export class CredentialChecks {
  private pass: Promise<void> | undefined;
  private readonly timer: NodeJS.Timeout;

  constructor(subscribers: Map<Subscriber, Credentials>, store: Store, tokens: TokenVerifier, log: Logger) {
    this.timer = setInterval(() => {
      closeExpired(subscribers);
      // One pass of the lookups at a time: a slow database skips passes, never piles them up.
      this.pass ??= Promise.all([closeRevoked(subscribers, store, log), closeRefused(subscribers, store, tokens, log)]).then(
        () => {
          this.pass = undefined;
        },
        () => {
          this.pass = undefined;
        },
      );
    }, KEY_CHECK_INTERVAL_MS);
    this.timer.unref();
  }

  /** Stops the checks, once the pass under way has ended. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.pass;
  }
}
