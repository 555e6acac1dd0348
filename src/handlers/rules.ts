// The handlers of the `rules` tag: a collection's rules for end users, read, set, removed and checked.
import { rulesNotFound, validationFailed } from '../errors.ts';
import { answerOnce } from '../idempotency/answers.ts';
import type { JsonValue } from '../query/filter.ts';
import { checkAccess } from '../rules/check.ts';
import type { Claims } from '../rules/compile.ts';
import { checkRules, type Rules } from '../rules/rules.ts';
import type { Handlers, Result } from './types.ts';

export const ruleHandlers: Handlers<'getCollectionRules' | 'putCollectionRules' | 'deleteCollectionRules' | 'checkCollectionRules'> = {
  async getCollectionRules({ principal, path }, { store }) {
    const stored = await store.getRules(principal.accountId, path.collection_name);
    if (!stored) throw rulesNotFound(path.collection_name);
    return answerRules(stored.rules);
  },

  async putCollectionRules({ principal, path, body, once }, { store }) {
    const rules = checkRules(body);
    return answerRules(await store.putRules(principal.accountId, path.collection_name, rules, once && answerOnce(once, answerRules)));
  },

  async deleteCollectionRules({ principal, path, once }, { store }) {
    await store.deleteRules(principal.accountId, path.collection_name, once && answerOnce(once, answerDeleted));
    return answerDeleted();
  },

  async checkCollectionRules({ principal, path, body }, { store }) {
    const { operation, row } = body;
    if (operation === 'update' && body.change === undefined)
      throw validationFailed('An update is checked with its change.', [changeError('is required for an update')]);
    if (operation !== 'update' && body.change !== undefined)
      throw validationFailed('Only an update has a change.', [changeError('is only for an update')]);
    // A collection without rules is checked against none, which deny everything.
    const answer = checkAccess(await store.findRules(principal.accountId, path.collection_name), {
      operation,
      claims: body.claims as Claims,
      row: row as { [field: string]: JsonValue },
      change: body.change as { [field: string]: JsonValue } | undefined,
    });
    return { status: 200, body: answer };
  },
};

const changeError = (message: string) => ({ in: 'body' as const, name: '/change', message });

function answerRules(rules: Rules): Result {
  return { status: 200, body: rules };
}

function answerDeleted(): Result {
  return { status: 204 };
}
