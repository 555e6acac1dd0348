// `rowbase keys …` as real processes, beside a real `rowbase serve` on the same database
// (contract: "Names and start-up", "Authentication and tenancy").
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import type { NewKey } from '../../src/db/accounts/keys.ts';
import { openStore, type Store } from '../../src/db/open-store.ts';
import { createDatabase, describeEachBackend, type TestDatabase } from '../support/backends.ts';
import { Client } from '../support/client.ts';
import { expectBadArguments, pollUntil, servingWorkspace, Workspace } from '../support/process.ts';

const packageVersion = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')).version;

interface Limits {
  name: string | null;
  scope: string;
  collections: string[] | null;
  expires_at: string | null;
  kind: string;
  origins: string[] | null;
  end_user_rate: number | null;
}

interface CreatedKey extends Limits {
  key: string;
  prefix: string;
  account: string;
  plan: string;
}

interface ListedKey extends Limits {
  prefix: string;
  account: string;
  plan: string;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
}

describe('rowbase keys', () => {
  const suite = servingWorkspace();
  const { rowbase } = suite;
  const collectionsSeenWith = (key: string) => new Client(suite.server.url, key).get('/v1/collections');
  let accounts = 0;
  const newAccount = () => `account-${++accounts}`;

  async function createKey(account: string, ...options: string[]): Promise<CreatedKey> {
    const created = await rowbase('keys', 'create', '--account', account, '--json', ...options);
    expect(created.code, created.stderr).to.equal(0);
    return JSON.parse(created.stdout);
  }

  // The keys a test needs beside the command it is about, made as `rowbase keys create` makes them
  // (store.createKey), in this process: each `rowbase` start costs a test a third of a second of CPU.
  let store: Store;
  before(async () => {
    store = await openStore(suite.workspace.databaseUrl);
  });
  after(() => store?.close());
  const madeKey = (account: string, plan?: string, limits: NewKey = {}) => store.createKey(account, plan, limits) as Promise<CreatedKey>;

  async function listKeys(...options: string[]): Promise<ListedKey[]> {
    const listed = await rowbase('keys', 'list', '--json', ...options);
    expect(listed.code, listed.stderr).to.equal(0);
    return JSON.parse(listed.stdout);
  }

  describe('keys create', () => {
    it('prints the key alone on the last line of stdout: rb_ and at least 128 random bits', async () => {
      const created = await rowbase('keys', 'create', '--account', 'me');

      expect(created.code).to.equal(0);
      // Which database the key went to, on stderr: not in the way of `KEY=$(… | tail -n 1)`, and in sight.
      expect(created.stderr).to.equal(`rowbase: database ${suite.workspace.databaseUrl}\n`);
      const key = lastLineOf(created.stdout);
      expect(created.stdout.endsWith(`${key}\n`)).to.equal(true);
      expect(key).to.match(/^rb_[A-Za-z0-9_-]+$/);
      // base64url: 6 bits a character.
      expect((key.length - 'rb_'.length) * 6).to.be.at.least(128);
    });

    it('makes a key that the running server accepts', async () => {
      const created = await rowbase('keys', 'create', '--account', newAccount());
      const key = lastLineOf(created.stdout);

      const listed = await collectionsSeenWith(key);

      expect(listed.status).to.equal(200);
      expect(listed.body).to.deep.equal([]);
    });

    it('makes a different key each time', async () => {
      const account = newAccount();
      const [first, second] = await Promise.all([createKey(account), createKey(account)]);

      expect(first.key).to.not.equal(second.key);
      expect(first.prefix).to.not.equal(second.prefix);
    });

    it('prints one JSON object with key, prefix, account and plan with --json', async () => {
      const account = newAccount();
      const created = await rowbase('keys', 'create', '--account', account, '--json');

      expect(created.code).to.equal(0);
      expect(created.stdout.trimEnd().split('\n')).to.have.length(1);
      const printed = JSON.parse(created.stdout);
      expect(printed).to.be.an('object').that.includes.all.keys('key', 'prefix', 'account', 'plan');
      expect(printed.key).to.match(/^rb_/);
      expect(printed.key.startsWith(printed.prefix)).to.equal(true);
      expect(printed.prefix.length).to.be.below(printed.key.length);
      expect(printed.account).to.equal(account);
    });

    it('gives a new account the free plan by default', async () => {
      const account = newAccount();

      expect((await createKey(account)).plan).to.equal('free');
      expect((await listKeys('--account', account)).map((key) => key.plan)).to.deep.equal(['free']);
    });

    it('sets the plan with --plan pro', async () => {
      const account = newAccount();

      expect((await createKey(account, '--plan', 'pro')).plan).to.equal('pro');
      expect((await listKeys('--account', account)).map((key) => key.plan)).to.deep.equal(['pro']);
    });

    it('makes an admin key of every collection that never expires without --scope, --collections or an expiry', async () => {
      const created = await createKey(newAccount());

      expect(created).to.include({ scope: 'admin', collections: null, expires_at: null, name: null });
    });

    it('limits the key to --scope, --collections and --expires-in, names it --name, and the running server holds it to them', async () => {
      const account = newAccount();
      const owner = new Client(suite.server.url, (await madeKey(account)).key);
      for (const name of ['notes', 'other']) expect((await owner.post('/v1/collections', { name })).status).to.equal(201);

      const before = Date.now();
      const created = await createKey(
        account,
        '--scope',
        'read',
        '--collections',
        'notes,later',
        '--expires-in',
        '30d',
        '--name',
        'dashboard',
      );
      const after = Date.now();

      expect(created).to.include({ scope: 'read', name: 'dashboard' });
      expect(created.collections).to.deep.equal(['notes', 'later']);
      const expiresAt = Date.parse(created.expires_at as string);
      expect(expiresAt).to.be.within(before + 30 * 86_400_000, after + 30 * 86_400_000);
      const client = new Client(suite.server.url, created.key);
      const listed = await client.get<{ name: string }[]>('/v1/collections');
      expect(listed.body.map(({ name }) => name)).to.deep.equal(['notes']);
      expect((await client.get('/v1/collections/other')).status).to.equal(404);
      expect((await client.post('/v1/collections/notes/rows', [{ n: 1 }])).status).to.equal(403);
    });

    it('takes --expires-at as an RFC 3339 time with any offset, and prints the limits on its first line', async () => {
      const created = await rowbase(
        'keys',
        'create',
        '--account',
        newAccount(),
        '--scope',
        'write',
        '--expires-at',
        '2099-01-01T01:30:00+01:30',
      );

      expect(created.code, created.stderr).to.equal(0);
      expect(created.stdout.split('\n')[0]).to.match(
        /^account account-\d+ \(plan free\), key prefix rb_[\w-]{8}: scope write, every collection, expires 2099-01-01T00:00:00\.000Z$/,
      );
    });

    it('refuses an unknown plan with exit 2 and one line on stderr, and makes no key', async () => {
      const account = newAccount();

      const refused = await rowbase('keys', 'create', '--account', account, '--plan', 'platinum');

      expectBadArguments(refused);
      expect(await listKeys('--account', account)).to.deep.equal([]);
    });
  });

  describe('keys list', () => {
    it('shows every key by its prefix and never a whole key', async () => {
      const account = newAccount();
      const keys = await Promise.all([madeKey(account), madeKey(account)]);

      const [table, json] = await Promise.all([rowbase('keys', 'list'), rowbase('keys', 'list', '--json')]);

      for (const listed of [table, json]) {
        expect(listed.code).to.equal(0);
        for (const { key, prefix } of keys) {
          expect(listed.stdout).to.include(prefix);
          expect(listed.stdout).to.not.include(key);
        }
      }
    });

    it("shows each key's name, scope, collections, expiry, creation and last use, to the minute and soon after it", async () => {
      const account = newAccount();
      const limited = await madeKey(account, undefined, {
        scope: 'write',
        collections: ['a', 'b'],
        expires_at: '2099-06-01T00:00:00.000Z',
        name: 'ci',
      });
      const unused = await madeKey(account);
      const watcher = new Client(suite.server.url, (await madeKey(account)).key);
      const used = Date.now();
      expect((await collectionsSeenWith(limited.key)).status).to.equal(200);

      // Watched over HTTP, which answers sooner than a CLI process starts (and, on the free plan, 429 past 10 a second).
      const lastUse = async () => {
        const listed = await watcher.get<ListedKey[]>('/v1/keys');
        return listed.status === 200 ? listed.body.find(({ prefix }) => prefix === limited.prefix)?.last_used_at : null;
      };
      await pollUntil(async () => (await lastUse()) !== null, 3000);
      const [first, second] = await listKeys('--account', account);
      const table = await rowbase('keys', 'list', '--account', account);

      expect(first).to.include({ prefix: limited.prefix, name: 'ci', scope: 'write', expires_at: '2099-06-01T00:00:00.000Z' });
      expect(first.collections).to.deep.equal(['a', 'b']);
      const minute = used - (used % 60_000);
      expect(Date.parse(first.last_used_at as string)).to.be.oneOf([minute, minute + 60_000]);
      expect(second).to.include({
        prefix: unused.prefix,
        name: null,
        scope: 'admin',
        collections: null,
        expires_at: null,
        last_used_at: null,
      });
      const [header, ...rows] = table.stdout.trimEnd().split('\n');
      expect(header.split(/ {2,}/)).to.deep.equal([
        'PREFIX',
        'ACCOUNT',
        'PLAN',
        'NAME',
        'SCOPE',
        'COLLECTIONS',
        'EXPIRES',
        'CREATED',
        'LAST USED',
        'REVOKED',
        'KIND',
        'ORIGINS',
        'END-USER RATE',
      ]);
      expect(rows[0].split(/ +/).slice(3, 7)).to.deep.equal(['ci', 'write', 'a,b', '2099-06-01T00:00:00.000Z']);
      expect(rows[1].split(/ +/).slice(3, 7)).to.deep.equal(['-', 'admin', '*', 'never']);
    });

    it("shows only one account's keys with --account", async () => {
      const [alice, bob] = [newAccount(), newAccount()];
      const [aliceKey, bobKey] = await Promise.all([madeKey(alice), madeKey(bob)]);

      const [table, json] = await Promise.all([rowbase('keys', 'list', '--account', alice), listKeys('--account', alice)]);

      expect(table.code).to.equal(0);
      expect(table.stdout).to.include(aliceKey.prefix);
      expect(table.stdout).to.not.include(bobKey.prefix);
      expect(json.map((key) => [key.account, key.prefix])).to.deep.equal([[alice, aliceKey.prefix]]);
    });
  });

  describe('keys create --publishable', () => {
    it('makes an rb_pub_ key of scope write with its origins and rate, listed with them, refused by the server until rules exist, and revoked by its prefix', async () => {
      const account = newAccount();
      const created = await rowbase(
        'keys',
        'create',
        '--account',
        account,
        '--publishable',
        '--origins',
        'https://a.example,https://b.example',
        '--end-user-rate',
        '20',
      );
      expect(created.code, created.stderr).to.equal(0);
      const key = lastLineOf(created.stdout);
      expect(key).to.match(/^rb_pub_[A-Za-z0-9_-]{32}$/);
      expect(created.stdout.split('\n')[0]).to.include('publishable, origins https://a.example,https://b.example, scope write');

      const [listed] = await listKeys('--account', account);
      expect(listed).to.include({ prefix: key.slice(0, 15), kind: 'publishable', scope: 'write', end_user_rate: 20 });
      expect(listed.origins).to.deep.equal(['https://a.example', 'https://b.example']);
      const table = await rowbase('keys', 'list', '--account', account);
      expect(table.stdout.trimEnd().split('\n')[1]).to.match(/publishable +https:\/\/a\.example,https:\/\/b\.example +20$/);

      const refused = await collectionsSeenWith(key);
      expect(refused.status).to.equal(403);
      expect((refused.body as { detail: string }).detail).to.include('needs a secret key');

      const revoking = await rowbase('keys', 'revoke', key.slice(0, 15));
      expect(revoking.code, revoking.stderr).to.equal(0);
      await pollUntil(async () => (await collectionsSeenWith(key)).status === 401, 1000);
    });

    it('makes a secret key, listed with kind secret and no origins, without --publishable', async () => {
      const made = await createKey(newAccount());
      expect(made).to.include({ kind: 'secret', origins: null, end_user_rate: null });
    });
  });

  describe('keys revoke', () => {
    // The poll below asks as fast as it can until the revocation shows: on the free plan's 10 requests
    // a second, shared by both keys of the account, the kept key would then be refused with a 429.
    before(() => store.setPlan({ name: 'unthrottled', quota: 1_000_000, period: 'month', rate: null }));

    for (const givenBy of ['prefix', 'whole key'] as const) {
      it(`revokes a key given by its ${givenBy}: the running server refuses it within a second`, async () => {
        const account = newAccount();
        const revoked = await madeKey(account, 'unthrottled');
        const kept = await madeKey(account); // after the revoked one, so it is listed second
        expect((await collectionsSeenWith(revoked.key)).status).to.equal(200);

        const revoking = await rowbase('keys', 'revoke', givenBy === 'prefix' ? revoked.prefix : revoked.key);

        expect(revoking.code, revoking.stderr).to.equal(0);
        expect(revoking.stdout).to.include(revoked.prefix);
        await pollUntil(async () => (await collectionsSeenWith(revoked.key)).status === 401, 1000);
        const refused = await collectionsSeenWith(revoked.key);
        expect(refused.status).to.equal(401);
        expect(refused.headers.get('www-authenticate')).to.equal('Bearer realm="rowbase"');
        expect((await collectionsSeenWith(kept.key)).status).to.equal(200);
        const listed = await listKeys('--account', account);
        expect(listed.map((key) => [key.prefix, key.revoked_at !== null])).to.deep.equal([
          [revoked.prefix, true],
          [kept.prefix, false],
        ]);
      });
    }

    it('exits 2 with one line on stderr for a key that matches nothing', async () => {
      expectBadArguments(await rowbase('keys', 'revoke', 'rb_nothing'), 'no key matches "rb_nothing"; see: rowbase keys list');
    });

    it('exits 2 with one line on stderr for a part of a prefix, which names no key', async () => {
      const { prefix } = await madeKey(newAccount());

      expectBadArguments(await rowbase('keys', 'revoke', prefix.slice(0, -1)));
      expect((await listKeys()).find((key) => key.prefix === prefix)?.revoked_at).to.equal(null);
    });

    for (const givenBy of ['prefix', 'whole key'] as const) {
      it(`exits 2 with one line on stderr saying when, for a key already revoked given by its ${givenBy}`, async () => {
        const created = await madeKey(newAccount());
        await store.revokeKey(created.prefix);
        const [{ revoked_at }] = await store.listKeys(created.account);

        const again = await rowbase('keys', 'revoke', givenBy === 'prefix' ? created.prefix : created.key);

        expectBadArguments(again, `key ${created.prefix} was already revoked at ${revoked_at}`);
      });
    }
  });

  describe('--help', () => {
    const helps = [
      {
        args: ['--help'],
        describes: ['  serve ', '  keys create ', '  keys list ', '  keys revoke '],
      },
      {
        args: ['keys', 'create', '--help'],
        describes: [
          'Usage: rowbase keys create',
          '--account',
          '--plan',
          '--scope',
          '--collections',
          '--expires-in',
          '--expires-at',
          '--name',
          '--json',
        ],
      },
      { args: ['keys', 'list', '--help'], describes: ['Usage: rowbase keys list', '--account', '--json'] },
      { args: ['keys', 'revoke', '--help'], describes: ['Usage: rowbase keys revoke <key-or-prefix>', 'prefix'] },
      { args: ['serve', '--help'], describes: ['Usage: rowbase serve', 'PORT', 'HOST', 'DATABASE_URL', 'LOG_LEVEL', 'ROWBASE_*'] },
      { args: ['--version'], describes: [`rowbase ${packageVersion}\n`] },
    ];
    for (const { args, describes } of helps) {
      it(`rowbase ${args.join(' ')} exits 0 and describes the command`, async () => {
        const help = await rowbase(...args);

        expect(help.code).to.equal(0);
        expect(help.stderr).to.equal('');
        for (const text of describes) expect(help.stdout).to.include(text);
      });
    }
  });

  describe('bad arguments', () => {
    const mistakes = [
      { mistake: 'no command', args: [] },
      { mistake: 'an unknown command', args: ['frobnicate'] },
      { mistake: 'an unknown subcommand', args: ['keys', 'rotate'] },
      { mistake: 'an unknown option', args: ['keys', 'list', '--colour'] },
      { mistake: 'a missing --account', args: ['keys', 'create'] },
      { mistake: 'an --account without a value', args: ['keys', 'create', '--account'] },
      { mistake: 'an extra positional', args: ['keys', 'list', 'extra'] },
      { mistake: 'a second key to revoke', args: ['keys', 'revoke', 'rb_one', 'rb_two'] },
      { mistake: 'no key to revoke', args: ['keys', 'revoke'] },
      { mistake: 'keys without a subcommand', args: ['keys'], reason: 'keys needs a subcommand: create, list, revoke; see rowbase --help' },
      {
        mistake: 'an --account given twice',
        args: ['keys', 'create', '--account', 'a', '--account', 'b'],
        reason: '--account is given twice',
      },
      { mistake: 'a --json given twice', args: ['keys', 'list', '--json', '--json'], reason: '--json is given twice' },
      {
        mistake: 'an option before the command',
        args: ['--json', 'keys', 'list'],
        reason: 'options come after the command, as in rowbase keys list --json; see rowbase --help',
      },
      {
        mistake: 'an option between a command and its subcommand',
        args: ['keys', '--json', 'list'],
        reason: 'keys needs a subcommand: create, list, revoke; see rowbase --help',
      },
      { mistake: '--version with more', args: ['--version', 'keys'] },
      {
        mistake: 'an unknown --scope',
        args: ['keys', 'create', '--account', 'a', '--scope', 'root'],
        reason: '--scope must be one of read, write, admin',
      },
      { mistake: 'an empty name in --collections', args: ['keys', 'create', '--account', 'a', '--collections', 'a,,b'] },
      { mistake: 'no collection name in --collections', args: ['keys', 'create', '--account', 'a', '--collections', '1x'] },
      { mistake: 'a collection twice in --collections', args: ['keys', 'create', '--account', 'a', '--collections', 'a,a'] },
      { mistake: 'an --expires-in without a unit', args: ['keys', 'create', '--account', 'a', '--expires-in', '30'] },
      { mistake: 'an --expires-in of nothing', args: ['keys', 'create', '--account', 'a', '--expires-in', '0d'] },
      { mistake: 'an --expires-at that is no time', args: ['keys', 'create', '--account', 'a', '--expires-at', 'tomorrow'] },
      { mistake: 'an --expires-at on February 30th', args: ['keys', 'create', '--account', 'a', '--expires-at', '2099-02-30T00:00:00Z'] },
      {
        mistake: 'an --expires-at in the year 10000',
        args: ['keys', 'create', '--account', 'a', '--expires-at', '9999-12-31T23:00:00-01:00'],
      },
      { mistake: 'an --expires-at in the past', args: ['keys', 'create', '--account', 'a', '--expires-at', '2020-01-01T00:00:00Z'] },
      {
        mistake: 'both --expires-in and --expires-at',
        args: ['keys', 'create', '--account', 'a', '--expires-in', '1d', '--expires-at', '2099-01-01T00:00:00Z'],
        reason: 'give --expires-in or --expires-at, not both',
      },
      { mistake: 'a --name with a control character', args: ['keys', 'create', '--account', 'a', '--name', 'a\tb'] },
      { mistake: '--publishable without --origins', args: ['keys', 'create', '--account', 'a', '--publishable'] },
      { mistake: '--origins without --publishable', args: ['keys', 'create', '--account', 'a', '--origins', 'https://a.example'] },
      { mistake: '--end-user-rate without --publishable', args: ['keys', 'create', '--account', 'a', '--end-user-rate', '5'] },
      ...['', 'https://a.example/', 'https://A.example', '*', 'null', 'ftp://a.example', 'https://a.example,https://a.example'].map(
        (origins) => ({
          mistake: `--origins ${JSON.stringify(origins)}`,
          args: ['keys', 'create', '--account', 'a', '--publishable', '--origins', origins],
        }),
      ),
      {
        mistake: '51 --origins',
        args: [
          'keys',
          'create',
          '--account',
          'a',
          '--publishable',
          '--origins',
          Array.from({ length: 51 }, (_, n) => `https://a${n}.example`).join(','),
        ],
      },
      {
        mistake: '--scope admin with --publishable',
        args: ['keys', 'create', '--account', 'a', '--publishable', '--origins', 'https://a.example', '--scope', 'admin'],
      },
      ...['0', '10001', '1.5', 'x'].map((rate) => ({
        mistake: `--end-user-rate ${rate}`,
        args: ['keys', 'create', '--account', 'a', '--publishable', '--origins', 'https://a.example', '--end-user-rate', rate],
      })),
    ];
    for (const { mistake, args, reason } of mistakes as { mistake: string; args: string[]; reason?: string }[]) {
      it(`exits 2 with one line on stderr for ${mistake}`, async () => {
        expectBadArguments(await rowbase(...args), reason);
      });
    }

    it('makes no key when --account is given twice', async () => {
      const [first, second] = [newAccount(), newAccount()];

      expectBadArguments(await rowbase('keys', 'create', '--account', first, '--account', second));
      expect(await listKeys('--account', second)).to.deep.equal([]);
    });
  });

  describeEachBackend('a fresh database', (backend) => {
    let fresh: Workspace;
    let database: TestDatabase;
    beforeEach(async () => {
      fresh = await Workspace.create();
      database = await createDatabase(backend);
    });
    afterEach(async () => {
      await fresh.cleanUp();
      await database.drop();
    });

    it('says on stderr which database it used: a SQLite file by its absolute path, PostgreSQL without its password', async () => {
      const url = new URL(database.url);
      if (backend === 'postgres') url.password = 'not-shown'; // the test server trusts 127.0.0.1: any password does
      const created = await fresh.run(['keys', 'create', '--account', 'shown', '--json'], { DATABASE_URL: url.href });
      expect(created.code, created.stderr).to.equal(0);
      url.password = '***';
      expect(created.stderr).to.equal(`rowbase: database ${url.href}\n`);
      expect(created.stderr).not.to.include('not-shown');
    });

    it('works for serve and several CLI commands that start on it at the same time', async () => {
      const env = { DATABASE_URL: database.url };
      const [server, ...runs] = await Promise.all([
        fresh.serve(env),
        ...['first', 'second', 'third'].map((account) => fresh.run(['keys', 'create', '--account', account, '--json'], env)),
        fresh.run(['plans', 'set', 'team', '--quota', '5', '--period', 'day'], env),
      ]);

      for (const run of runs) expect(run.code, run.stderr).to.equal(0);
      for (const run of runs.slice(0, 3)) {
        expect((await new Client(server.url, JSON.parse(run.stdout).key).get('/v1/collections')).status).to.equal(200);
      }
    });
  });

  describe('the database', () => {
    let fresh: Workspace;
    beforeEach(async () => {
      fresh = await Workspace.create();
    });
    afterEach(() => fresh.cleanUp());

    it('creates the schema of a fresh database, in a folder that does not exist yet', async () => {
      const environment = { DATABASE_URL: `sqlite:${join(fresh.dir, 'new', 'rowbase.sqlite')}` };

      const created = await fresh.run(['keys', 'create', '--account', 'first', '--json'], environment);
      const listed = await fresh.run(['keys', 'list', '--json'], environment);

      expect(created.code, created.stderr).to.equal(0);
      const { key, prefix } = JSON.parse(created.stdout);
      expect(JSON.parse(listed.stdout).map((listedKey: ListedKey) => listedKey.prefix)).to.deep.equal([prefix]);
      const later = await fresh.serve(environment);
      expect((await new Client(later.url, key).get('/v1/collections')).status).to.equal(200);
    });

    it('works while serve runs on the same database and is busy writing', async () => {
      const busy = await fresh.serve();
      const writer = new Client(busy.url, await fresh.createKey('writer'));
      expect((await writer.post('/v1/collections', { name: 'busy' })).status).to.equal(201);
      const batch = Array.from({ length: 200 }, (_, n) => ({ n }));

      const [inserts, created] = await Promise.all([
        Promise.all(Array.from({ length: 6 }, () => writer.post('/v1/collections/busy/rows', batch))),
        Promise.all(['reader-1', 'reader-2', 'reader-3'].map((account) => fresh.run(['keys', 'create', '--account', account, '--json']))),
      ]);

      expect(inserts.map((inserted) => inserted.status)).to.deep.equal([201, 201, 201, 201, 201, 201]);
      for (const run of created) {
        expect(run.code, run.stderr).to.equal(0);
        const { key } = JSON.parse(run.stdout);
        expect((await new Client(busy.url, key).get('/v1/collections')).status).to.equal(200);
      }
      const collection = await writer.get<{ row_count: number }>('/v1/collections/busy');
      expect(collection.body.row_count).to.equal(6 * 200);
    });
  });
});

const lastLineOf = (text: string) => text.trimEnd().split('\n').at(-1) ?? '';
