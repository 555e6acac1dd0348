// What a publishable key may list as its web origins (openapi.yaml, WebOrigin; docs/access.md). The HTTP
// API and `rowbase keys create` check a new key's origins with the same rule.

/**
 * Why `text` is no serialized web origin (RFC 6454 §6.2, as the WHATWG URL standard serializes one, and
 * as a browser sends it in `Origin`), or undefined when it is one: `http` or `https`, a host in lowercase
 * (an international name in its punycode), a port only when it is not the scheme's default, and nothing
 * else — no path, not even `/`, no query, fragment or userinfo. `null` (the origin of a sandboxed page or
 * a file) and `*` name no one origin: a key listing them would be a key for every page.
 */
export function originError(text: string): string | undefined {
  if (text === 'null' || text === '*') return `must be one web origin; ${text} names none`;
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return 'must be a web origin: http or https, a host, and an optional port (https://app.example)';
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return `must be an http or https origin, not ${url.protocol.slice(0, -1)}`;
  if (url.origin !== text) return `must be written as browsers send it: ${url.origin}`;
  return undefined;
}
