// Preloaded (node --require) into the Prism proxy that test/contract/prism.test.ts runs, for two things:
//
// - Prism's proxy (5.14, and 5.16 still) reads the body of every answer whose Content-Type is JSON with
//   node-fetch's response.json(), whatever the method (@stoplight/prism-http, parseResponseBody). A HEAD
//   answer has no body (RFC 9110 §9.3.2) but carries GET's Content-Type, so Prism fails to parse the empty
//   body and answers a 500 of its own, for any API whose HEAD answers as its GET does. Here the answer to
//   a HEAD has no body to parse: Prism then validates its status and headers against the document's
//   `head` operation, which is what the test asks of it.
// - Prism must reach nothing but the server it proxies: any host name other than localhost that it
//   looks up is refused, and said on stderr, which the test reads.
const dns = require('node:dns');
const { dirname } = require('node:path');

const prismHttp = dirname(require.resolve('@stoplight/prism-http/package.json'));
const fetch = require(require.resolve('node-fetch', { paths: [prismHttp] }));
const forward = fetch.default;
fetch.default = async (url, options = {}) => {
  const response = await forward(url, options);
  if (String(options.method).toUpperCase() === 'HEAD') response.json = async () => undefined;
  return response;
};

const local = new Set(['localhost', '127.0.0.1', '::1']);
const lookup = dns.lookup;
dns.lookup = (hostname, ...rest) => {
  if (local.has(hostname)) return lookup(hostname, ...rest);
  process.stderr.write(`rowbase-test: Prism looked up ${hostname}\n`);
  const callback = rest.at(-1);
  const error = Object.assign(new Error(`${hostname} is not to be reached from this test`), { code: 'ENOTFOUND' });
  process.nextTick(() => callback(error));
};
