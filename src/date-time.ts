// RFC 3339 date-times (https://www.rfc-editor.org/rfc/rfc3339#section-5.6) as the service takes them:
// a key's expiry, an export's time.

/**
 * The time an RFC 3339 date-time (`2026-12-01T00:00:00Z`, `…T01:00:00.5+01:00`) names, in ms since the
 * epoch, or undefined for text that is none (Date.parse alone takes February 30th for March 2nd), or
 * that names a time from the year 10000 in UTC on: stored as ISO 8601 text, times compare as text only
 * while their years have four digits.
 */
export function instantOf(text: string): number | undefined {
  const parts = /^(\d{4})-(\d\d)-(\d\d)[Tt](\d\d):(\d\d):(\d\d)(\.\d{1,9})?([Zz]|[+-](\d\d):(\d\d))$/.exec(text);
  if (!parts) return undefined;
  const [year, month, day, hour, minute, second] = parts.slice(1, 7).map(Number);
  const local = new Date(Date.UTC(year, month - 1, day, hour, minute, second));
  const valid =
    local.getUTCFullYear() === year &&
    local.getUTCMonth() === month - 1 &&
    local.getUTCDate() === day &&
    local.getUTCHours() === hour &&
    local.getUTCMinutes() === minute &&
    Number(parts[9] ?? 0) < 24 &&
    Number(parts[10] ?? 0) < 60;
  const time = Date.parse(text);
  return valid && time < Date.UTC(10_000, 0) ? time : undefined;
}
