// Conditional requests on rows (RFC 9110 §13): a row's ETag is its version (openapi.yaml, ETag), and
// If-Match and If-None-Match name the versions a client holds. Read here from the request's headers
// (ifMatch, ifNoneMatch) by the handlers; the data layer compares If-Match's versions with the row's in
// the write's own transaction.
import type { IncomingHttpHeaders } from 'node:http';
import { type FieldError, validationFailed } from '../errors.ts';

/** The ETag of a row of `version` (../db/rows/rows.ts, versionOf): a strong entity tag (RFC 9110 §8.8.3). */
export const etagOf = (version: string) => `"${version}"`;

/** An entity-tag list as sent: `*`, or each tag's opaque text and whether it is weak. */
type TagList = '*' | { weak: boolean; opaque: string }[];

/**
 * One element of an entity-tag list (RFC 9110 §8.8.3, §5.6.1): optional white space, an entity-tag
 * (`W/` for a weak one, then its opaque text in double quotes, of etagc: `!`, `#`-`~` and obs-text) or
 * nothing (an empty element, which a recipient may take), optional white space, then a comma or the end.
 */
const element = /[ \t]*(?:(W\/)?"([\x21\x23-\x7e\x80-\xff]*)")?[ \t]*(?:,|$)/y;

/**
 * The tags of an If-Match or If-None-Match value: `*` alone, or a comma-separated list of entity-tags.
 * Node joins the lines of a header sent more than once with `, `, which reads as one list. Undefined
 * when not sent; 400 when the value is neither.
 */
function tagList(headers: IncomingHttpHeaders, name: 'if-match' | 'if-none-match'): TagList | undefined {
  const value = headers[name];
  return value === undefined ? undefined : tagsOf(value, name, { in: 'header', name });
}

/** The tags of `value`, an If-Match or If-None-Match (`header`) sent at `place`; 400 naming it when malformed. */
function tagsOf(value: string, header: string, place: Omit<FieldError, 'message'>): TagList {
  const malformed = () =>
    validationFailed(
      `${header} must be "*" or a comma-separated list of entity-tags, each in double quotes, such as "12.34" (RFC 9110 §13.1).`,
      [{ ...place, message: 'is not "*" or a list of entity-tags' }],
    );
  if (value.trim() === '*') return '*';
  const tags: { weak: boolean; opaque: string }[] = [];
  for (let at = 0; at < value.length; ) {
    element.lastIndex = at;
    const match = element.exec(value);
    if (!match || element.lastIndex === at) throw malformed();
    if (match[2] !== undefined) tags.push({ weak: match[1] !== undefined, opaque: match[2] });
    at = element.lastIndex;
  }
  if (tags.length === 0) throw malformed();
  return tags;
}

/**
 * The versions If-Match allows a write of the row at (RFC 9110 §13.1.1): its strong tags (a weak tag
 * never matches by the strong comparison If-Match uses); undefined for none sent, and for `*`, which
 * any row that exists matches (and for a row that does not, the answer is its 404, as without the
 * condition: §13.2.1).
 */
export function ifMatch(headers: IncomingHttpHeaders): string[] | undefined {
  return strongTags(tagList(headers, 'if-match'));
}

/** ifMatch() of a value sent at `place` in a body (a batch's `if_match`, openapi.yaml BatchUpdate). */
export function ifMatchAt(value: string | undefined, place: Omit<FieldError, 'message'>): string[] | undefined {
  return strongTags(value === undefined ? undefined : tagsOf(value, 'if_match', place));
}

const strongTags = (tags: TagList | undefined) =>
  tags === undefined || tags === '*' ? undefined : tags.filter((tag) => !tag.weak).map((tag) => tag.opaque);

/**
 * If-None-Match (RFC 9110 §13.1.2): a test of whether it holds a tag that matches a row of `version`
 * by the weak comparison it uses (then a GET answers 304); `*` matches any row that exists. Read
 * before the row, so that a malformed value is a 400 whatever the row.
 */
export function ifNoneMatch(headers: IncomingHttpHeaders): (version: string) => boolean {
  const tags = tagList(headers, 'if-none-match');
  if (tags === undefined) return never;
  return (version) => tags === '*' || tags.some((tag) => tag.opaque === version);
}

const never = () => false;
