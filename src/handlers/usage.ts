// The handler of the `usage` tag: the account's plan and its usage this period.
import type { Handlers } from './types.ts';

export const usageHandlers: Handlers<'getUsage'> = {
  async getUsage({ principal }, { meter }) {
    const { plan, ...usage } = await meter.usage(principal.accountId);
    const body = { account: principal.account, plan: plan.name, period: plan.period, quota: plan.quota, rate: plan.rate, ...usage };
    return { status: 200, body };
  },
};
