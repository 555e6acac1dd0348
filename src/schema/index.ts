// A collection's schema of its rows' fields (docs/schemas.md): checked once when a client sets it,
// compiled once for each version, then run on every row written.
export { checkRowSchema, maxSchemaBytes, maxSchemaDepth } from './check.ts';
export { compileRowSchema, maxRowIssues, type RowIssue, type RowValidator } from './compile.ts';
