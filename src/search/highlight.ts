// The highlight of a search in a row (docs/search.md, "Highlights"): each field of the search index
// whose text holds a word the search matches, cut into pieces alternately outside and inside such words,
// the words found where wordsOf() (words.ts) finds them, so that a highlight marks what the search found.
import { setMember } from '../rows.ts';
import { folded, ownWordPattern, type Search, wordsOf } from './words.ts';

/** A part of a text: from `start` to `end`, in UTF-16 code units. */
interface Span {
  start: number;
  end: number;
}

/** What a character is to the words of a text, once folded (words.ts, folded()). */
type Kind = 'mark' | 'separator' | 'own' | 'letter';

const letterPattern = /[\p{L}\p{N}]/u;

function kindOf(character: string): Kind {
  const bare = folded(character);
  if (bare === '') return 'mark';
  if (ownWordPattern.test(bare)) return 'own';
  return letterPattern.test(bare) ? 'letter' : 'separator';
}

/**
 * The spans of `text` that hold its words, in order: runs of letters and digits, and each character of
 * the scripts whose characters are each a word; a mark (an accent) goes with the span before it and
 * separates nothing, as folded() drops it. The words of the spans, one after another, are wordsOf(text).
 */
export function wordSpans(text: string): Span[] {
  const spans: Span[] = [];
  let run: Span | undefined;
  for (let start = 0; start < text.length; ) {
    const character = String.fromCodePoint(text.codePointAt(start) as number);
    const end = start + character.length;
    const kind = kindOf(character);
    if (kind === 'letter') {
      if (run) run.end = end;
      else run = { start, end };
    } else if (kind === 'mark') {
      const last = run ?? spans.at(-1);
      if (last && last.end === start) last.end = end;
    } else {
      if (run) spans.push(run);
      run = undefined;
      if (kind === 'own') spans.push({ start, end });
    }
    start = end;
  }
  if (run) spans.push(run);
  return spans;
}

/** Whether the search matches `word`: one of its words, or one that begins with its prefix. */
const matches = (word: string, search: Search) =>
  search.words.includes(word) || (search.prefix !== undefined && word.startsWith(search.prefix));

/**
 * `text` cut into pieces, alternately outside and inside the words `search` matches, the first outside
 * (empty when a match opens the text): joined, the text. Undefined when it holds no such word.
 */
export function highlightOf(text: string, search: Search): string[] | undefined {
  const pieces: string[] = [];
  let at = 0;
  let open: Span | undefined;
  for (const span of wordSpans(text)) {
    if (!wordsOf(text.slice(span.start, span.end)).some((word) => matches(word, search))) continue;
    // A match right after another (東京) is one piece with it.
    if (open && open.end === span.start) {
      open.end = span.end;
      continue;
    }
    if (open) pieces.push(text.slice(at, open.start), text.slice(open.start, open.end));
    if (open) at = open.end;
    open = { ...span };
  }
  if (!open) return undefined;
  pieces.push(text.slice(at, open.start), text.slice(open.start, open.end), text.slice(open.end));
  return pieces;
}

/** A row's highlights: for each of `fields` that holds a string with a word `search` matches, that string's pieces (highlightOf()). */
export function rowHighlight(row: Record<string, unknown>, fields: readonly string[], search: Search): Record<string, string[]> {
  const highlight: Record<string, string[]> = {};
  for (const field of fields) {
    const value = Object.hasOwn(row, field) ? row[field] : undefined;
    const pieces = typeof value === 'string' ? highlightOf(value, search) : undefined;
    if (pieces) setMember(highlight, field, pieces);
  }
  return highlight;
}
