// A patch as a request sends it, its shape checked before anything is read or written (RFC 5789 §2.2:
// a malformed patch document is a 400). Three formats, chosen by the request's Content-Type
// (media-types.ts): today's top-level merge, JSON Merge Patch (RFC 7396) and JSON Patch (RFC 6902) with
// our `increment` operation. Whether a well-formed patch applies to a row is apply.ts's to say (409).
import { type FieldError, validationFailed } from '../errors.ts';
import { EXPANDED } from '../rows.ts';

export type PatchFormat = 'merge' | 'merge-patch' | 'json-patch';

/** An operation of RFC 6902 §4, or ours: `increment` adds `value` (a finite number) to the number at `path`. */
export type PatchOperation =
  | { op: 'add' | 'replace' | 'test'; path: string; value: unknown }
  | { op: 'remove'; path: string }
  | { op: 'move' | 'copy'; path: string; from: string }
  | { op: 'increment'; path: string; value: number };

/** A patch as read from a request, its shape checked. */
export type Patch =
  | { format: 'merge'; fields: Record<string, unknown> }
  | { format: 'merge-patch'; document: Record<string, unknown> }
  | { format: 'json-patch'; operations: PatchOperation[] };

/** Where a patch is in its request: the body itself by default. */
export type PatchPlace = { in: 'body'; name: string };

const wholeBody: PatchPlace = { in: 'body', name: '' };

/** The operations of RFC 6902 §4 and ours, with the members each needs besides `op` and `path`. */
const needs: Record<PatchOperation['op'], 'value' | 'from' | undefined> = {
  add: 'value',
  replace: 'value',
  test: 'value',
  remove: undefined,
  move: 'from',
  copy: 'from',
  increment: 'value',
};

/** A JSON Pointer (RFC 6901 §3): empty, or `/`-separated tokens in which `~` is only `~0` or `~1`. */
const pointer = /^(?:\/(?:[^~/]|~[01])*)*$/;

/**
 * The patch `body` sent in `format`, its shape checked: 400 validation_failed, its errors naming each
 * place that is wrong as a JSON Pointer under `at` (the body, by default). A patch never changes `id`:
 * naming it is a malformed patch too (but `test` of it, and `copy` from it, which only read it).
 */
export function readPatch(format: PatchFormat, body: unknown, at: PatchPlace = wholeBody): Patch {
  if (format === 'json-patch') return readJsonPatch(body, at);
  // A top-level merge is read on every PATCH sent as application/json: no more work than its checks.
  let where = '';
  let message: string | undefined;
  if (!isObject(body)) message = format === 'merge' ? 'must be an object of fields' : 'must be an object (RFC 7396)';
  else if (Object.hasOwn(body, 'id')) [where, message] = ['/id', 'is not allowed: ids never change'];
  else if (Object.hasOwn(body, EXPANDED)) [where, message] = [`/${EXPANDED}`, reservedMessage];
  else if (format === 'merge' && !hasMember(body)) message = 'must NOT have fewer than 1 properties';
  if (message !== undefined) throw malformed([{ in: at.in, name: `${at.name}${where}`, message }]);
  const fields = body as Record<string, unknown>;
  return format === 'merge' ? { format, fields } : { format, document: fields };
}

const malformed = (errors: FieldError[]) => validationFailed('The patch is malformed: nothing was written.', errors);

/** The places wrong in a patch, each named under the patch's own place in the request, and the operation's. */
class Problems {
  readonly errors: FieldError[] = [];
  /** The operation being checked (`/2`), empty for the patch itself. */
  operation = '';

  constructor(private readonly at: PatchPlace) {}

  add(where: string, message: string): void {
    this.errors.push({ in: this.at.in, name: `${this.at.name}${this.operation}${where}`, message });
  }
}

/** A JSON Patch (RFC 6902 §3: an array of operations), each operation's shape checked. */
function readJsonPatch(body: unknown, at: PatchPlace): Patch {
  const problems = new Problems(at);
  if (!Array.isArray(body)) problems.add('', 'must be an array of operations (RFC 6902)');
  const operations = Array.isArray(body) ? body : [];
  for (const [index, operation] of operations.entries()) {
    problems.operation = `/${index}`;
    checkOperation(operation, problems);
  }
  if (problems.errors.length > 0) throw malformed(problems.errors);
  return { format: 'json-patch', operations: operations as PatchOperation[] };
}

/** Adds to `problems` each thing wrong with one operation of a JSON Patch. */
function checkOperation(operation: unknown, problems: Problems): void {
  if (!isObject(operation)) {
    problems.add('', 'must be an object with op and path');
    return;
  }
  const { op, path, from, value } = operation as Record<string, unknown>;
  if (typeof op !== 'string' || !Object.hasOwn(needs, op)) {
    problems.add('/op', `must be one of ${Object.keys(needs).join(', ')}`);
    return;
  }
  const needed = needs[op as PatchOperation['op']];
  if (!Object.hasOwn(operation, 'path')) problems.add('/path', 'is required');
  else if (typeof path !== 'string' || !pointer.test(path)) problems.add('/path', 'must be a JSON Pointer (RFC 6901)');
  if (needed === 'value' && !Object.hasOwn(operation, 'value')) problems.add('/value', 'is required');
  if (op === 'increment' && Object.hasOwn(operation, 'value') && (typeof value !== 'number' || !Number.isFinite(value))) {
    problems.add('/value', 'must be a number');
  }
  if (needed === 'from') {
    if (!Object.hasOwn(operation, 'from')) problems.add('/from', 'is required');
    else if (typeof from !== 'string' || !pointer.test(from)) problems.add('/from', 'must be a JSON Pointer (RFC 6901)');
  }
  if (typeof path !== 'string' || !pointer.test(path)) return;
  // The row's id is the service's: no operation writes, removes or moves it (reads are fine).
  if (op !== 'test' && namesId(path)) problems.add('/path', 'must not name id: ids never change');
  if (op === 'move' && typeof from === 'string' && namesId(from)) problems.add('/from', 'must not name id: ids never change');
  if (op !== 'test' && op !== 'remove' && namesExpanded(path)) problems.add('/path', `must not name ${EXPANDED}: ${reservedMessage}`);
  if (path === '') {
    // The whole row: tested, or replaced by an object of fields (but id); nothing else applies to it.
    if (op === 'add' || op === 'replace') {
      if (!isObject(value)) problems.add('/value', 'must be an object of fields: it replaces the row (but id)');
      else if (Object.hasOwn(value, 'id')) problems.add('/value/id', 'is not allowed: ids never change');
      else if (Object.hasOwn(value, EXPANDED)) problems.add(`/value/${EXPANDED}`, reservedMessage);
    } else if (op !== 'test') {
      problems.add('/path', `must not be empty: ${op} cannot apply to the whole row`);
    }
  }
  // RFC 6902 §4.4: a value cannot move into itself.
  if (op === 'move' && typeof from === 'string' && pointer.test(from) && path.startsWith(`${from}/`)) {
    problems.add('/from', 'must not be a proper prefix of path');
  }
}

/** Whether an object has a member, found without listing them (a PATCH's body is read on every request). */
function hasMember(object: object): boolean {
  for (const _ in object) return true;
  return false;
}

/** Whether `path` is the top-level field EXPANDED or a place inside it. */
const namesExpanded = (path: string) => path === `/${EXPANDED}` || path.startsWith(`/${EXPANDED}/`);

const reservedMessage = `is reserved: an answered row holds the rows expanded into it there (docs/relations.md)`;

/** Whether `path` is `/id` or a place inside it. */
const namesId = (path: string) => path === '/id' || path.startsWith('/id/');

export const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * The top-level fields `patch` may change (for re-keying sort indexes), or undefined when it may change
 * any (an operation on the whole row).
 */
export function patchedFields(patch: Patch): readonly string[] | undefined {
  if (patch.format === 'merge') return Object.keys(patch.fields);
  if (patch.format === 'merge-patch') return Object.keys(patch.document);
  const fields = new Set<string>();
  for (const operation of patch.operations) {
    if (operation.op === 'test') continue;
    if (operation.path === '') return undefined;
    fields.add(topField(operation.path));
    if (operation.op === 'move') fields.add(topField(operation.from));
  }
  return [...fields];
}

/** The top-level field a non-empty pointer is in. */
export const topField = (path: string) => unescapeToken(path.slice(1).split('/')[0]);

/** RFC 6901 §4: `~1` is `/`, then `~0` is `~`. */
export const unescapeToken = (token: string) => token.replaceAll('~1', '/').replaceAll('~0', '~');
