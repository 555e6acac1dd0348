import type { Dialect } from './dialect.ts';

export const periods = ['hour', 'day', 'month'] as const;
export type Period = (typeof periods)[number];

export interface Plan {
  name: string;
  /** Requests allowed per period. */
  quota: number;
  period: Period;
  /** Requests allowed per second, or null for no limit. */
  rate: number | null;
}

const toPlan = (row: { name: string; quota: number | string; period: Period; rate: number | string | null }): Plan => ({
  name: row.name,
  quota: Number(row.quota),
  period: row.period,
  rate: row.rate === null ? null : Number(row.rate),
});

export async function listPlans({ knex, byCodePoint }: Dialect): Promise<Plan[]> {
  return (await knex('plans').orderBy(byCodePoint('name')).select('name', 'quota', 'period', 'rate')).map(toPlan);
}

/** Adds the plan or changes it; `rate` undefined keeps an existing plan's rate (none for a new plan). */
export async function setPlan({ knex }: Dialect, plan: Omit<Plan, 'rate'> & { rate?: number | null }): Promise<Plan> {
  const row = { name: plan.name, quota: plan.quota, period: plan.period, rate: plan.rate ?? null };
  const changed = plan.rate === undefined ? ['quota', 'period'] : ['quota', 'period', 'rate'];
  const [stored] = await knex('plans').insert(row).onConflict('name').merge(changed).returning(['name', 'quota', 'period', 'rate']);
  return toPlan(stored);
}

/** The plan of an account, as it is in the database now. */
export async function accountPlan({ knex }: Dialect, accountId: number): Promise<Plan> {
  const row = await knex('accounts')
    .join('plans', 'plans.name', 'accounts.plan')
    .where('accounts.id', accountId)
    .first('plans.name', 'plans.quota', 'plans.period', 'plans.rate');
  return toPlan(row);
}
