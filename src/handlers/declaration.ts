// The handlers of the `declaration` tag: an account's declaration read, planned and applied over HTTP
// (docs/declarations.md), by the same pull, plan and apply as `rowbase pull`, `plan` and `apply`. The secrets a
// declaration names come from the request's `secrets`, never from the server's environment.
import type { components } from '../../generated/openapi.ts';
import type { Principal } from '../db/accounts/keys.ts';
import type { Secrets } from '../declarations/checks.ts';
import { declarationYaml, readDeclaration, SCHEMA_URL } from '../declarations/format.ts';
import { applyPlan, makePlan, type Plan, planOptionsOf, pullDeclaration, storedPlan } from '../declarations/plan.ts';
import { ApiError, forbidden, validationFailed } from '../errors.ts';
import type { Handlers } from './types.ts';

type DeclarationBody = components['schemas']['Declaration'];

export const declarationHandlers: Handlers<'getDeclaration' | 'planDeclaration' | 'applyDeclaration'> = {
  async getDeclaration({ principal }, { store }) {
    wholeAccount(principal);
    const declaration = await pullDeclaration(store, principal.accountId);
    return { status: 200, body: { declaration: { $schema: SCHEMA_URL, ...declaration }, yaml: declarationYaml(declaration) } };
  },

  async planDeclaration({ principal, body }, { store, config, documents }) {
    wholeAccount(principal);
    const declaration = await under('/declaration', () => readDeclaration(body.declaration));
    const options = { ...planOptionsOf(config), documents };
    const plan = await under('/declaration', () => makePlan(store, principal.accountId, declaration, secretsOf(body.secrets), options));
    return { status: 200, body: plan };
  },

  async applyDeclaration({ principal, body }, { store, config }) {
    wholeAccount(principal);
    if ((body.plan === undefined) === (body.declaration === undefined))
      throw validationFailed('Apply a plan or a declaration: send one of plan and declaration.', [
        { in: 'body', name: '/plan', message: 'or declaration must be sent, and not both' },
      ]);
    const secrets = secretsOf(body.secrets);
    const options = { ...planOptionsOf(config), allowDestructive: body.allow_destructive === true };
    const sent = body.plan as (Plan & { account?: string }) | undefined;
    if (sent?.account !== undefined && sent.account !== principal.account)
      throw validationFailed(`The plan is of account ${sent.account}, not of this key's.`, [
        { in: 'body', name: '/plan/account', message: "names another account than the key's" },
      ]);
    const changes = await under(sent ? '/plan/declaration' : '/declaration', async () => {
      const plan = sent
        ? await storedPlan(sent)
        : await makePlan(store, principal.accountId, await readDeclaration(body.declaration as DeclarationBody), secrets, options);
      return applyPlan(store, principal.accountId, plan, secrets, options);
    });
    return { status: 200, body: { changes } };
  },
};

/** 403 for a key limited to collections: a declaration reaches the whole account (its issuers, its webhooks). */
function wholeAccount(principal: Principal): void {
  if (principal.collections) throw forbidden("This key is limited to collections: a declaration is the whole account's.");
}

/** The secrets the request sends, by variable; a variable it does not send is unset. */
function secretsOf(sent: Record<string, string> | undefined): Secrets {
  return (env) => (sent !== undefined && Object.hasOwn(sent, env) ? sent[env] : undefined);
}

/**
 * Runs `work`, its refusals of the request (400, 413), which name places in the declaration, naming
 * them in the request's body, under `at`, where the declaration is.
 */
async function under<T>(at: string, work: () => T | Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (!(error instanceof ApiError) || (error.status !== 400 && error.status !== 413)) throw error;
    const errors = error.options.errors?.map((held) =>
      'name' in held && held.in === 'body' ? { ...held, name: `${at}${held.name}` } : held,
    );
    throw new ApiError(error.code, error.detail, { ...error.options, ...(errors ? { errors } : {}) });
  }
}
