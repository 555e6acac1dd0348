// Reading a small document from an address an account names (src/net/guarded-fetch.ts): the address
// rule on connecting, no redirect followed, at most the bytes allowed, within the timeout. Every server
// here listens on 127.0.0.1, and where the rule is on, nothing is connected to.
import { createServer, type RequestListener, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { FetchError, GuardedFetcher, type LookupAll } from '../../src/net/guarded-fetch.ts';

/** A server on 127.0.0.1 and an ephemeral port, answering each request with `listener`. */
async function serve(listener: RequestListener): Promise<{ url: string; server: Server; requests: () => number }> {
  let requests = 0;
  const server = createServer((request, response) => {
    requests++;
    listener(request, response);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server, requests: () => requests };
}

const close = (server: Server) =>
  new Promise<void>((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  });

/** Why `get` failed, or undefined when it did not. */
async function failure(fetcher: GuardedFetcher, url: string): Promise<string | undefined> {
  try {
    await fetcher.get(url);
    return undefined;
  } catch (error) {
    expect(error).to.be.instanceOf(FetchError);
    return (error as Error).message;
  }
}

describe('reading a document from an address an account names', () => {
  let site: Awaited<ReturnType<typeof serve>>;
  let open: GuardedFetcher;
  before(async () => {
    site = await serve((request, response) => {
      if (request.url === '/doc') return response.end('{"keys":[]}');
      if (request.url === '/moved') return response.writeHead(302, { location: '/doc' }).end();
      if (request.url === '/large') return response.end('x'.repeat(64 * 1024 + 1));
      if (request.url === '/exact') return response.end('x'.repeat(64 * 1024));
      // /hang: never answers.
    });
    open = new GuardedFetcher({ allowPrivate: true, timeoutMs: 500 });
  });
  after(async () => {
    await open.close();
    await close(site.server);
  });

  it('answers the body and headers of a 2xx', async () => {
    const fetched = await open.get(`${site.url}/doc`);
    expect(fetched.body).to.equal('{"keys":[]}');
    expect(fetched.headers).to.have.property('content-length', '11');
  });

  it('follows no redirect', async () => {
    expect(await failure(open, `${site.url}/moved`)).to.equal('answered 302');
  });

  it('reads 64 KiB, and refuses a byte more', async () => {
    expect((await open.get(`${site.url}/exact`)).body).to.have.length(64 * 1024);
    expect(await failure(open, `${site.url}/large`)).to.equal('answered more than 65536 bytes');
  });

  it('gives up at the timeout', async () => {
    expect(await failure(open, `${site.url}/hang`)).to.equal('timed out');
  });

  it('refuses private addresses and loopback names without connecting, unless allowed', async () => {
    // A lookup by which one name is this machine's loopback address.
    const lookupAll: LookupAll = (hostname, _options, callback) =>
      hostname === 'internal.example'
        ? callback(null, [{ address: '127.0.0.1', family: 4 }])
        : callback(Object.assign(new Error('not found'), { code: 'ENOTFOUND' }), []);
    const guarded = new GuardedFetcher({ timeoutMs: 500, lookupAll });
    const port = new URL(site.url).port;
    const before = site.requests();
    try {
      expect(await failure(guarded, `${site.url}/doc`)).to.equal('address refused: 127.0.0.1 is a private address');
      expect(await failure(guarded, `http://internal.example:${port}/doc`)).to.match(
        /^address refused: internal\.example resolves to 127\.0\.0\.1/,
      );
      expect(await failure(guarded, `http://localhost:${port}/doc`)).to.equal('address refused: localhost is a loopback name');
      // Values only: these are refused before any connection is tried.
      expect(await failure(guarded, 'http://10.0.0.1/jwks')).to.equal('address refused: 10.0.0.1 is a private address');
      expect(await failure(guarded, 'http://169.254.169.254/latest')).to.equal('address refused: 169.254.169.254 is a private address');
    } finally {
      await guarded.close();
    }
    expect(site.requests()).to.equal(before);
  });
});
