// Rows that expire in the console (docs/expiry.md): the line that says a collection's time to live, and
// on each row of the table when it expires, read from the row's field by the rules the service applies.
import { html } from 'htm/preact';

/** An RFC 3339 date-time with an offset, `T` and `Z` of either case, as the service reads a row's expiry. */
const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

/** When a row whose field holds `value` expires, in ms since the epoch; undefined when it never does. */
function expiryOf(value: unknown): number | undefined {
  if (typeof value !== 'string') return undefined;
  const parts = DATE_TIME.exec(value);
  if (!parts) return undefined;
  // A day not on the calendar (February 30th) is no date-time: such a row never expires.
  const [year, month, day] = [Number(parts[1]), Number(parts[2]), Number(parts[3])];
  if (new Date(Date.UTC(year, month - 1, day)).getUTCDate() !== day) return undefined;
  const at = Date.parse(value.toUpperCase());
  return Number.isNaN(at) ? undefined : at;
}

/** The units a time to come is said in, the largest that fits first. */
const UNITS: [string, number][] = [
  ['years', 365 * 24 * 3600_000],
  ['days', 24 * 3600_000],
  ['h', 3600_000],
  ['min', 60_000],
  ['s', 1000],
];

/** `in 3 min`, `in 2 days`: how long until `at` from `now` (both ms since the epoch), in its largest unit. */
function inWords(at: number, now: number): string {
  const left = at - now;
  const [unit, ms] = UNITS.find(([, size]) => left >= size) ?? UNITS[UNITS.length - 1];
  return `in ${Math.floor(left / ms)} ${unit}`;
}

/**
 * When the row whose time-to-live field holds `value` expires, said beside the field in the table:
 * `expires in 3 min` (the instant on hover), `expired` (the service reads it no more; a live view may
 * still show it until its delete comes), or `never expires` (missing, null, or not a date-time).
 */
export function RowExpiry({ value }: { value: unknown }) {
  const at = expiryOf(value);
  if (at === undefined) return html`<span class="expiry never">never expires</span>`;
  const now = Date.now();
  const said = at <= now ? 'expired' : `expires ${inWords(at, now)}`;
  return html`<span class="expiry"><time datetime=${new Date(at).toISOString()} title=${new Date(at).toISOString()}>${said}</time></span>`;
}

/** The line above the rows of a collection with a time to live: the field its rows expire by. */
export function TtlLine({ field }: { field: string }) {
  return html`<p class="ttl-line">
    Rows expire at the date-time of their field <code>${field}</code> (the collection's time to live): each is gone from
    reads at that instant, and deleted soon after.
  </p>`;
}
