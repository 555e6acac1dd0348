// A schema's `$ref`s: each names one of the schema's own subschemas, and none leads back to itself.
import { escapePointer } from './issues.ts';
import type { SchemaParts, SchemaProblem } from './keywords.ts';

/**
 * The problems of the schema's `$ref`s. A reference must be a same-document reference (RFC 3986 §4.4):
 * `#`, a JSON Pointer as a URI fragment (`#/$defs/name`, RFC 6901 §6) or an anchor (`#name`, from a
 * `$anchor`), and name a subschema of the schema. Anything else is refused, so nothing is ever fetched
 * (nor looked up: no Ajv is ever given a way to load a schema). A chain of `$ref`s that leads back to
 * where it started would have Ajv apply it to the same value forever: refused too, at each `$ref` in it.
 */
export function refProblems(parts: SchemaParts): SchemaProblem[] {
  const problems: SchemaProblem[] = [];
  /** The place each `$ref` names, by the place of its subschema. */
  const named = new Map<string, string>();
  for (const [at, ref] of parts.refs) {
    const place = resolve(ref, parts);
    if (place.problem !== undefined) problems.push({ at: `${at}/$ref`, message: place.problem });
    else named.set(at, place.at);
  }
  for (const start of named.keys()) {
    const seen = new Set<string>();
    for (let at = named.get(start); at !== undefined && !seen.has(at); at = named.get(at)) {
      if (at === start) {
        problems.push({ at: `${start}/$ref`, message: 'leads back to itself through references alone' });
        break;
      }
      seen.add(at);
    }
  }
  return problems;
}

/** The place of the subschema `ref` names, or why it names none. */
function resolve(ref: string, parts: SchemaParts): { at: string; problem?: undefined } | { problem: string } {
  if (!ref.startsWith('#')) return { problem: 'refers outside the schema: only #, #/… and #anchor references are allowed' };
  const fragment = ref.slice(1);
  let at: string | undefined;
  try {
    // Token by token, then each percent-decoded (RFC 6901 §6), as Ajv resolves it: `%2F` is a `/` in a name.
    if (fragment === '' || fragment.startsWith('/')) at = fragment.split('/').map(decodeToken).join('/');
    else at = parts.anchors.get(decodeURIComponent(fragment));
  } catch {
    return { problem: 'is not a valid URI fragment' };
  }
  if (at === undefined || !parts.subschemas.has(at)) return { problem: 'names no subschema of this schema' };
  return { at };
}

/** A reference token of a pointer in a URI fragment as walkSchema writes it: percent-decoded, then escaped. */
const decodeToken = (token: string) => escapePointer(unescapePointer(decodeURIComponent(token)));

/** RFC 6901 §4: `~1` is `/`, then `~0` is `~`. */
const unescapePointer = (token: string) => token.replaceAll('~1', '/').replaceAll('~0', '~');
