// The address rule of webhooks (docs/webhooks.md, "Addresses"): a tenant's webhook must not reach inside
// the operator's network. Only public unicast addresses are allowed, as ipaddr.js classifies them:
// loopback, private (RFC 1918), link-local (cloud metadata at 169.254.169.254 included), CGNAT (RFC
// 6598), multicast, unique-local (RFC 4193), reserved and the IPv6 forms that embed an IPv4 address
// are refused; an IPv4-mapped IPv6 address is judged as its IPv4 address. `localhost` and the names under
// it are refused by name (RFC 6761). The rule is checked when a webhook is made or changed, and again on
// every connection, on the address connected to (send.ts).
import { lookup as dnsLookup, type LookupAddress, type LookupAllOptions } from 'node:dns';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

/** The longest URL a webhook may have. */
const MAX_WEBHOOK_URL_LENGTH = 2048;

/** Whether `address` (an IP literal) is a public unicast address, which a webhook may connect to. */
export function isPublicAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return false;
  return ipaddr.process(address).range() === 'unicast';
}

/**
 * Whether `host` is a loopback name: `localhost` or any name under it (`sub.localhost`), in any case,
 * with or without trailing dots (`localhost.`, `LOCALHOST..`). RFC 6761, section 6.3, makes every such
 * name loopback, so it is judged by the name alone, never looked up: a resolver may not know it (and a
 * webhook to it would be taken) or may answer it with any address. Other names of this machine
 * (`localhost.localdomain`) are no such names: their addresses judge them.
 */
export function isLoopbackName(host: string): boolean {
  return /(?:^|\.)localhost\.*$/i.test(host);
}

/** Looks a host name up: every address it resolves to (dns.lookup with `all`), injectable for tests. */
export type Resolve = (hostname: string) => Promise<LookupAddress[]>;

const resolveHost: Resolve = (hostname) =>
  new Promise((resolve, reject) =>
    dnsLookup(hostname, { all: true } satisfies LookupAllOptions, (error, addresses) => (error ? reject(error) : resolve(addresses))),
  );

/** The host of a URL as an address or name: without the brackets of an IPv6 literal. */
const hostOf = (url: URL) => url.hostname.replace(/^\[(.*)\]$/, '$1');

/**
 * What is wrong with `text` as a webhook's URL, in words, or undefined when nothing is: it must be an
 * absolute `http` or `https` URL of at most 2,048 characters, without credentials; unless
 * `allowPrivate`, its host must be a public address, or a name other than a loopback name every address
 * of which is (one that does not resolve now is taken: it is checked again on each connection).
 */
export async function urlProblem(text: string, allowPrivate: boolean, resolve: Resolve = resolveHost): Promise<string | undefined> {
  if (text.length > MAX_WEBHOOK_URL_LENGTH) return `must be at most ${MAX_WEBHOOK_URL_LENGTH} characters`;
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return 'must be an absolute URL';
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return 'must be an http or https URL';
  if (url.username !== '' || url.password !== '') return 'must not hold credentials';
  if (allowPrivate) return undefined;
  const host = hostOf(url);
  if (isIP(host) !== 0) return isPublicAddress(host) ? undefined : `must not point at a private address (${host})`;
  if (isLoopbackName(host)) return `must not point at a private address (${host} is a loopback name)`;
  let addresses: LookupAddress[];
  try {
    addresses = await resolve(host);
  } catch {
    return undefined;
  }
  const refused = addresses.find(({ address }) => !isPublicAddress(address));
  return refused && `must not point at a private address (${host} resolves to ${refused.address})`;
}
