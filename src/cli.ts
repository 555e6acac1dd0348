// `rowbase <command>`: the service and its administration. Bad arguments exit 2 with one line on stderr;
// failures of the work itself exit 1.
import { parseArgs } from 'node:util';
import bounds from '../generated/bounds.json' with { type: 'json' };
import { originError } from './api-keys/origins.ts';
import { type Scope, scopes } from './api-keys/scopes.ts';
import { type Command, durationMs, print, required, UsageError, withStore } from './cli/command.ts';
import { ConfigError, configFromEnv } from './config.ts';
import { instantOf } from './date-time.ts';
import type { KeyInfo, NewKey } from './db/accounts/keys.ts';
import { KeyError } from './errors.ts';
import { createLogger } from './log.ts';
import { reduceWhileIdle, unoptimized } from './memory.ts';
import { root } from './root.ts';
import { type Period, periods } from './usage/periods.ts';

const environment = `Environment:
  PORT          port to listen on (default 8080)
  HOST          address to listen on (default 127.0.0.1)
  DATABASE_URL  sqlite:<path> or postgres://… (default sqlite:./data/rowbase.sqlite)
  LOG_LEVEL     fatal, error, warn, info, debug, trace or silent (default info)
  LOG_REQUESTS  on: one log line per request (default off)
  METRICS_PORT  serve Prometheus metrics at GET /metrics on this port, at METRICS_HOST (default HOST); default none
  ROWBASE_*     bounds on requests, feed and event retention, sort indexes: see "Configuration" in README.md`;

/**
 * Every command by name, in the order `rowbase --help` lists them: a command written here, or the loading
 * of the module that holds it. Only the command named is loaded (`rowbase --help`: all), so that a command
 * starts without the others' packages (the declarations' diff, the import's validators, JWT signing).
 */
const commands: Record<string, Command | (() => Promise<Command>)> = {
  serve: {
    usage: 'rowbase serve',
    summary: 'Run the service until SIGTERM or SIGINT.',
    options: {},
    async run() {
      const config = configFromEnv();
      const log = createLogger(config.logLevel);
      // Only `serve` loads the server (Koa, the validators, the feed): the other commands start sooner.
      const running = await unoptimized(async () => (await import('./server.ts')).startServer(config, log));
      reduceWhileIdle();
      const stop = async (signal: string) => {
        log.info({ signal }, 'draining requests and closing');
        await running.close();
        process.exit(0);
      };
      // Before the line that says it listens: a signal sent on reading it finds the handler there, not
      // the default action, which ends the process without draining.
      process.once('SIGTERM', () => void stop('SIGTERM'));
      process.once('SIGINT', () => void stop('SIGINT'));
      log.info({ url: running.url }, 'rowbase is listening');
    },
  },
  'keys create': {
    usage:
      'rowbase keys create --account <name> [--plan <plan>] [--scope read|write|admin] [--collections <a,b>] [--expires-in <30d> | --expires-at <time>] [--name <name>] [--publishable --origins <https://a.example,…> [--end-user-rate <n>]] [--json]',
    summary:
      'Make an API key for an account (created on first use; plan free by default), shown once. By default an admin key of every collection that never expires.',
    options: {
      account: { type: 'string', description: 'the account the key acts for' },
      plan: { type: 'string', description: "set the account's plan (see rowbase plans list)" },
      scope: {
        type: 'string',
        description: 'read (GET and the feed), write (read, and rows) or admin (write, collections and keys); default admin',
      },
      collections: { type: 'string', description: 'limit the key to these collections, by name, comma-separated' },
      'expires-in': { type: 'string', description: 'the key stops working after this long: a whole number and s, m, h or d (30d)' },
      'expires-at': { type: 'string', description: 'the key stops working at this RFC 3339 time (2026-12-31T23:59:59Z)' },
      name: { type: 'string', description: 'a name to know the key by in listings' },
      publishable: {
        type: 'boolean',
        description: 'a publishable key (rb_pub_), to ship inside an app, of scope write; refused by every operation until rules exist',
      },
      origins: {
        type: 'string',
        description: 'the web origins a publishable key may be used from, comma-separated, as browsers send Origin (https://app.example)',
      },
      'end-user-rate': { type: 'string', description: "a publishable key's requests per second per end user, 1 to 10000" },
      json: { type: 'boolean', description: 'print one JSON object instead of text' },
    },
    async run(values) {
      const account = required(values, 'account');
      if (!/^[\x21-\x7e]{1,255}$/.test(account))
        throw new UsageError('--account must be 1 to 255 printable ASCII characters without spaces');
      const limits = keyLimits(values);
      const created = await withStore((store) => store.createKey(account, values.plan as string | undefined, limits));
      if (values.json) {
        print(JSON.stringify(created));
        return;
      }
      print(`account ${created.account} (plan ${created.plan}), key prefix ${created.prefix}: ${describeLimits(created)}`);
      print('Keep this key: it is shown only now.');
      print(created.key);
    },
  },
  'keys list': {
    usage: 'rowbase keys list [--account <name>] [--json]',
    summary:
      'List keys by prefix, with their scope, collections, expiry, creation and last use. Collections * is every collection; last use is to the minute; the keys themselves are not stored.',
    options: {
      account: { type: 'string', description: "only this account's keys" },
      json: { type: 'boolean', description: 'print a JSON array' },
    },
    async run(values) {
      const keys = await withStore((store) => store.listKeys(values.account as string | undefined));
      if (values.json) {
        print(JSON.stringify(keys));
        return;
      }
      print(
        table(
          [
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
          ],
          keys.map((k) => [
            k.prefix,
            k.account,
            k.plan,
            k.name ?? '-',
            k.scope,
            k.collections?.join(',') ?? '*',
            k.expires_at ?? 'never',
            k.created_at,
            k.last_used_at ?? '-',
            k.revoked_at ?? '-',
            k.kind,
            k.origins?.join(',') ?? '-',
            k.end_user_rate === null ? '-' : String(k.end_user_rate),
          ]),
        ),
      );
    },
  },
  'keys revoke': {
    usage: 'rowbase keys revoke <key-or-prefix>',
    summary: 'Revoke a key, given whole or by its prefix; it stops working within a second.',
    options: {},
    positionals: 1,
    async run(_values, [keyOrPrefix]) {
      const revoked = await withStore((store) => store.revokeKey(keyOrPrefix));
      print(`revoked ${revoked.prefix} of account ${revoked.account}`);
    },
  },
  'tokens mint': async () => (await import('./cli/tokens.ts')).tokensMintCommand,
  'plans list': {
    usage: 'rowbase plans list [--json]',
    summary: 'List the plans: quota per period and rate per second.',
    options: { json: { type: 'boolean', description: 'print a JSON array' } },
    async run(values) {
      const plans = await withStore((store) => store.listPlans());
      if (values.json) {
        print(JSON.stringify(plans));
        return;
      }
      print(
        table(
          ['PLAN', 'QUOTA', 'PERIOD', 'RATE'],
          plans.map((p) => [p.name, String(p.quota), p.period, p.rate === null ? '-' : `${p.rate}/s`]),
        ),
      );
    },
  },
  'plans set': {
    usage: 'rowbase plans set <name> --quota <n> --period <hour|day|month> [--rate <n> | --no-rate]',
    summary: 'Add a plan or change one; accounts on it follow within a second. Without --rate an existing plan keeps its rate.',
    options: {
      quota: { type: 'string', description: 'requests allowed per period' },
      period: { type: 'string', description: 'hour, day or month (calendar periods in UTC)' },
      rate: { type: 'string', description: 'requests allowed per second' },
      'no-rate': { type: 'boolean', description: 'no limit per second' },
    },
    positionals: 1,
    async run(values, [name]) {
      if (!/^[A-Za-z0-9_-]{1,64}$/.test(name)) throw new UsageError('a plan name is 1 to 64 letters, digits, _ or -');
      const quota = wholeNumber(required(values, 'quota'), '--quota', 0);
      const period = required(values, 'period');
      if (!(periods as readonly string[]).includes(period)) throw new UsageError(`--period must be one of ${periods.join(', ')}`);
      if (values.rate !== undefined && values['no-rate']) throw new UsageError('give --rate or --no-rate, not both');
      const rate = values['no-rate'] ? null : values.rate === undefined ? undefined : wholeNumber(values.rate as string, '--rate', 1);
      const plan = await withStore((store) => store.setPlan({ name, quota, period: period as Period, rate }));
      print(
        `plan ${plan.name}: ${plan.quota} requests per ${plan.period}, ${plan.rate === null ? 'no rate limit' : `${plan.rate} per second`}`,
      );
    },
  },
  export: async () => (await import('./cli/export.ts')).exportCommand,
  import: async () => (await import('./cli/import.ts')).importCommand,
  backup: async () => (await import('./cli/backup.ts')).backupCommand,
  plan: async () => (await import('./cli/declarations.ts')).planCommand,
  apply: async () => (await import('./cli/declarations.ts')).applyCommand,
  pull: async () => (await import('./cli/declarations.ts')).pullCommand,
};

/** The command of this name, its module loaded first if it has one of its own. */
async function commandNamed(name: string): Promise<Command> {
  const command = commands[name];
  return typeof command === 'function' ? command() : command;
}

const collectionName = new RegExp(bounds.CollectionName.pattern);
const { KeyOrigins, EndUserRate } = bounds;

/** What `keys create` is asked to limit the key to, checked as the HTTP API checks a new key's (openapi.yaml, NewKey). */
function keyLimits(values: Record<string, string | boolean | undefined>): NewKey {
  const limits: NewKey = {};
  const { scope, collections, name } = values as Record<string, string | undefined>;
  if (scope !== undefined) {
    if (!(scopes as readonly string[]).includes(scope)) throw new UsageError(`--scope must be one of ${scopes.join(', ')}`);
    limits.scope = scope as Scope;
  }
  if (collections !== undefined) {
    const names = collections.split(',');
    const bad = names.find((each) => !collectionName.test(each));
    if (bad !== undefined)
      throw new UsageError(`--collections names collections, comma-separated; ${JSON.stringify(bad)} is no collection name`);
    if (new Set(names).size < names.length) throw new UsageError('--collections names a collection twice');
    limits.collections = names;
  }
  if (name !== undefined) {
    if (!/^\P{Cc}{1,100}$/u.test(name)) throw new UsageError('--name must be 1 to 100 characters, none of them a control character');
    limits.name = name;
  }
  Object.assign(limits, keyKind(values));
  const expiresIn = values['expires-in'] as string | undefined;
  const expiresAt = values['expires-at'] as string | undefined;
  if (expiresIn !== undefined && expiresAt !== undefined) throw new UsageError('give --expires-in or --expires-at, not both');
  let expiry: number | undefined;
  if (expiresIn !== undefined) expiry = Date.now() + durationMs(expiresIn, '--expires-in');
  if (expiresAt !== undefined) {
    expiry = instantOf(expiresAt);
    if (expiry === undefined) {
      throw new UsageError(
        `--expires-at must be an RFC 3339 time before the year 10000 (2026-12-31T23:59:59Z), not ${JSON.stringify(expiresAt)}`,
      );
    }
    if (expiry <= Date.now()) throw new UsageError(`--expires-at must be in the future; ${expiresAt} is past`);
  }
  if (expiry !== undefined) {
    if (!(expiry < Date.UTC(10_000, 0))) throw new UsageError('the key must expire before the year 10000');
    limits.expires_at = new Date(expiry).toISOString();
  }
  return limits;
}

/**
 * What `keys create --publishable` is asked for, checked as the HTTP API checks a new key's kind
 * (openapi.yaml, NewKey): its origins, each one web origin, its scope write, and an optional rate per end
 * user; none of them without --publishable.
 */
function keyKind(values: Record<string, string | boolean | undefined>): NewKey {
  const origins = values.origins as string | undefined;
  const rate = values['end-user-rate'] as string | undefined;
  if (!values.publishable) {
    if (origins !== undefined) throw new UsageError('--origins is only for a publishable key: add --publishable');
    if (rate !== undefined) throw new UsageError('--end-user-rate is only for a publishable key: add --publishable');
    return {};
  }
  if (values.scope !== undefined && values.scope !== 'write') throw new UsageError("a publishable key's scope is write: leave --scope out");
  if (origins === undefined) throw new UsageError('a publishable key needs --origins, the web origins it may be used from');
  const listed = origins.split(',');
  for (const origin of listed) {
    const wrong = originError(origin);
    if (wrong !== undefined) throw new UsageError(`--origins: ${JSON.stringify(origin)} ${wrong}`);
  }
  if (listed.length > KeyOrigins.maxItems) throw new UsageError(`--origins lists at most ${KeyOrigins.maxItems} origins`);
  if (new Set(listed).size < listed.length) throw new UsageError('--origins names an origin twice');
  const made: NewKey = { kind: 'publishable', scope: 'write', origins: listed };
  if (rate !== undefined) made.end_user_rate = wholeNumber(rate, '--end-user-rate', EndUserRate.minimum, EndUserRate.maximum);
  return made;
}

/** A key's limits in words: `scope read, collections a,b, expires <time>`, and a publishable key's origins. */
function describeLimits({
  scope,
  collections,
  expires_at,
  kind,
  origins,
}: Pick<KeyInfo, 'scope' | 'collections' | 'expires_at' | 'kind' | 'origins'>): string {
  const reach = collections === null ? 'every collection' : `collections ${collections.join(',')}`;
  const limits = `scope ${scope}, ${reach}, ${expires_at === null ? 'never expires' : `expires ${expires_at}`}`;
  return kind === 'publishable' ? `publishable, origins ${origins?.join(',')}, ${limits}` : limits;
}

function wholeNumber(text: string, name: string, min: number, max = Number.MAX_SAFE_INTEGER): number {
  const value = Number(text);
  if (!/^\d+$/.test(text) || !Number.isSafeInteger(value) || value < min || value > max) {
    const bounds = max === Number.MAX_SAFE_INTEGER ? `of at least ${min}` : `from ${min} to ${max}`;
    throw new UsageError(`${name} must be a whole number ${bounds}, not ${JSON.stringify(text)}`);
  }
  return value;
}

/** The package's version, from its package.json. */
async function version(): Promise<string> {
  const { readFile } = await import('node:fs/promises');
  return JSON.parse(await readFile(new URL('package.json', root), 'utf8')).version;
}

function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  return [header, ...rows]
    .map((r) =>
      r
        .map((cell, i) => cell.padEnd(widths[i]))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

/**
 * parseArgs's first line, but for `--quota -1`, which it calls "argument is ambiguous": the value was
 * taken for an option.
 */
function parseArgsReason(message: string): string {
  const first = message.split('\n')[0];
  const option = /^Option '(-[^ ']+)' argument is ambiguous/.exec(first)?.[1];
  return option ? `${option} needs a value; to give one starting with -, write ${option}=<value>` : first;
}

/** A summary's first sentence: the one line `rowbase --help` gives its command. */
const firstSentence = (summary: string) => summary.split(/(?<=\.) /)[0];

/** A command's usage, summary and options. */
async function commandHelp(command: string): Promise<string> {
  const { usage, summary, options } = await commandNamed(command);
  const names = Object.entries(options).map(([name, o]) => `--${name}${o.type === 'string' ? ' <value>' : ''}`);
  const width = Math.max(0, ...names.map((n) => n.length));
  const lines = Object.values(options).map((o, i) => `  ${names[i].padEnd(width)}  ${o.description}`);
  return [`Usage: ${usage}`, '', summary, ...(lines.length ? ['', 'Options:', ...lines] : [])].join('\n');
}

/** `rowbase --help`: every command, one line each; `rowbase <command> --help`, one; `rowbase keys --help`, each keys command. */
async function help(command?: string): Promise<string> {
  if (command !== undefined) {
    const group = Object.keys(commands).filter((name) => name.startsWith(`${command} `));
    return [...(await Promise.all((group.length > 0 ? group : [command]).map(commandHelp))), environment].join('\n\n');
  }
  const width = Math.max(...Object.keys(commands).map((name) => name.length));
  const summaries = await Promise.all(Object.keys(commands).map(async (name) => (await commandNamed(name)).summary));
  const list = Object.keys(commands).map((name, i) => `  ${name.padEnd(width)}  ${firstSentence(summaries[i])}`);
  return [
    'rowbase: collections of JSON rows over HTTP, with a real-time feed.',
    '',
    'Usage: rowbase <command> [options]',
    '',
    'Commands:',
    ...list,
    '',
    "Apps: an app sends its end user's token (a JWT) beside a publishable key (keys create --publishable), and each",
    "collection's rules say what the user may do. The account's token issuers (PUT /v1/auth/issuers/{name}), a",
    "collection's rules (PUT /v1/collections/{name}/rules) and relations (PUT /v1/collections/{name}/relations/{relation})",
    'are set over HTTP with an admin key, not by a command (docs/access.md, docs/relations.md); tokens mint signs a',
    "token with an issuer's secret for development.",
    '',
    'rowbase <command> --help describes a command and its options (rowbase keys --help: each keys command);',
    'rowbase --version prints the version.',
    '',
    environment,
  ].join('\n');
}

export async function main(argv: string[]): Promise<number> {
  // The command's words come first: `rowbase keys list --json`, never `rowbase --json keys list`.
  const leading = argv.findIndex((a) => a.startsWith('-'));
  const words = leading < 0 ? argv : argv.slice(0, leading);
  const name = [`${words[0]} ${words[1]}`, words[0]].find((n) => n in commands);
  if (!name) {
    if (argv.includes('--help') || argv.includes('-h')) {
      // `rowbase keys --help`: the group's commands; anything else, every command.
      const group = words.length === 1 && Object.keys(commands).some((n) => n.startsWith(`${words[0]} `));
      print(await help(group ? words[0] : undefined));
      return 0;
    }
    if (argv.length === 1 && argv[0] === '--version') {
      print(`rowbase ${await version()}`);
      return 0;
    }
    if (words.length === 0 && argv.length > 0) {
      throw new UsageError(`options come after the command, as in rowbase keys list --json; see rowbase --help`);
    }
    if (words.length === 0) throw new UsageError('a command is required; see rowbase --help');
    const subcommands = Object.keys(commands).filter((n) => n.startsWith(`${words[0]} `));
    if (words.length === 1 && subcommands.length > 0) {
      const names = subcommands.map((n) => n.split(' ')[1]);
      throw new UsageError(`${words[0]} needs a subcommand: ${names.join(', ')}; see rowbase --help`);
    }
    throw new UsageError(`unknown command ${JSON.stringify(words.slice(0, 2).join(' '))}; see rowbase --help`);
  }
  const command = await commandNamed(name);
  usageExit = command.usageExit ?? 2;
  const rest = argv.slice(argv.indexOf(name.split(' ').at(-1) as string) + 1);
  if (rest.includes('--help') || rest.includes('-h')) {
    print(await help(name));
    return 0;
  }
  let parsed: ReturnType<typeof parseArgs<{ options: Command['options']; tokens: true; allowPositionals: true }>>;
  try {
    parsed = parseArgs({ args: rest, options: command.options, allowPositionals: true, strict: true, tokens: true });
  } catch (error) {
    throw new UsageError(parseArgsReason((error as Error).message));
  }
  // parseArgs keeps the last of an option given twice: `--account a --account b` would act for b unasked.
  const given = parsed.tokens.flatMap((token) => (token.kind === 'option' ? [token.name] : []));
  const twice = given.find((option, index) => given.indexOf(option) !== index && !command.options[option]?.multiple);
  if (twice) throw new UsageError(`--${twice} is given twice`);
  const { min, max } =
    typeof command.positionals === 'object' ? command.positionals : { min: command.positionals ?? 0, max: command.positionals ?? 0 };
  if (parsed.positionals.length < min || parsed.positionals.length > max) {
    throw new UsageError(`usage: ${command.usage}`);
  }
  return (await command.run(parsed.values as Record<string, string | boolean | undefined>, parsed.positionals)) ?? 0;
}

/** The exit status of bad arguments to the command being run (Command.usageExit). */
let usageExit = 2;

try {
  const code = await main(process.argv.slice(2));
  if (code !== 0) process.exitCode = code;
} catch (error) {
  // Arguments that name nothing (an unknown plan, no such key) are bad arguments too.
  const badArguments = error instanceof UsageError || error instanceof ConfigError || error instanceof KeyError;
  process.stderr.write(`rowbase: ${(error as Error).message}\n`);
  process.exitCode = badArguments ? usageExit : 1;
}
