// The client's address, as the rate per end user tells anonymous callers apart (docs/access.md, "A rate
// per end user"): the connection's, or, behind proxies the operator trusts (ROWBASE_TRUSTED_PROXIES,
// docs/operations.md), the one the farthest of them was reached from, from `X-Forwarded-For`.
import type { IncomingMessage } from 'node:http';
import { isIP, isIPv4 } from 'node:net';

/**
 * The address the request came from. With `trustedProxies` (0: none) in front, each appending to
 * `X-Forwarded-For` the address it was reached from, the entry that many from the end (the client can
 * write the entries before it, never those after); with fewer entries, the first. An entry that is no IP
 * address, or no header, leaves the connection's address. IPv4 written as IPv6 (`::ffff:192.0.2.1`) is
 * answered as IPv4.
 */
export function clientAddress({ headers, socket }: Pick<IncomingMessage, 'headers' | 'socket'>, trustedProxies: number): string {
  let address = socket.remoteAddress ?? '';
  const forwarded = headers['x-forwarded-for'];
  if (trustedProxies > 0 && forwarded !== undefined) {
    const entries = [forwarded]
      .flat()
      .join(',')
      .split(',')
      .map((entry) => entry.trim())
      .filter((entry) => entry !== '');
    const entry = entries[Math.max(0, entries.length - trustedProxies)];
    if (entry !== undefined && isIP(entry) !== 0) address = entry;
  }
  const mapped = /^::ffff:(.+)$/i.exec(address)?.[1];
  return mapped !== undefined && isIPv4(mapped) ? mapped : address;
}

/**
 * The block an address is limited as: an IPv4 address alone, an IPv6 address by its /64, the block a
 * single subscriber is usually given (RFC 6177), so that one client does not become 2^64 end users.
 */
export function addressBlock(address: string): string {
  if (isIP(address) !== 6) return address;
  const [head, tail] = address.replace(/%.*$/, '').split('::');
  const groupsOf = (part: string | undefined) =>
    // An IPv4 address at the end stands for two groups, past the first four whatever they are.
    part ? part.split(':').flatMap((group) => (group.includes('.') ? ['0', '0'] : [group])) : [];
  const left = groupsOf(head);
  const right = tail === undefined ? [] : groupsOf(tail);
  const groups = [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right];
  return `${groups
    .slice(0, 4)
    .map((group) => Number.parseInt(group, 16).toString(16))
    .join(':')}::/64`;
}
