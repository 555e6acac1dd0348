// Connections to addresses an account names (webhooks' receivers, token issuers' keys), each checked by
// the address rule (src/webhooks/address.ts; docs/webhooks.md, "Addresses") when it is made: on a
// loopback name or literal address before anything, on the addresses a name resolves to before
// connecting, and on the address the socket did connect to, so that no DNS rebinding gets around it.
// Webhooks post through a CheckedAgent (src/webhooks/send.ts); GuardedFetcher reads a small document with
// one (a JWKS, an OpenID discovery document), never following a redirect.
import { lookup as dnsLookup, type LookupAddress, type LookupAllOptions } from 'node:dns';
import { isIP } from 'node:net';
import type { Agent, buildConnector, Dispatcher } from 'undici';
import { isLoopbackName, isPublicAddress } from '../webhooks/address.ts';

/** A connection the address rule refused. */
export class AddressRefusedError extends Error {
  readonly code = 'ADDRESS_REFUSED';
}

/** dns.lookup with `all`: every address a name resolves to; injectable for tests. */
export type LookupAll = (
  hostname: string,
  options: LookupAllOptions,
  callback: (error: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void,
) => void;

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/** A dns.lookup, by `lookupAll`, that refuses a name any address of which the rule refuses. */
const checkedLookup =
  (lookupAll: LookupAll) =>
  (hostname: string, options: { all?: boolean; family?: number }, callback: LookupCallback): void => {
    lookupAll(hostname, { ...options, all: true }, (error, addresses) => {
      if (error) return callback(error, []);
      const refused = addresses.find(({ address }) => !isPublicAddress(address));
      if (refused) return callback(new AddressRefusedError(`${hostname} resolves to ${refused.address}, a private address`), []);
      if (options.all) return callback(null, addresses);
      callback(null, addresses[0].address, addresses[0].family);
    });
  };

/**
 * undici's connector with the address rule on every connection, unless `allowPrivate`
 * (ROWBASE_WEBHOOKS_ALLOW_PRIVATE). `timeoutMs`: to connect. `lookupAll`: how names are resolved
 * (dns.lookup by default).
 */
function checkedConnector(
  build: typeof buildConnector,
  allowPrivate: boolean,
  timeoutMs: number,
  lookupAll: LookupAll = dnsLookup,
): buildConnector.connector {
  // BuildOptions wants a `port` it does not use (each connection's own is given): a cast, not a made-up port.
  const lookup = allowPrivate ? {} : { lookup: checkedLookup(lookupAll) };
  const connect = build({ timeout: timeoutMs, ...lookup } as buildConnector.BuildOptions);
  if (allowPrivate) return connect;
  return (options, callback) => {
    const host = options.hostname.replace(/^\[(.*)\]$/, '$1');
    // A literal address is not looked up: it is judged as it is.
    if (isIP(host) !== 0 && !isPublicAddress(host)) return callback(new AddressRefusedError(`${host} is a private address`), null);
    // Nor is a loopback name (RFC 6761), whatever a resolver would answer for it.
    if (isLoopbackName(host)) return callback(new AddressRefusedError(`${host} is a loopback name`), null);
    connect(options, (error, socket) => {
      if (error) return callback(error, null);
      const remote = (socket as { remoteAddress?: string }).remoteAddress;
      if (remote === undefined || !isPublicAddress(remote)) {
        socket?.destroy();
        return callback(new AddressRefusedError(`connected to ${remote}, a private address`), null);
      }
      callback(null, socket as NonNullable<typeof socket>);
    });
  };
}

export interface CheckedAgentOptions {
  /** No address rule (ROWBASE_WEBHOOKS_ALLOW_PRIVATE). */
  allowPrivate: boolean;
  /** To connect, to the answer's headers, and between its body's chunks, in ms. */
  timeoutMs: number;
  /** Connections kept per origin. */
  connections: number;
  /** How names are resolved. Default dns.lookup. */
  lookupAll?: LookupAll;
}

/**
 * An undici Agent whose every connection checkedConnector() checks, made when first used, undici loaded
 * with it: a server that sends nothing out holds neither (some 3 MB of heap; docs/performance.md, "Memory").
 */
export class CheckedAgent {
  private made?: Promise<{ agent: Agent; request: typeof import('undici').request }>;

  constructor(private readonly options: CheckedAgentOptions) {}

  /** undici's request() through this agent. */
  async request(url: string, options: Omit<Dispatcher.RequestOptions, 'origin' | 'path'>): Promise<Dispatcher.ResponseData> {
    this.made ??= this.make();
    const { agent, request } = await this.made;
    return request(url, { ...options, dispatcher: agent });
  }

  async destroy(): Promise<void> {
    if (this.made) await (await this.made).agent.destroy();
  }

  private async make() {
    const { Agent, buildConnector, request } = await import('undici');
    const { allowPrivate, timeoutMs, connections, lookupAll } = this.options;
    const connect = checkedConnector(buildConnector, allowPrivate, timeoutMs, lookupAll);
    return { agent: new Agent({ connect, headersTimeout: timeoutMs, bodyTimeout: timeoutMs, connections }), request };
  }
}

/** A document read: its status was 2xx, its body is at most the bytes allowed. */
export interface Fetched {
  /** The answer's headers, names in lower case. */
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** Why a document could not be read, in a few words (`FetchError.message`). */
export class FetchError extends Error {}

export interface GuardedFetcherOptions {
  /** No address rule (ROWBASE_WEBHOOKS_ALLOW_PRIVATE). Default false. */
  allowPrivate?: boolean;
  /** The whole read, connecting included, in ms. Default 5,000. */
  timeoutMs?: number;
  /** The most bytes of a body read; a longer one is refused. Default 64 KiB. */
  maxBytes?: number;
  /** How names are resolved. Default dns.lookup. */
  lookupAll?: LookupAll;
}

/** Reads small documents by GET from the addresses accounts name, each connection checked by the address rule. */
export class GuardedFetcher {
  private readonly agent: CheckedAgent;
  private readonly timeoutMs: number;
  private readonly maxBytes: number;

  constructor(options: GuardedFetcherOptions = {}) {
    this.timeoutMs = options.timeoutMs ?? 5000;
    this.maxBytes = options.maxBytes ?? 64 * 1024;
    const { allowPrivate = false, lookupAll } = options;
    this.agent = new CheckedAgent({ allowPrivate, timeoutMs: this.timeoutMs, connections: 4, lookupAll });
  }

  /**
   * The body of `url` (as text, which must be UTF-8) and its headers; FetchError when it cannot be read:
   * refused by the address rule, not answered within the timeout, answered with another status than
   * 2xx (a redirect included: none is followed), or longer than the bytes allowed.
   */
  async get(url: string): Promise<Fetched> {
    const signal = AbortSignal.timeout(this.timeoutMs);
    try {
      const answer = await this.agent.request(url, { method: 'GET', signal, headers: { accept: 'application/json' } });
      if (answer.statusCode < 200 || answer.statusCode > 299) {
        // Read no more of it than undici reads to free the connection (dump's limit), then drop it.
        await answer.body.dump().catch(() => undefined);
        throw new FetchError(`answered ${answer.statusCode}`);
      }
      const chunks: Buffer[] = [];
      let read = 0;
      for await (const chunk of answer.body) {
        read += (chunk as Buffer).length;
        // Leaving the loop destroys the body, and its connection.
        if (read > this.maxBytes) throw new FetchError(`answered more than ${this.maxBytes} bytes`);
        chunks.push(chunk as Buffer);
      }
      return { headers: answer.headers, body: Buffer.concat(chunks).toString('utf8') };
    } catch (error) {
      if (error instanceof FetchError) throw error;
      if (signal.aborted) throw new FetchError('timed out');
      if (error instanceof AddressRefusedError) throw new FetchError(`address refused: ${error.message}`);
      const { code, message } = error as { code?: string; message?: string };
      throw new FetchError(code ?? message ?? 'failed');
    }
  }

  async close(): Promise<void> {
    await this.agent.destroy();
  }
}
