// GET /console and its files over plain HTTP: the page, its stylesheet and its bundled script, from this
// origin only, under the same Content-Security-Policy as /docs, never counted toward usage. What the
// page does in a browser is console.test.ts.
import { expect } from 'chai';
import { DOCS_CONTENT_SECURITY_POLICY } from '../../src/docs/files.ts';
import { getExactly } from '../support/client.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

describe('GET /console', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer();
  });
  after(() => server.stop());

  it('answers the page without a key, under the reference’s policy, never cached stale', async () => {
    const response = await server.anonymous().get('/console');
    expect(response.status).to.equal(200);
    expect(response.headers.get('content-type')).to.equal('text/html; charset=utf-8');
    expect(response.headers.get('cache-control')).to.equal('no-cache');
    expect(response.headers.get('content-security-policy')).to.equal(DOCS_CONTENT_SECURITY_POLICY);
    expect(response.text).to.include('<div id="console"></div>');
  });

  it('loads its script and stylesheet from this origin, with no inline script or style', async () => {
    const { text } = await server.anonymous().get('/console');
    const loaded = [...text.matchAll(/\s(?:src|href)="([^"]*)"/g)].map(([, url]) => url);
    expect(loaded).to.deep.equal(['data:,', '/console/console.css', '/console/console.js']);
    for (const [, attributes, content] of text.matchAll(/<script([^>]*)>([\s\S]*?)<\/script>/g)) {
      expect(attributes).to.match(/\ssrc="/);
      expect(content.trim()).to.equal('');
    }
    expect(text).not.to.match(/<style|\sstyle=|\son[a-z]+=/i);
  });

  it('answers its script bundled whole, its packages inside, and its stylesheet', async () => {
    const script = await server.anonymous().get('/console/console.js');
    expect(script.status).to.equal(200);
    expect(script.headers.get('content-type')).to.equal('text/javascript; charset=utf-8');
    expect(script.headers.get('content-security-policy')).to.equal(DOCS_CONTENT_SECURITY_POLICY);
    // No import of a package by name, which a browser could not resolve: Preact and htm are in the bundle.
    expect(script.text).not.to.match(/\bfrom\s*["'][^."'/]/);
    expect(script.text).not.to.match(/\beval\(|new Function\(/);
    const style = await server.anonymous().get('/console/console.css');
    expect(style.status).to.equal(200);
    expect(style.headers.get('content-type')).to.equal('text/css; charset=utf-8');
  });

  for (const path of [
    '/console/main.ts',
    '/console/files.ts',
    '/console/index.html',
    '/console/..%2Fpackage.json',
    '/console/../package.json',
  ]) {
    it(`answers 404 to ${path}: only the console's own files are served`, async () => {
      const response = await getExactly(server.url, path);
      expect(response.status).to.equal(404);
      expect(response.body).to.include({ code: 'not_found' });
    });
  }

  it('answers 405 to another method, and counts nothing toward usage, even with a key', async () => {
    const client = await server.client();
    expect((await client.post('/console', {})).status).to.equal(405);
    for (const path of ['/console', '/console/console.js', '/console/console.css', '/console/nothing.js']) {
      expect((await client.get(path)).headers.has('RateLimit-Limit'), path).to.equal(false);
    }
    expect((await client.get<{ used: number }>('/v1/usage')).body.used).to.equal(1);
  });
});
