// How deep a declaration's text nests, read before the yaml package composes it: its composer recurses once
// a level, so a text of a few hundred kilobytes nested a thousand deep (`[[[[…`, `- - - …`, or
// indentation) would exhaust the stack after seconds of work, or memory. The text's tokens, read by the
// yaml package's lexer (which keeps no stack), bound both kinds of nesting YAML has, so that such a text is
// a 400 at once (docs/declarations.md, "Refusals").
import { CST, Lexer } from 'yaml';

/** The most flow collections (`[`, `{`) open at once; JSON bodies are held to as many (ROWBASE_MAX_JSON_DEPTH's default). */
const MAX_FLOW_DEPTH = 64;

/**
 * The most columns a line's content may start at, its indentation and the indicators before it (`- `,
 * `? `, `: `) counted: each level of block nesting takes a column at least, so this bounds their depth.
 */
const MAX_INDENT = 256;

/** The tokens that may stand before a line's content, at the start of a line. */
const leading = new Set(['space', 'seq-item-ind', 'explicit-key-ind', 'map-value-ind']);

/** Where the text first nests too deep (an offset into it) and how, or undefined when it does not. */
export function nestingProblem(text: string): { offset: number; problem: string } | undefined {
  let depth = 0;
  let offset = 0;
  let column = 0;
  let lineStart = true;
  for (const token of new Lexer().lex(text)) {
    const type = CST.tokenType(token);
    // Control tokens (a document's start, a scalar's) stand for no text.
    if (type === 'doc-mode' || type === 'scalar' || type === 'flow-error-end') continue;
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
  }
  return undefined;
}
