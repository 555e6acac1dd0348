// The calendar periods of plans (openapi.yaml, Plan), in UTC.

/** The periods a plan's quota may count requests in. */
export const periods = ['hour', 'day', 'month'] as const;
export type Period = (typeof periods)[number];

/** The calendar period (in UTC) that holds the instant `now`, as [start, end). */
export function periodAt(period: Period, now: number): { start: Date; end: Date } {
  const t = new Date(now);
  const [y, m, d, h] = [t.getUTCFullYear(), t.getUTCMonth(), t.getUTCDate(), t.getUTCHours()];
  switch (period) {
    case 'hour':
      return { start: new Date(Date.UTC(y, m, d, h)), end: new Date(Date.UTC(y, m, d, h + 1)) };
    case 'day':
      return { start: new Date(Date.UTC(y, m, d)), end: new Date(Date.UTC(y, m, d + 1)) };
    case 'month':
      return { start: new Date(Date.UTC(y, m)), end: new Date(Date.UTC(y, m + 1)) };
  }
}
