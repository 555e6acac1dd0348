// The router enforces each operation's `security` itself (openapi.yaml: every /v1 operation needs a key),
// whatever stage comes before it: here the router's stages (route, authorize, handle) run with no
// authenticate() in front, on the real server's dependencies, so a request that reaches an operation
// needing a key carries no account.
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import Koa from 'koa';
import { defaults } from '../../src/config.ts';
import { AccountContracts } from '../../src/contract/served.ts';
import { authorize } from '../../src/http/authorize.ts';
import { BodyBudget } from '../../src/http/body-budget.ts';
import { handle } from '../../src/http/handle.ts';
import { bindOperations } from '../../src/http/operations.ts';
import { problems } from '../../src/http/problems.ts';
import { route } from '../../src/http/route.ts';
import { createLogger } from '../../src/log.ts';
import { TokenVerifier } from '../../src/tokens/verifier.ts';
import { Client } from '../support/client.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

describe('router', () => {
  let server: TestServer;
  let bare: Server;
  let client: Client;

  before(async () => {
    server = await startTestServer();
    const app = new Koa();
    app.silent = true;
    const operations = bindOperations();
    const deps = {
      store: server.store,
      meter: server.meter,
      config: defaults,
      bodies: new BodyBudget(defaults.maxBodyBytesAtOnce),
      documents: { openapi: '', asyncapi: '' },
      contracts: new AccountContracts({ openapi: '{}', asyncapi: '{}' }),
      tokens: new TokenVerifier(),
      feed: server.feed,
    };
    app.use(problems(createLogger('silent')));
    app.use(route(operations));
    app.use(authorize(operations));
    app.use(handle(operations, deps));
    bare = createServer(app.callback()).listen(0, '127.0.0.1');
    await once(bare, 'listening');
    client = new Client(`http://127.0.0.1:${(bare.address() as AddressInfo).port}`);
  });
  after(async () => {
    bare.close();
    await server.stop();
  });

  it('refuses an operation that needs a key when the request carries no account, before validating it', async () => {
    for (const path of ['/v1/collections', '/v1/usage', '/v1/collections/notes/rows/1', '/v1/collections/1x/rows/abc?limt=1']) {
      const response = await client.get<{ code: string }>(path);
      expect(response.status, path).to.equal(401);
      expect(response.body.code).to.equal('unauthorized');
      expect(response.headers.get('www-authenticate')).to.equal('Bearer realm="rowbase"');
    }
  });

  it('answers an operation that needs no key', async () => {
    const response = await client.get('/health');
    expect(response.status).to.equal(200);
  });

  it('tells an unknown route (404) from an unknown method (405), before security', async () => {
    expect((await client.get('/v1/nope')).status).to.equal(404);
    const response = await client.request('PUT', '/v1/collections/notes/rows/1');
    expect(response.status).to.equal(405);
    expect(response.headers.get('allow')).to.equal('GET, HEAD, DELETE, PATCH');
  });
});
