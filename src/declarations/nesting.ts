// A declaration's text as the yaml package's parser reads it (its CST), its nesting bounded on the way: the
// package's composer recurses once a level, so a text of a few hundred kilobytes nested a thousand deep
// (`[[[[…`, `- - - …`, or indentation) would exhaust the stack after seconds of work, or memory. The text's
// tokens, read once by the package's lexer (which keeps no stack), are each held to both kinds of nesting
// YAML has before the parser is given them, so that such a text is a 400 at once (docs/declarations.md,
// "Refusals"), and the text is lexed once for both.
import { CST, Lexer, Parser } from 'yaml';
import { pointerToken } from '../query/filter.ts';

/** The most flow collections (`[`, `{`) open at once; JSON bodies are held to as many (ROWBASE_MAX_JSON_DEPTH's default). */
const MAX_FLOW_DEPTH = 64;

/**
 * The most columns a line's content may start at, its indentation and the indicators before it (`- `,
 * `? `, `: `) counted: each level of block nesting takes a column at least, so this bounds their depth.
 */
const MAX_INDENT = 256;

/** The tokens that may stand before a line's content, at the start of a line. */
const leading = new Set(['space', 'seq-item-ind', 'explicit-key-ind', 'map-value-ind']);

/** Where a text first nests too deep (an offset into it), and how. */
export interface NestingProblem {
  offset: number;
  problem: string;
}

/**
 * The CST of `text`, as the yaml package's `Parser` makes it of the lexer's tokens (its `parse()`, which
 * the package's `parseDocument()` composes), or where the text first nests too deep and how: no token
 * past the bounds reaches the parser.
 */
export function boundedCst(text: string): { cst: CST.Token[] } | NestingProblem {
  const parser = new Parser();
  const cst: CST.Token[] = [];
  const bound = nestingBound();
  for (const token of new Lexer().lex(text)) {
    const problem = bound(token);
    if (problem) return problem;
    for (const made of parser.next(token)) cst.push(made);
  }
  for (const made of parser.end()) cst.push(made);
  return { cst };
}

/**
 * Where the JSON value `value` (a declaration sent as an object) first nests more than MAX_FLOW_DEPTH
 * objects and arrays deep, as its text would be refused (boundedCst), and how; undefined when it does not.
 * Its place is a JSON Pointer into it.
 */
export function objectTooDeep(value: unknown): { pointer: string; problem: string } | undefined {
  const deepest = (held: unknown, depth: number, pointer: string): string | undefined => {
    if (held === null || typeof held !== 'object') return undefined;
    if (depth > MAX_FLOW_DEPTH) return pointer;
    for (const [key, item] of Object.entries(held)) {
      const found = deepest(item, depth + 1, `${pointer}/${pointerToken(key)}`);
      if (found !== undefined) return found;
    }
    return undefined;
  };
  const pointer = deepest(value, 1, '');
  return pointer === undefined ? undefined : { pointer, problem: `nests more than ${MAX_FLOW_DEPTH} objects and arrays deep` };
}

/** A function given the text's tokens in order, which answers the problem of the first that nests too deep. */
function nestingBound(): (token: string) => NestingProblem | undefined {
  let depth = 0;
  let offset = 0;
  let column = 0;
  let lineStart = true;
  return (token) => {
    const type = CST.tokenType(token);
    // Control tokens (a document's start, a scalar's) stand for no text.
    if (type === 'doc-mode' || type === 'scalar' || type === 'flow-error-end') return undefined;
    if (type === 'newline') lineStart = true;
    else if (lineStart) {
      if (column > MAX_INDENT) return { offset, problem: `starts past column ${MAX_INDENT}, nested or indented too deep` };
      lineStart = leading.has(type as string);
    }
    if (type === 'flow-map-start' || type === 'flow-seq-start') {
      depth += 1;
      if (depth > MAX_FLOW_DEPTH) return { offset, problem: `nests more than ${MAX_FLOW_DEPTH} flow collections ([ or {) deep` };
    } else if ((type === 'flow-map-end' || type === 'flow-seq-end') && depth > 0) depth -= 1;
    offset += token.length;
    const newline = token.lastIndexOf('\n');
    column = newline < 0 ? column + token.length : token.length - newline - 1;
    return undefined;
  };
}
