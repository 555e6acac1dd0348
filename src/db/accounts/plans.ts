// Plans in the database: their limits, and which account is on which.
import type { Period } from '../../usage/periods.ts';
import type { Dialect } from '../engine/dialect.ts';
import { accountPlanSql, listPlansSql, setPlanSql } from '../engine/sql/accounts.ts';

export interface Plan {
  name: string;
  /** Requests allowed per period. */
  quota: number;
  period: Period;
  /** Requests allowed per second, or null for no limit. */
  rate: number | null;
}

type PlanRow = { name: string; quota: number | string; period: Period; rate: number | string | null };
const toPlan = (row: PlanRow): Plan => ({
  name: row.name,
  quota: Number(row.quota),
  period: row.period,
  rate: row.rate === null ? null : Number(row.rate),
});

export async function listPlans({ query, codePointOrder }: Dialect): Promise<Plan[]> {
  return (await query<PlanRow>(listPlansSql(codePointOrder), [])).map(toPlan);
}

/** Adds the plan or changes it; `rate` undefined keeps an existing plan's rate (none for a new plan). */
export async function setPlan({ query }: Dialect, plan: Omit<Plan, 'rate'> & { rate?: number | null }): Promise<Plan> {
  const [stored] = await query<PlanRow>(setPlanSql(plan.rate !== undefined), [plan.name, plan.quota, plan.period, plan.rate ?? null]);
  return toPlan(stored);
}

/** The plan of an account, as it is in the database now. */
export async function accountPlan({ readCommitted }: Dialect, accountId: number): Promise<Plan> {
  const [row] = await readCommitted<PlanRow>(accountPlanSql, [accountId]);
  return toPlan(row);
}
