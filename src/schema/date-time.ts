// The `date-time` format of a row schema (JSON Schema Validation 2020-12 §7.3.1: RFC 3339 §5.6's
// date-time), checked character by character: the same answers as ajv-formats' full mode, which splits
// the text on a regular expression and runs two more with captures, a dozen short-lived objects a check
// on every typed insert (docs/performance.md, "What a typed insert's validation throws away").

/** Days of each month in a common year, by its number. */
const DAYS = [0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
/** White space as a JavaScript regular expression's `\s` reads it: ajv-formats takes any between the date and the time. */
const SPACE = /^\s$/;

/** The digit at `at`, or -1. */
function digit(text: string, at: number): number {
  const code = text.charCodeAt(at) - 48;
  return code >= 0 && code <= 9 ? code : -1;
}

/** The two digits at `at` as a number, or -1. */
function twoDigits(text: string, at: number): number {
  const tens = digit(text, at);
  const units = digit(text, at + 1);
  return tens < 0 || units < 0 ? -1 : tens * 10 + units;
}

/** Whether `year-month-day` is a day of the Gregorian calendar (RFC 3339 §5.7, Appendix C). */
function isDay(year: number, month: number, day: number): boolean {
  if (month < 1 || month > 12 || day < 1) return false;
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  return day <= (month === 2 && leap ? 29 : DAYS[month]);
}

/**
 * Whether `text` is `YYYY-MM-DD`, `T` (either case, or white space), `hh:mm:ss`, an optional fraction,
 * and `Z` (either case) or an offset `±hh`, `±hhmm` or `±hh:mm`; a leap second (`:60`) only where it
 * falls on 23:59 UTC, as ajv-formats has it.
 */
export function isDateTime(text: string): boolean {
  if (text.length < 20) return false;
  const century = twoDigits(text, 0);
  const yearOf = twoDigits(text, 2);
  if (century < 0 || yearOf < 0 || text.charCodeAt(4) !== 45 || text.charCodeAt(7) !== 45) return false;
  if (!isDay(century * 100 + yearOf, twoDigits(text, 5), twoDigits(text, 8))) return false;
  const separator = text.charCodeAt(10);
  if (separator !== 84 && separator !== 116 && !SPACE.test(text[10])) return false;
  const hour = twoDigits(text, 11);
  const minute = twoDigits(text, 14);
  let second = twoDigits(text, 17);
  if (hour < 0 || minute < 0 || second < 0 || text.charCodeAt(13) !== 58 || text.charCodeAt(16) !== 58) return false;
  let at = 19;
  if (text.charCodeAt(at) === 46) {
    const digits = ++at;
    while (digit(text, at) >= 0) at++;
    if (at === digits) return false;
    // Any fraction puts the second strictly between its whole number and the next.
    second += 0.5;
  }
  let sign = 1;
  let offsetHours = 0;
  let offsetMinutes = 0;
  const zone = text.charCodeAt(at);
  if (zone === 90 || zone === 122) {
    if (at + 1 !== text.length) return false;
  } else if (zone === 43 || zone === 45) {
    sign = zone === 45 ? -1 : 1;
    offsetHours = twoDigits(text, at + 1);
    if (offsetHours < 0) return false;
    at += 3;
    if (at !== text.length) {
      if (text.charCodeAt(at) === 58) at++;
      offsetMinutes = twoDigits(text, at);
      if (offsetMinutes < 0 || at + 2 !== text.length) return false;
    }
  } else return false;
  if (offsetHours > 23 || offsetMinutes > 59) return false;
  if (hour <= 23 && minute <= 59 && second < 60) return true;
  // A leap second: 23:59:60 UTC, the offset taken off.
  const utcMinute = minute - offsetMinutes * sign;
  const utcHour = hour - offsetHours * sign - (utcMinute < 0 ? 1 : 0);
  return (utcHour === 23 || utcHour === -1) && (utcMinute === 59 || utcMinute === -1) && second < 61;
}
