// `rowbase serve` as a real process: start-up on a fresh database, bad configuration, graceful
// shutdown on SIGTERM, and durability through SIGKILL (contract: "Names and start-up", "Storage").
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { mkdir, readFile, stat, utimes, writeFile } from 'node:fs/promises';
import { Agent, request as httpRequest, type IncomingMessage } from 'node:http';
import module from 'node:module';
import { connect } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { Client, type Response, readResponse } from '../support/client.ts';
import { FeedClient } from '../support/feed.ts';
import { scrape, value } from '../support/metrics.ts';
import { expectBadArguments, pollUntil, type ServeProcess, Workspace } from '../support/process.ts';
import { head, rawExchange, websocketHeaders } from '../support/raw.ts';

type Row = { id: number } & Record<string, unknown>;

describe('rowbase serve', () => {
  let workspace: Workspace;
  const freshWorkspaceForEachTest = () => {
    beforeEach(async () => {
      workspace = await Workspace.create();
    });
    afterEach(() => workspace.cleanUp());
  };

  describe('starting', () => {
    freshWorkspaceForEachTest();

    it('creates the folder of a fresh DATABASE_URL and answers /health', async () => {
      const folder = join(workspace.dir, 'not', 'made', 'yet');
      expect(existsSync(folder)).to.equal(false);

      const server = await workspace.serve({ DATABASE_URL: `sqlite:${join(folder, 'rowbase.sqlite')}` });
      const health = await new Client(server.url).get('/health');

      expect(health.status).to.equal(200);
      expect(health.body).to.deep.equal({ ok: true, service: 'rowbase' });
      expect(existsSync(join(folder, 'rowbase.sqlite'))).to.equal(true);
    });

    it('serves the docs page, its script and the API documents, read from the repository from its bundle', async () => {
      const client = new Client((await workspace.serve()).url);

      for (const [path, type] of [
        ['/docs', 'text/html'],
        ['/docs/docs.js', 'text/javascript'],
        ['/openapi.yaml', 'application/yaml'],
        ['/asyncapi.yaml', 'application/yaml'],
      ]) {
        const response = await client.get(path);
        expect(response.status, path).to.equal(200);
        expect(response.headers.get('content-type'), path).to.match(new RegExp(`^${type};`));
      }
    });

    it('runs from a bundle of the sources, made again once a source is newer than it', async () => {
      const bundle = fileURLToPath(new URL('../../dist/rowbase.mjs', import.meta.url));
      await workspace.run(['--version']);
      // As old as can be: every source is newer now.
      await utimes(bundle, 0, 0);

      const finished = await workspace.run(['--version']);

      expect(finished.code).to.equal(0);
      expect((await stat(bundle)).mtimeMs).to.be.greaterThan(Date.now() - 60_000);
    });

    it("loads the server's packages, and each command's, only when that command runs", async () => {
      await workspace.run(['--version']);
      const dist = fileURLToPath(new URL('../../dist/', import.meta.url));
      // The files a module of the bundle imports statically, and the packages it imports.
      const imports = async (file: string) => {
        const text = await readFile(join(dist, file), 'utf8');
        const named = [...text.matchAll(/^(?:import [^;]*? from|} from) "([^"]+)";$/gm)].map((found) => found[1]);
        return {
          chunks: named.filter((name) => name.startsWith('./')).map((name) => name.slice(2)),
          packages: named.filter((name) => !name.startsWith('.')),
        };
      };
      const loaded = new Set<string>();
      const packages = new Set<string>();
      const waiting = ['rowbase.mjs'];
      for (let file = waiting.pop(); file !== undefined; file = waiting.pop()) {
        if (loaded.has(file)) continue;
        loaded.add(file);
        const found = await imports(file);
        waiting.push(...found.chunks);
        for (const name of found.packages) packages.add(name);
      }

      expect(loaded.size).to.be.above(1);
      for (const heavy of [
        'knex',
        'koa',
        'openapi-backend',
        'api-smart-diff',
        'sqlite3',
        'pg',
        'ajv/dist/2020.js',
        'jose',
        'esbuild',
        'yaml',
      ]) {
        expect([...packages], heavy).not.to.include(heavy);
      }
    });

    it('runs with one glibc malloc arena and large blocks to mmap unless told otherwise, in the process it was started as, with V8 as Node sizes it', async function () {
      if (process.platform !== 'linux' || !('execve' in process)) this.skip(); // a Node before 22.15 runs as it is
      const environOf = async (server: ServeProcess) => (await readFile(`/proc/${server.child.pid}/environ`, 'utf8')).split('\0');
      const argumentsOf = async (server: ServeProcess) => (await readFile(`/proc/${server.child.pid}/cmdline`, 'utf8')).split('\0');

      const byDefault = await workspace.serve();
      expect(await environOf(byDefault)).to.include.members(['MALLOC_ARENA_MAX=1', 'MALLOC_MMAP_THRESHOLD_=131072']);
      expect((await argumentsOf(byDefault)).filter((argument) => argument.includes('semi-space'))).to.deep.equal([]);
      byDefault.signal('SIGTERM');
      await byDefault.exited;

      const chosen = await workspace.serve({
        MALLOC_ARENA_MAX: '8',
        MALLOC_MMAP_THRESHOLD_: '65536',
      });
      const chosenEnviron = await environOf(chosen);
      expect(chosenEnviron).to.include.members(['MALLOC_ARENA_MAX=8', 'MALLOC_MMAP_THRESHOLD_=65536']);
      expect(chosenEnviron.filter((variable) => variable.startsWith('MALLOC_MMAP_THRESHOLD_='))).to.have.length(1);
    });

    it("keeps no compile cache for the server, where the other commands keep Node's", async function () {
      if (!('enableCompileCache' in module)) this.skip(); // Node before 22.1 has none
      const temp = join(workspace.dir, 'temp');
      await mkdir(temp);
      const server = await workspace.serve({ TMPDIR: temp });
      expect((await new Client(server.url).get('/health')).status).to.equal(200);
      expect(existsSync(join(temp, 'node-compile-cache'))).to.equal(false);
      server.signal('SIGTERM');
      await server.exited;

      expect((await workspace.run(['plans', 'list'], { TMPDIR: temp })).code).to.equal(0);
      expect(existsSync(join(temp, 'node-compile-cache'))).to.equal(true);
    });

    it('logs a URL that reaches it when HOST is an IPv6 address', async () => {
      const server = await workspace.serve({ HOST: '::1' });

      expect(server.url).to.match(/^http:\/\/\[::1\]:\d+$/);
      expect((await new Client(server.url).get('/health')).status).to.equal(200);
    });

    // Values that can never work: refused before the database is opened, exit 2 like a bad argument.
    const invalid: [string, string][] = [
      ...['abc', '-1', '65536', '70000', '80.5', ' ', '0x50', '8e3'].map((port): [string, string] => ['PORT', port]),
      ['LOG_LEVEL', 'loud'],
      ['DATABASE_URL', 'mysql://localhost/rowbase'],
      ['DATABASE_URL', 'rowbase.sqlite'],
      ['DATABASE_URL', 'sqlite:'],
      ['DATABASE_URL', 'postgres://localhost/rowbase?pool_max=many'],
      ['DATABASE_URL', 'postgres://localhost/rowbase?pool_max=0'],
      ['ROWBASE_MAX_BODY_BYTES', '1MiB'],
      ['ROWBASE_MAX_JSON_DEPTH', '0'],
      ['ROWBASE_MAX_BATCH_ROWS', '0'],
      ['ROWBASE_METERING', 'yes'],
      ['LOG_REQUESTS', 'yes'],
      ['METRICS_PORT', '65536'],
      ['ROWBASE_EVENTS_RETAIN_COUNT', '0'],
      ['ROWBASE_EVENTS_RETAIN_SECONDS', '1.5'],
      ['ROWBASE_EVENTS_PRUNE_SECONDS', '0'],
      ['ROWBASE_FEED_PING_SECONDS', '-30'],
      ['ROWBASE_FEED_MAX_BUFFER_BYTES', '1'],
      ['ROWBASE_SORT_INDEX_MIN_ROWS', '-1'],
      ['ROWBASE_SORT_INDEX_MAX', '65'],
    ];
    for (const [name, value] of invalid) {
      it(`exits 2 with one line on stderr naming ${name} for ${name}=${JSON.stringify(value)}`, async () => {
        const finished = await workspace.run(['serve'], { [name]: value });

        expectBadArguments(finished);
        expect(finished.stderr).to.include(name.startsWith('DATABASE_URL') ? 'DATABASE_URL' : `${name} must be`);
      });
    }

    it('exits 1 with one line on stderr, at once, for a PORT another process listens on', async () => {
      const first = await workspace.serve();

      const second = await workspace.run(['serve'], { PORT: new URL(first.url).port });

      expect(second).to.deep.include({ code: 1, signal: null, stdout: '' });
      expect(second.stderr).to.match(/^rowbase: listen EADDRINUSE[^\n]*\n$/);
      expect((await new Client(first.url).get('/health')).status).to.equal(200);
    });

    // 192.0.2.1 is TEST-NET-1 (RFC 5737): no machine has it.
    for (const host of ['192.0.2.1', 'no-such-host.invalid']) {
      it(`exits 1 with one line on stderr, at once, for HOST=${host}, which it cannot listen on`, async () => {
        const finished = await workspace.run(['serve'], { HOST: host });

        expect(finished).to.deep.include({ code: 1, signal: null, stdout: '' });
        expect(finished.stderr).to.match(/^rowbase: (listen|getaddrinfo) E[A-Z]+[^\n]*\n$/);
      });
    }

    it('exits 1 with one line on stderr naming the database for a DATABASE_URL it cannot open', async () => {
      await writeFile(join(workspace.dir, 'notes.txt'), 'not a database, but long enough to have a header of 100 bytes '.repeat(4));
      const databases = [
        { url: `sqlite:${join(workspace.dir, 'notes.txt')}`, shown: `sqlite:${join(workspace.dir, 'notes.txt')}` },
        { url: `sqlite:${workspace.dir}`, shown: `sqlite:${workspace.dir}` },
        { url: `sqlite:${join(workspace.dir, 'notes.txt', 'rowbase.sqlite')}`, shown: 'notes.txt' },
        // /proc answers ENOENT to every mkdir in it, which Node 20's recursive mkdir retries for ever.
        { url: 'sqlite:/proc/rowbase/data/rowbase.sqlite', shown: '/proc/rowbase' },
        { url: 'postgres://rowbase:s3cret@127.0.0.1:1/rowbase', shown: 'postgres://rowbase:***@127.0.0.1:1/rowbase' },
      ];
      for (const { url, shown } of databases) {
        const finished = await workspace.run(['serve'], { DATABASE_URL: url });

        expect(finished.code, url).to.equal(1);
        expect(finished.stderr, url).to.match(/^rowbase: cannot open the database [^\n]+\n$/);
        expect(finished.stderr, url).to.include(shown);
        expect(finished.stderr, url).not.to.include('s3cret');
      }
    });
  });

  describe('its log', () => {
    freshWorkspaceForEachTest();

    it('holds no key and no request body, even at trace with the access log, whatever the requests and their outcomes', async () => {
      const server = await workspace.serve({ LOG_LEVEL: 'trace', LOG_REQUESTS: 'on', METRICS_PORT: '0' });
      const key = await workspace.createKey('me');
      const secret = 'body-secret-7f3a';
      const client = new Client(server.url, key);
      const outcomes = [
        await client.post('/v1/collections', { name: 'notes' }),
        await client.post('/v1/collections/notes/rows', [{ secret }]),
        await client.patch('/v1/collections/notes/rows/1', { secret: `${secret}-2` }),
        await client.post('/v1/collections/notes/rows', [{ id: 5, secret }]),
        await client.post('/v1/collections/absent/rows', [{ secret }]),
        await new Client(server.url).get(`/v1/collections/notes/rows?order_by=${secret}`, { headers: { 'x-api-key': key } }),
        await new Client(server.url, `${key}x`).get('/v1/collections'),
        await new Client(server.url).get(`/v1/collections?api_key=${key}`),
      ].map((response) => response.status);
      const feed = await FeedClient.open(server.url, key, { collection: 'notes' });
      await feed.close();
      const metricsLine = server.lines.map((line) => JSON.parse(line)).find((entry) => entry.msg === 'metrics are served');
      const scraped = await scrape(metricsLine.url);
      expect(value(scraped, 'rowbase_http_requests_total', { operation: 'insertRows' })).to.equal(3);
      server.signal('SIGTERM');
      expect(await server.exited).to.deep.equal({ code: 0, signal: null });

      expect(outcomes).to.deep.equal([201, 201, 200, 400, 404, 200, 401, 401]);
      const printed = `${server.lines.join('\n')}\n${await server.stderr}`;
      expect(printed).to.include('feed subscribed');
      const requests = server.lines.map((line) => JSON.parse(line)).filter((entry) => entry.msg === 'request');
      expect(requests.map((entry) => entry.status)).to.include.members([...outcomes, 101]);
      for (const text of [key, key.slice('rb_'.length), secret]) expect(printed).not.to.include(text);
    });
  });

  describe('given a request target that is no URL', () => {
    freshWorkspaceForEachTest();

    // Read as a URL, such a target throws with itself in the error, or url.parse prints it (DEP0170).
    it('answers 400 and prints neither the target nor its key, on stdout or stderr', async () => {
      const server = await workspace.serve({ LOG_LEVEL: 'trace' });
      const key = await workspace.createKey('me');
      const h2c = { Host: 'x', Connection: 'Upgrade', Upgrade: 'h2c' };
      const requests = [
        head(`GET http://x:abc/health?api_key=${key} HTTP/1.1`, { Host: 'x' }),
        head(`GET http://x:abc/ws?collection=notes&api_key=${key} HTTP/1.1`, { Host: 'x' }),
        head(`GET http://x:abc/ws?collection=notes&api_key=${key} HTTP/1.1`, websocketHeaders),
        head(`GET http://x:abc/v1/collections?api_key=${key} HTTP/1.1`, h2c),
        head(`GET http://[::1/ws?collection=notes&api_key=${key} HTTP/1.1`, websocketHeaders),
      ];
      for (const request of requests) {
        const [{ status, headers, text }] = await rawExchange(server.url, request);
        expect([status, headers.get('content-type'), JSON.parse(text).code], request).to.deep.equal([
          400,
          'application/problem+json',
          'validation_failed',
        ]);
      }
      server.signal('SIGTERM');
      expect((await server.exited).code).to.equal(0);
      const printed = `${server.lines.join('\n')}\n${await server.stderr}`;
      expect(printed).to.include('rowbase is listening');
      for (const secret of [key, 'x:abc', '[::1', 'DEP0170']) expect(printed).not.to.include(secret);
    });
  });

  describe('on SIGTERM', () => {
    freshWorkspaceForEachTest();
    // A client that keeps its connection open after a response, as browsers and fetch do.
    const keepAlive = new Agent({ keepAlive: true });
    after(() => keepAlive.destroy());

    it('lets a request in flight finish with 201, stops accepting connections, then exits 0 at once', async () => {
      const server = await workspace.serve();
      const key = await workspace.createKey('me');
      expect((await new Client(server.url, key).post('/v1/collections', { name: 'notes' })).status).to.equal(201);
      const rows = Array.from({ length: 1000 }, (_, n) => ({ n, text: `row ${n} of a batch that is in flight at SIGTERM` }));

      const inserted = await insertRowsHoldingTheBody(server, key, 'notes', rows, keepAlive, async () => {
        server.signal('SIGTERM');
        await server.logged('draining requests and closing');
        // The line is logged just before the listening socket closes, hence a poll and not one try.
        await pollUntil(async () => (await connectionError(server.url)) === 'ECONNREFUSED', 1000);
      });
      const respondedAt = performance.now();

      expect(inserted.status).to.equal(201);
      expect(inserted.body).to.deep.equal(rows.map((row, index) => ({ id: index + 1, ...row })));
      expect(await server.exited).to.deep.equal({ code: 0, signal: null });
      // The client's open connection must not hold the shutdown open until Node's keepAliveTimeout (5 s);
      // the bound leaves room for a loaded machine.
      expect(performance.now() - respondedAt).to.be.below(4000);
      expect(await connectionError(server.url)).to.equal('ECONNREFUSED');
      const restarted = await workspace.serve();
      const collection = await new Client(restarted.url, key).get<{ row_count: number }>('/v1/collections/notes');
      expect(collection.body.row_count).to.equal(rows.length);
    });
  });

  describe('on SIGTERM, with a connection that has sent nothing', () => {
    freshWorkspaceForEachTest();

    // A browser's preconnect, or a client pool's connection opened ahead of its request.
    it('ends that connection and exits 0 at once, not after its 10 s grace', async () => {
      const server = await workspace.serve();
      const { hostname, port } = new URL(server.url);
      const silent = connect(Number(port), hostname);
      // Ended by the server: a reset, or an end, whichever the host's TCP makes of it.
      silent.on('error', (error: NodeJS.ErrnoException) => expect(error.code).to.equal('ECONNRESET'));
      await once(silent, 'connect');
      // Not events.once, which rejects on the reset's 'error' before the 'close' that follows it.
      const closed = new Promise<void>((resolve) => silent.once('close', () => resolve()));
      const stoppedAt = performance.now();
      server.signal('SIGTERM');
      await closed;
      expect(await server.exited).to.deep.equal({ code: 0, signal: null });
      // The bound leaves room for a loaded machine.
      expect(performance.now() - stoppedAt).to.be.below(4000);
    });
  });

  describe('on a second SIGTERM while draining', () => {
    freshWorkspaceForEachTest();
    const keepAlive = new Agent({ keepAlive: true });
    after(() => keepAlive.destroy());

    // The operator's way out of a drain that takes too long (a stuck client): the signal's default
    // action. Acknowledged writes are safe anyway; at most a second of usage counts is lost, as in a crash.
    it('ends the process at once, without waiting for the request under way', async () => {
      const server = await workspace.serve();
      const key = await workspace.createKey('me');
      expect((await new Client(server.url, key).post('/v1/collections', { name: 'notes' })).status).to.equal(201);

      const inserting = insertRowsHoldingTheBody(server, key, 'notes', [{ n: 1 }], keepAlive, async () => {
        server.signal('SIGTERM');
        await server.logged('draining requests and closing');
        server.signal('SIGTERM');
        expect(await server.exited).to.deep.equal({ code: null, signal: 'SIGTERM' });
      });

      await inserting.then(
        () => expect.fail('the held request was answered'),
        (error: NodeJS.ErrnoException) => expect(error.code).to.be.oneOf(['ECONNRESET', 'EPIPE']),
      );
    });
  });

  describe('on SIGINT, with feed subscribers', () => {
    freshWorkspaceForEachTest();

    it('closes every subscriber with 1001, keeps every acknowledged write, and exits 0', async () => {
      const server = await workspace.serve();
      // Writes as fast as they go: no rate limit to answer some of them 429.
      expect((await workspace.run(['plans', 'set', 'pro', '--quota', '1000000', '--period', 'month', '--no-rate'])).code).to.equal(0);
      const created = await workspace.run(['keys', 'create', '--account', 'me', '--plan', 'pro', '--json']);
      const client = new Client(server.url, JSON.parse(created.stdout).key);
      expect((await client.post('/v1/collections', { name: 'notes' })).status).to.equal(201);
      const feeds = await Promise.all([1, 2, 3].map(() => FeedClient.open(server.url, client.key, { collection: 'notes' })));
      const writes = Promise.allSettled(Array.from({ length: 50 }, (_, n) => client.post('/v1/collections/notes/rows', [{ n }])));
      await feeds[0].changesCount(1); // the writes are under way

      server.signal('SIGINT');

      for (const feed of feeds) expect(await feed.closing()).to.deep.equal({ code: 1001, reason: 'server shutting down' });
      expect(await server.exited).to.deep.equal({ code: 0, signal: null });
      // Each write was answered 201 before the process ended, or found no server: none failed half-way.
      const answered = (await writes).flatMap((write) => (write.status === 'fulfilled' ? [write.value.status] : []));
      expect(
        answered.every((status) => status === 201),
        String(answered),
      ).to.equal(true);
      const restarted = new Client((await workspace.serve()).url, client.key);
      const collection = await restarted.get<{ row_count: number }>('/v1/collections/notes');
      expect(collection.body.row_count).to.equal(answered.length);
    });
  });

  describe('after SIGKILL right after the last acknowledged write', () => {
    let killed: Workspace;
    let acknowledged: Row[];
    let deletedId: number;
    let restarted: Client;

    before(async () => {
      killed = await Workspace.create();
      const first = await killed.serve();
      const key = await killed.createKey('me');
      const client = new Client(first.url, key);
      expect((await client.post('/v1/collections', { name: 'ledger' })).status).to.equal(201);
      acknowledged = [];
      const batches = [
        [{ kind: 'single', n: 1 }],
        [
          { kind: 'batch', n: 2, nested: { deep: [1, 'two', null] } },
          { kind: 'batch', n: 3, text: 'ünïcødé ✓' },
        ],
        Array.from({ length: 250 }, (_, n) => ({ kind: 'large batch', n: n + 4 })),
        [{ kind: 'single, deleted before the kill', n: 254 }],
        [{ kind: 'single, the last one', n: 255 }],
      ];
      for (const batch of batches) {
        const inserted = await client.post<Row[]>('/v1/collections/ledger/rows', batch);
        expect(inserted.status).to.equal(201);
        acknowledged.push(...inserted.body);
      }
      // The highest id but one is deleted, so "never reused" is tested on an id that is free again.
      deletedId = acknowledged[acknowledged.length - 2].id;
      expect((await client.delete(`/v1/collections/ledger/rows/${deletedId}`)).status).to.equal(204);
      acknowledged = acknowledged.filter((row) => row.id !== deletedId);
      const last = await client.post<Row[]>('/v1/collections/ledger/rows', [{ kind: 'single, acknowledged just before SIGKILL' }]);
      expect(last.status).to.equal(201);
      acknowledged.push(...last.body);

      first.signal('SIGKILL');
      expect(await first.exited).to.deep.equal({ code: null, signal: 'SIGKILL' });

      restarted = new Client((await killed.serve()).url, key);
    });
    after(() => killed.cleanUp());

    it('keeps every acknowledged row with the same id and content', async () => {
      const listed = await restarted.get<Row[]>('/v1/collections/ledger/rows?limit=1000');

      expect(listed.status).to.equal(200);
      expect(listed.body).to.deep.equal(acknowledged);
    });

    it('continues with higher ids and never reuses one', async () => {
      const highestEver = Math.max(deletedId, ...acknowledged.map((row) => row.id));

      const inserted = await restarted.post<Row[]>('/v1/collections/ledger/rows', [{ after: 'restart' }, { after: 'restart' }]);

      expect(inserted.status).to.equal(201);
      expect(inserted.body.map((row) => row.id)).to.deep.equal([highestEver + 1, highestEver + 2]);
    });
  });
});

/**
 * POSTs `rows` through `agent` with `Expect: 100-continue`, sends half the body, runs `whileInFlight`,
 * then sends the rest. The server's 100 Continue proves it has received the request (Node answers it
 * just as it hands the request to the app), so the request is provably under way while `whileInFlight`
 * runs. fetch cannot hold a body back, so this one request goes through node:http instead of client.ts,
 * and its response is checked against openapi.yaml with the same check client.ts uses.
 */
async function insertRowsHoldingTheBody(
  server: ServeProcess,
  key: string,
  collection: string,
  rows: object[],
  agent: Agent,
  whileInFlight: () => Promise<void>,
): Promise<Response> {
  const path = `/v1/collections/${collection}/rows`;
  const body = Buffer.from(JSON.stringify(rows));
  const request = httpRequest(server.url + path, {
    agent,
    method: 'POST',
    headers: {
      authorization: `Bearer ${key}`,
      'content-type': 'application/json',
      'content-length': body.length,
      expect: '100-continue',
    },
  });
  const responded = once(request, 'response') as Promise<[IncomingMessage]>;
  responded.catch(() => {}); // its failure is reported by the awaits below
  request.flushHeaders();
  await once(request, 'continue');
  const half = Math.floor(body.length / 2);
  request.write(body.subarray(0, half));
  await whileInFlight();
  request.end(body.subarray(half));

  const [response] = await responded;
  return readResponse('POST', path, response);
}

/** The error code of a new TCP connection to `url`'s port, or undefined if it connects. */
async function connectionError(url: string): Promise<string | undefined> {
  const { hostname, port } = new URL(url);
  const socket = connect(Number(port), hostname);
  try {
    await once(socket, 'connect');
    return undefined;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code;
  } finally {
    socket.destroy();
  }
}
