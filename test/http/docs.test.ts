// GET /docs: the API reference rendered by Swagger UI, whose every file comes from this origin, and a
// Content-Security-Policy under which the browser itself refuses every other host.
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { runInNewContext } from 'node:vm';
import { expect } from 'chai';
import { parse as parseYaml } from 'yaml';
import { describeEachBackend } from '../support/backends.ts';
import { Client, getExactly } from '../support/client.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

const swaggerUi = dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));

/** The files the page loads, with the media type each must answer and, for Swagger UI's own, its file in swagger-ui-dist. */
const assets = [
  { path: '/docs/swagger-ui.css', type: 'text/css', file: join(swaggerUi, 'swagger-ui.css') },
  { path: '/docs/index.css', type: 'text/css', file: join(swaggerUi, 'index.css') },
  { path: '/docs/swagger-ui-bundle.js', type: 'text/javascript', file: join(swaggerUi, 'swagger-ui-bundle.js') },
  { path: '/docs/docs.js', type: 'text/javascript' },
];

/** Paths under /docs that must answer 404 not_found: names the page does not load, and ways out of /docs. */
const misses = [
  { name: 'an unknown asset', path: '/docs/swagger-ui.js' },
  { name: 'a file of swagger-ui-dist the page does not load', path: '/docs/swagger-ui-bundle.js.map' },
  { name: 'the package of swagger-ui-dist', path: '/docs/package.json' },
  { name: 'an encoded slash out of /docs', path: '/docs/..%2Fpackage.json' },
  { name: 'an encoded slash and dots out of /docs', path: '/docs/%2e%2e%2Fpackage.json' },
  { name: 'an encoded dot-dot segment', path: '/docs/%2e%2e/package.json' },
  { name: 'a dot-dot segment', path: '/docs/../package.json' },
  { name: 'a dot-dot segment into the source', path: '/docs/../src/docs/files.ts' },
  { name: 'a backslash', path: '/docs/..%5Cpackage.json' },
  { name: 'a path below an asset', path: '/docs/docs.js/x' },
];

/** Every source a directive of a Content-Security-Policy allows, by directive. */
function policy(header: string | null): Map<string, string[]> {
  expect(header, 'Content-Security-Policy').to.be.a('string');
  const directives = (header as string).split(';').map((directive) => directive.trim().split(/\s+/));
  return new Map(directives.map(([name, ...sources]) => [name, sources]));
}

describeEachBackend('the API reference', (backend) => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer({}, { backend });
  });
  after(() => server.stop());

  describe('GET /docs', () => {
    it('answers an HTML page without a key, with the policy and no-cache', async () => {
      const response = await server.anonymous().get('/docs');
      expect(response.status).to.equal(200);
      expect(response.headers.get('content-type')).to.equal('text/html; charset=utf-8');
      expect(response.headers.get('cache-control')).to.equal('no-cache');
      expect(response.headers.has('content-security-policy')).to.equal(true);
      expect(response.text).to.match(/^<!doctype html>/i);
      expect(response.text).to.include('<div id="swagger-ui"></div>');
    });

    it('sends a policy that lets the browser load from this origin only, and run no inline script', async () => {
      const response = await server.anonymous().get('/docs');
      const directives = policy(response.headers.get('content-security-policy'));
      expect(directives.get('default-src')).to.deep.equal(["'self'"]);
      // Scripts fall back to default-src: nothing inline, no eval.
      expect(directives.has('script-src')).to.equal(false);
      // What no directive may allow: any host, or a scheme that reaches one (https:, http:, ws:, *).
      for (const [name, sources] of directives) {
        for (const source of sources) expect(["'self'", "'none'", "'unsafe-inline'", 'data:'], `${name} ${source}`).to.include(source);
      }
      expect(directives.get('style-src')).to.deep.equal(["'self'", "'unsafe-inline'"]);
      expect(directives.get('img-src')).to.deep.equal(["'self'", 'data:']);
      for (const name of ['object-src', 'base-uri', 'form-action', 'frame-ancestors']) expect(directives.has(name), name).to.equal(true);
    });

    it('loads every script and stylesheet from this origin, and has no inline script or style', async () => {
      const { text } = await server.anonymous().get('/docs');
      const loaded = [...text.matchAll(/\s(?:src|href)="([^"]*)"/g)].map(([, url]) => url);
      expect(loaded).to.have.members(assets.map((asset) => asset.path));
      for (const url of loaded) expect(new URL(url, server.url).origin, url).to.equal(new URL(server.url).origin);
      for (const [, attributes, content] of text.matchAll(/<script([^>]*)>([\s\S]*?)<\/script>/g)) {
        expect(attributes).to.match(/\ssrc="/);
        expect(content.trim()).to.equal('');
      }
      expect(text).not.to.match(/<style|\sstyle=|\son[a-z]+=/i);
    });

    it('answers the same page at /docs/', async () => {
      const page = await server.anonymous().get('/docs');
      const slashed = await server.anonymous().get('/docs/');
      expect(slashed.status).to.equal(200);
      expect(slashed.text).to.equal(page.text);
    });

    it('does not count toward usage, even with a key', async () => {
      const client = await server.client();
      for (const path of ['/docs', ...assets.map((asset) => asset.path), '/docs/unknown.js']) {
        const response = await client.get(path);
        expect(response.headers.has('RateLimit-Limit'), path).to.equal(false);
      }
      const usage = await client.get<{ used: number }>('/v1/usage');
      expect(usage.body.used).to.equal(1);
    });
  });

  describe('GET /docs/{asset}', () => {
    for (const { path, type, file } of assets) {
      it(`answers ${path} as ${type}${file ? ', byte for byte the file of swagger-ui-dist' : ''}`, async () => {
        const response = await server.anonymous().get(path);
        expect(response.status).to.equal(200);
        expect(response.headers.get('content-type')).to.equal(`${type}; charset=utf-8`);
        expect(response.headers.get('cache-control')).to.equal('public, max-age=3600');
        expect(policy(response.headers.get('content-security-policy')).get('default-src')).to.deep.equal(["'self'"]);
        if (file) expect(response.text === (await readFile(file, 'utf8')), `${path} is ${file}`).to.equal(true);
      });
    }

    /** What docs.js hands Swagger UI, run as the page runs it. */
    async function swaggerUiConfig(): Promise<Record<string, unknown>> {
      const { text } = await server.anonymous().get('/docs/docs.js');
      const started: Record<string, unknown>[] = [];
      runInNewContext(text, { window: {}, SwaggerUIBundle: (config: Record<string, unknown>) => started.push(config) });
      expect(started).to.have.length(1);
      return started[0];
    }

    it('starts Swagger UI on /docs/openapi.yaml, with no validator, and nothing from another host', async () => {
      const config = await swaggerUiConfig();
      expect(config).to.include({ url: '/docs/openapi.yaml', validatorUrl: null, queryConfigEnabled: false, dom_id: '#swagger-ui' });
      expect(config).not.to.have.any.keys('urls', 'configUrl', 'oauth2RedirectUrl', 'spec', 'requestInterceptor');
    });

    it('renders the document /openapi.yaml serves, its one server the relative /, and never stale', async () => {
      const config = await swaggerUiConfig();
      const rendered = await server.anonymous().get(config.url as string);
      expect(rendered.status).to.equal(200);
      expect(rendered.headers.get('content-type')).to.equal('application/yaml; charset=utf-8');
      expect(rendered.headers.get('cache-control')).to.equal('no-cache');
      expect(policy(rendered.headers.get('content-security-policy')).get('default-src')).to.deep.equal(["'self'"]);
      const served = parseYaml((await server.anonymous().get('/openapi.yaml')).text);
      const document = parseYaml(rendered.text);
      expect(document.servers).to.deep.equal([{ url: '/', description: 'This service: the origin this page was served from.' }]);
      expect({ ...document, servers: served.servers }).to.deep.equal(served);
    });

    // "Try it out" sends to servers[0] resolved against the document's URL (Swagger UI's swagger-client
    // resolves a relative server that way, as OpenAPI's Server Object says). On a test server's ephemeral
    // port, whatever the name the page was reached by, that is the page's own origin, which its policy allows.
    for (const host of ['127.0.0.1', 'localhost']) {
      it(`sends "Try it out" to the origin the page came from (reached as ${host})`, async () => {
        const origin = `http://${host}:${new URL(server.url).port}`;
        const config = await swaggerUiConfig();
        const page = new Client(origin);
        const documentUrl = new URL(config.url as string, `${origin}/docs`);
        const base = new URL(parseYaml((await page.get(documentUrl.pathname)).text).servers[0].url, documentUrl);
        expect(base.origin).to.equal(origin);
        expect(base.origin).not.to.equal(new URL(parseYaml((await page.get('/openapi.yaml')).text).servers[0].url).origin);
        expect((await new Client(base.origin).get('/health')).status).to.equal(200);
      });
    }

    for (const { name, path } of misses) {
      it(`answers 404 not_found to ${name} (${path})`, async () => {
        const response = await getExactly(server.url, path);
        expect(response.status).to.equal(404);
        expect(response.body).to.include({ code: 'not_found' });
      });
    }
  });
});
