// `rowbase plan`, `rowbase apply` and `rowbase pull`: an account's declaration (docs/declarations.md) planned,
// applied and read back, against the database of DATABASE_URL, or plan and apply through a running server
// (--url, declaration-server.ts). `plan` exits 0 when nothing would change,
// 2 when something would, 1 on an error; its --json is the plan as POST /v1/declaration/plan answers it.
import { readFile, writeFile } from 'node:fs/promises';
import { configFromEnv } from '../config.ts';
import type { Store } from '../db/open-store.ts';
import type { Change } from '../declarations/changes.ts';
import type { ContractDiff } from '../declarations/contract.ts';
import { type Declaration, declarationYaml, parseDeclaration, SCHEMA_URL } from '../declarations/format.ts';
import { applyPlan, makePlan, type Plan, type PlanOptions, planOptionsOf, pullDeclaration, storedPlan } from '../declarations/plan.ts';
import { ApiError } from '../errors.ts';
import { root } from '../root.ts';
import { accountId } from './collection-file.ts';
import { type Command, print, required, UsageError, type Values, withStore } from './command.ts';
import { applyThrough, planThrough, serverOf, serverOptions } from './declaration-server.ts';

/** `plan`'s exit status when something would change, and with --fail-on-breaking when the contract would break. */
const CHANGES_EXIT = 2;
const BREAKING_EXIT = 3;

/** Breaking changes of the contract a plan's text lists at most. */
const LISTED_BREAKING = 20;

const secrets = (env: string) => process.env[env];

const planOptions = (): PlanOptions => planOptionsOf(configFromEnv());

/** The documents the account's are made of (openapi.yaml, asyncapi.yaml), for the plan's contract diff. */
async function documents() {
  const [openapi, asyncapi] = await Promise.all(['openapi.yaml', 'asyncapi.yaml'].map((name) => readFile(new URL(name, root), 'utf8')));
  return { openapi, asyncapi };
}

/** The declaration in the file `file`, its text and what it declares, read as the API reads one; its problem in one line, each place named. */
async function readDeclaration(file: string): Promise<{ text: string; declaration: Declaration }> {
  const text = await readFile(file, 'utf8').catch((error: NodeJS.ErrnoException) => {
    throw new UsageError(`cannot read ${file}: ${error.code ?? error.message}`);
  });
  try {
    return { text, declaration: parseDeclaration(text) };
  } catch (error) {
    throw explained(error);
  }
}

/** An ApiError as the one line a command prints: its detail, then each place it names. */
function explained(error: unknown): unknown {
  if (!(error instanceof ApiError)) return error;
  const places = (error.options.errors ?? [])
    .map((place) => ('name' in place ? `${place.name || '/'} ${place.message}` : ''))
    .filter(Boolean);
  return new Error([error.detail, ...places.map((place) => `  ${place}`)].join('\n'));
}

async function onAccount<T>(values: Values, work: (store: Store, id: number) => Promise<T>): Promise<T> {
  const account = required(values, 'account');
  try {
    return await withStore(async (store) => work(store, await accountId(store, account)));
  } catch (error) {
    throw explained(error);
  }
}

const sign = { create: '+', update: '~', delete: '-' } as const;
const brief = (value: unknown) => {
  const text = JSON.stringify(value);
  return text.length > 160 ? `${text.slice(0, 157)}...` : text;
};

/** A plan's changes as lines of text, in the order they would be made. */
function planText(changes: readonly Change[]): string {
  if (changes.length === 0) return 'No changes: the account is as declared.';
  const lines = [`${changes.length} change${changes.length === 1 ? '' : 's'}, in the order they would be made:`];
  for (const change of changes) {
    lines.push(
      `  ${sign[change.action]} ${change.action} ${change.kind} ${change.object}${change.destroys_data ? '  (destroys data)' : ''}`,
    );
    if (change.action === 'update') lines.push(`      before: ${brief(change.before)}`, `      after:  ${brief(change.after)}`);
  }
  return lines.join('\n');
}

/** What a plan does to the account's documents, as lines of text: how many changes, and the breaking ones. */
function contractText(contract: ContractDiff): string {
  const lines = [contract.breaking ? 'The contract would break its clients:' : 'The contract:'];
  for (const [kind, viewers] of Object.entries(contract.documents)) {
    for (const [viewer, changes] of Object.entries(viewers)) {
      const breaking = changes.filter((change) => change.type === 'breaking');
      lines.push(
        `  ${kind}, as a ${viewer} key sees it: ${changes.length} change${changes.length === 1 ? '' : 's'}, ${breaking.length} breaking`,
      );
      for (const change of breaking.slice(0, LISTED_BREAKING))
        lines.push(`    ! ${change.action} ${change.path}${change.description ? `: ${change.description}` : ''}`);
    }
  }
  return lines.join('\n');
}

const accountOption = { account: { type: 'string', description: 'the account the declaration is of' } } as const;

export const planCommand: Command = {
  usage:
    'rowbase plan -f <rowbase.yaml> (--account <name> | --url <server> --key <admin key>) [--json] [-o <plan.json>] [--fail-on-breaking]',
  summary:
    "Say what applying the declaration would change in the account, in the order it would, and what that does to the account's OpenAPI and AsyncAPI documents (docs/declarations.md). Exits 0 when nothing would change, 2 when something would, 3 with --fail-on-breaking when a change to the documents is breaking, 1 on an error.",
  options: {
    file: { type: 'string', short: 'f', description: 'the declaration, YAML or JSON' },
    ...accountOption,
    ...serverOptions,
    json: { type: 'boolean', description: 'print the plan as JSON' },
    out: { type: 'string', short: 'o', description: 'also write the plan to this file, for rowbase apply' },
    'fail-on-breaking': {
      type: 'boolean',
      description: "exit 3 when the plan changes the account's documents in a way that breaks their clients",
    },
  },
  usageExit: 1,
  async run(values) {
    const { text, declaration } = await readDeclaration(required(values, 'file'));
    const server = serverOf(values);
    const plan: Plan = server
      ? await planThrough(server, text, declaration)
      : await onAccount(values, async (store, id) =>
          makePlan(store, id, declaration, secrets, { ...planOptions(), documents: await documents() }),
        );
    // A plan made through a server is of the key's account, which it applies to there.
    const account = server ? undefined : (values.account as string);
    if (typeof values.out === 'string') await writeFile(values.out, `${JSON.stringify({ ...plan, account }, null, 2)}\n`);
    print(values.json ? JSON.stringify(plan) : planText(plan.changes));
    if (!values.json && plan.contract && plan.changes.length > 0) print(contractText(plan.contract));
    if (values['fail-on-breaking'] && plan.contract?.breaking) return BREAKING_EXIT;
    return plan.changes.length > 0 ? CHANGES_EXIT : 0;
  },
};

export const applyCommand: Command = {
  usage: 'rowbase apply (<plan.json> | -f <rowbase.yaml>) (--account <name> | --url <server> --key <admin key>) [--allow-destructive]',
  summary:
    'Make the account as declared, all or nothing, in one transaction: a plan written by rowbase plan -o (refused when the account has changed since), or a declaration planned and applied at once.',
  options: {
    file: { type: 'string', short: 'f', description: 'the declaration, YAML or JSON, planned and applied at once' },
    ...accountOption,
    ...serverOptions,
    'allow-destructive': {
      type: 'boolean',
      description: 'apply a plan that deletes collections (their rows) or webhooks (their delivery logs)',
    },
  },
  positionals: { min: 0, max: 1 },
  usageExit: 1,
  async run(values, [planFile]) {
    if ((planFile === undefined) === (values.file === undefined)) throw new UsageError(`usage: ${this.usage}`);
    const stored = planFile === undefined ? undefined : await readPlan(planFile);
    const file = values.file === undefined ? undefined : await readDeclaration(values.file as string);
    const allowDestructive = values['allow-destructive'] === true;
    const server = serverOf(values);
    const applied = server
      ? await applyThrough(
          server,
          stored ? { plan: stored } : { text: file?.text as string },
          (stored?.declaration ?? file?.declaration) as Declaration,
          allowDestructive,
        )
      : await onAccount({ ...values, account: (values.account as string | undefined) ?? stored?.account }, async (store, id) => {
          const options = { ...planOptions(), allowDestructive };
          const plan = stored ?? (await makePlan(store, id, file?.declaration as Declaration, secrets, options));
          return applyPlan(store, id, plan, secrets, options);
        });
    print(
      applied.length === 0
        ? 'No changes: the account is as declared.'
        : `Applied ${applied.length} change${applied.length === 1 ? '' : 's'}.`,
    );
  },
};

async function readPlan(file: string): Promise<Plan & { account?: string }> {
  const text = await readFile(file, 'utf8').catch((error: NodeJS.ErrnoException) => {
    throw new UsageError(`cannot read ${file}: ${error.code ?? error.message}`);
  });
  let plan: Plan & { account?: string };
  try {
    plan = JSON.parse(text);
  } catch {
    throw new UsageError(`${file} is no plan: it is not JSON`);
  }
  if (plan?.format !== 'rowbase-plan' || plan.version !== 1)
    throw new UsageError(`${file} is no plan of rowbase plan -o (format rowbase-plan, version 1)`);
  return storedPlan(plan);
}

export const pullCommand: Command = {
  usage: 'rowbase pull --account <name> [-o <rowbase.yaml>] [--json]',
  summary:
    "Write the account's collections, token issuers and webhooks as a declaration, which rowbase plan then shows as no change. Secrets are written as the variables that hold them.",
  options: {
    ...accountOption,
    out: { type: 'string', short: 'o', description: 'the file to write; stdout without it' },
    json: { type: 'boolean', description: 'write JSON instead of YAML' },
  },
  usageExit: 1,
  async run(values) {
    const declaration = await onAccount(values, (store, id) => pullDeclaration(store, id));
    const text = values.json ? `${JSON.stringify({ $schema: SCHEMA_URL, ...declaration }, null, 2)}\n` : declarationYaml(declaration);
    if (typeof values.out === 'string') await writeFile(values.out, text);
    else process.stdout.write(text);
  },
};
