// `rowbase tokens mint` as a real process, beside a real `rowbase serve` on the same database, on each
// backend: the token it prints is one the server takes for the issuer's end user (docs/access.md, "Tokens
// from the app's backend"); and `rowbase --help` names every command, `rowbase tokens --help` its one.
import { expect } from 'chai';
import { decodeJwt, decodeProtectedHeader } from 'jose';
import { createDatabase, describeEachBackend, type TestDatabase } from '../support/backends.ts';
import { Client } from '../support/client.ts';
import { EndUser } from '../support/end-users.ts';
import { expectBadArguments, type ServeProcess, Workspace } from '../support/process.ts';

const SECRET = 'a development secret of at least 32 characters';
const ISSUER = { issuer: 'https://app.example', audiences: ['rowbase', 'other'], secret: SECRET };

describeEachBackend('rowbase tokens mint', (backend) => {
  let workspace: Workspace;
  let database: TestDatabase;
  let server: ServeProcess;
  let admin: Client;
  let publishable: string;
  const environment = () => ({ DATABASE_URL: database.url });
  const mint = (...args: string[]) => workspace.run(['tokens', 'mint', ...args], environment());

  before(async () => {
    workspace = await Workspace.create();
    database = await createDatabase(backend);
    server = await workspace.serve(environment());
    const created = await workspace.run(['keys', 'create', '--account', 'acme', '--json'], environment());
    admin = new Client(server.url, JSON.parse(created.stdout).key);
    expect((await admin.put('/v1/auth/issuers/app', ISSUER)).status).to.equal(201);
    const jwks = { issuer: 'https://idp.example', audiences: ['rowbase'], jwks_uri: 'https://idp.example/jwks.json' };
    expect((await admin.put('/v1/auth/issuers/idp', jwks)).status).to.equal(201);
    const made = await admin.post<{ key: string }>('/v1/keys', { kind: 'publishable', origins: ['https://app.example'] });
    publishable = made.body.key;
    expect((await admin.post('/v1/collections', { name: 'notes' })).status).to.equal(201);
    const owner = { owner: { $auth: 'sub' } };
    const rules = { read: { $and: [owner, { org: { $auth: 'org' } }] }, create: owner };
    expect((await admin.put('/v1/collections/notes/rules', rules)).status).to.equal(200);
    const rows = [
      { owner: 'alice', org: 'acme', text: 'mine' },
      { owner: 'bob', org: 'acme', text: 'his' },
      { owner: 'alice', org: 'other', text: 'another org' },
    ];
    expect((await admin.post('/v1/collections/notes/rows', rows)).status).to.equal(201);
  });
  after(async () => {
    await workspace.cleanUp();
    await database.drop();
  });

  it('prints a token alone on stdout that the server takes: the user reads their own rows, by sub and a --claim', async () => {
    const minted = await mint('--account', 'acme', '--issuer', 'app', '--sub', 'alice', '--claim', 'org=acme');

    expect(minted.code, minted.stderr).to.equal(0);
    expect(minted.stdout).to.match(/^[\w-]+\.[\w-]+\.[\w-]+\n$/);
    expect(minted.stderr).to.match(
      /^rowbase: database .+\nrowbase: a token of issuer app \(iss https:\/\/app\.example, aud rowbase\) for sub alice, until \S+Z\n$/,
    );
    const alice = new EndUser(server.url, publishable, minted.stdout.trim());
    const page = await alice.get<{ text: string }[]>('/v1/collections/notes/rows');
    expect(page.status).to.equal(200);
    expect(page.body.map((row) => row.text)).to.deep.equal(['mine']);
  });

  it('carries iss, aud, sub, iat and exp as the issuer’s verification asks, HS256, and each --claim as JSON or text', async () => {
    const before = Math.floor(Date.now() / 1000);
    const minted = await mint(
      ...['--account', 'acme', '--issuer', 'app', '--sub', 'bob', '--expires-in', '2m', '--audience', 'other'],
      ...['--claim', 'org=acme', '--claim', 'n=5', '--claim', 'orgs=["a","b"]', '--claim', 'note={not json'],
    );

    expect(minted.code, minted.stderr).to.equal(0);
    const token = minted.stdout.trim();
    expect(decodeProtectedHeader(token)).to.deep.equal({ alg: 'HS256', typ: 'JWT' });
    const { iat, exp, ...claims } = decodeJwt(token);
    expect(claims).to.deep.equal({
      iss: 'https://app.example',
      aud: 'other',
      sub: 'bob',
      org: 'acme',
      n: 5,
      orgs: ['a', 'b'],
      note: '{not json',
    });
    expect(iat).to.be.within(before, before + 60);
    expect((exp as number) - (iat as number)).to.equal(120);
    const bob = new EndUser(server.url, publishable, token);
    expect((await bob.get<{ text: string }[]>('/v1/collections/notes/rows')).body.map((row) => row.text)).to.deep.equal(['his']);
  });

  it('lives an hour unless told', async () => {
    const { iat, exp } = decodeJwt((await mint('--account', 'acme', '--issuer', 'app', '--sub', 'alice')).stdout.trim());
    expect((exp as number) - (iat as number)).to.equal(3600);
  });

  const refusals = [
    {
      mistake: 'an account that does not exist',
      args: ['--account', 'nobody', '--issuer', 'app', '--sub', 'alice'],
      reason: 'there is no account named nobody; make it with rowbase keys create --account nobody',
    },
    {
      mistake: 'an issuer the account does not have',
      args: ['--account', 'acme', '--issuer', 'missing', '--sub', 'alice'],
      reason: 'account acme has no issuer named missing; set one with PUT /v1/auth/issuers/missing',
    },
    {
      mistake: 'an issuer of a key set, whose keys are not ours',
      args: ['--account', 'acme', '--issuer', 'idp', '--sub', 'alice'],
      reason:
        'issuer idp of account acme takes tokens signed with the key set at its jwks_uri, whose private keys rowbase does not hold: its identity provider signs them; tokens mint signs for an issuer set with a secret',
    },
    {
      mistake: 'an audience the issuer does not list',
      args: ['--account', 'acme', '--issuer', 'app', '--sub', 'alice', '--audience', 'elsewhere'],
      reason: `--audience must be one of issuer app's audiences (rowbase, other), not "elsewhere"`,
    },
  ];
  for (const { mistake, args, reason } of refusals) {
    it(`exits 2 with one line on stderr, and prints no token, for ${mistake}`, async () => {
      expectBadArguments(await mint(...args), reason);
    });
  }
});

describe('rowbase tokens mint, its arguments', () => {
  let workspace: Workspace;
  before(async () => {
    workspace = await Workspace.create();
  });
  after(() => workspace.cleanUp());

  const base = ['tokens', 'mint', '--account', 'acme', '--issuer', 'app', '--sub', 'alice'];
  const mistakes = [
    { mistake: 'no --sub', args: ['tokens', 'mint', '--account', 'acme', '--issuer', 'app'], reason: '--sub is required' },
    { mistake: 'no --issuer', args: ['tokens', 'mint', '--account', 'acme', '--sub', 'alice'], reason: '--issuer is required' },
    {
      mistake: 'an issuer name that is none',
      args: ['tokens', 'mint', '--account', 'acme', '--issuer', '1app', '--sub', 'alice'],
      reason: `--issuer must be an issuer's name (openapi.yaml, IssuerName), not "1app"`,
    },
    { mistake: 'a --claim without =', args: [...base, '--claim', 'org'], reason: '--claim must be name=value, not "org"' },
    { mistake: 'a --claim setting sub', args: [...base, '--claim', 'sub=bob'], reason: '--claim may not set sub: give --sub' },
    {
      mistake: 'a --claim setting exp',
      args: [...base, '--claim', 'exp=1'],
      reason: '--claim may not set exp: the issuer and --expires-in set it',
    },
    { mistake: 'a claim given twice', args: [...base, '--claim', 'a=1', '--claim', 'a=2'], reason: '--claim names a twice' },
    {
      mistake: 'an --expires-in without a unit',
      args: [...base, '--expires-in', '30'],
      reason: '--expires-in must be a whole number above 0 and s, m, h or d (30d), not "30"',
    },
  ];
  for (const { mistake, args, reason } of mistakes) {
    it(`exits 2 with one line on stderr for ${mistake}`, async () => {
      expectBadArguments(await workspace.run(args), reason);
    });
  }
});

describe('rowbase --help', () => {
  let workspace: Workspace;
  before(async () => {
    workspace = await Workspace.create();
  });
  after(() => workspace.cleanUp());

  it('names every command, one line each, and where issuers, rules and tokens are', async () => {
    const help = await workspace.run(['--help']);

    expect(help.code).to.equal(0);
    expect(help.stderr).to.equal('');
    const commands = [
      'serve',
      'keys create',
      'keys list',
      'keys revoke',
      'tokens mint',
      'plans list',
      'plans set',
      'export',
      'import',
      'backup',
      'plan',
      'apply',
      'pull',
    ];
    const listed = help.stdout.split('\n\n').find((block) => block.startsWith('Commands:\n')) ?? '';
    const lines = listed.split('\n').slice(1);
    expect(lines.map((line) => /^ {2}(\S+(?: [a-z]+)?) {2,}\S/.exec(line)?.[1])).to.deep.equal(commands);
    for (const text of ['PUT /v1/auth/issuers/{name}', 'PUT /v1/collections/{name}/rules', 'relations', 'tokens mint', 'docs/access.md']) {
      expect(help.stdout).to.include(text);
    }
  });

  it('describes tokens mint with rowbase tokens --help, and each keys command with rowbase keys --help', async () => {
    const tokens = await workspace.run(['tokens', '--help']);
    expect(tokens.code).to.equal(0);
    expect(tokens.stdout).to.match(/^Usage: rowbase tokens mint --account <name> --issuer <name> --sub <subject>/);
    for (const option of ['--account', '--issuer', '--sub', '--claim', '--audience', '--expires-in'])
      expect(tokens.stdout).to.include(option);
    const keys = await workspace.run(['keys', '--help']);
    expect(keys.code).to.equal(0);
    for (const usage of ['Usage: rowbase keys create', 'Usage: rowbase keys list', 'Usage: rowbase keys revoke']) {
      expect(keys.stdout).to.include(usage);
    }
  });
});
