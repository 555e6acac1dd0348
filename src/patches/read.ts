// A patch as a request sends it, its shape checked before anything is read or written (RFC 5789 §2.2:
// a malformed patch document is a 400). Three formats, chosen by the request's Content-Type
// (media-types.ts): today's top-level merge, JSON Merge Patch (RFC 7396) and JSON Patch (RFC 6902) with
// our `increment` operation. Whether a well-formed patch applies to a row is apply.ts's to say (409).
import { type FieldError, validationFailed } from '../errors.ts';

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
  const errors: FieldError[] = [];
  const wrong = (where: string, message: string) => errors.push({ in: at.in, name: `${at.name}${where}`, message });
  let patch: Patch;
  if (format === 'json-patch') {
    if (!Array.isArray(body)) wrong('', 'must be an array of operations (RFC 6902)');
    const operations = Array.isArray(body) ? body : [];
    for (const [index, operation] of operations.entries())
      checkOperation(operation, (where, message) => wrong(`/${index}${where}`, message));
    patch = { format, operations: operations as PatchOperation[] };
  } else {
    if (!isObject(body)) wrong('', format === 'merge' ? 'must be an object of fields' : 'must be an object (RFC 7396)');
    else if (Object.hasOwn(body, 'id')) wrong('/id', 'is not allowed: ids never change');
    else if (format === 'merge' && !hasMember(body)) wrong('', 'must NOT have fewer than 1 properties');
    patch =
      format === 'merge' ? { format, fields: body as Record<string, unknown> } : { format, document: body as Record<string, unknown> };
  }
  if (errors.length > 0) throw validationFailed('The patch is malformed: nothing was written.', errors);
  return patch;
}

/** Tells `wrong` each thing wrong with one operation of a JSON Patch. */
function checkOperation(operation: unknown, wrong: (where: string, message: string) => void): void {
  if (!isObject(operation)) {
    wrong('', 'must be an object with op and path');
    return;
  }
  const { op, path, from, value } = operation as Record<string, unknown>;
  if (typeof op !== 'string' || !Object.hasOwn(needs, op)) {
    wrong('/op', `must be one of ${Object.keys(needs).join(', ')}`);
    return;
  }
  const needed = needs[op as PatchOperation['op']];
  if (!Object.hasOwn(operation, 'path')) wrong('/path', 'is required');
  else if (typeof path !== 'string' || !pointer.test(path)) wrong('/path', 'must be a JSON Pointer (RFC 6901)');
  if (needed === 'value' && !Object.hasOwn(operation, 'value')) wrong('/value', 'is required');
  if (op === 'increment' && Object.hasOwn(operation, 'value') && (typeof value !== 'number' || !Number.isFinite(value))) {
    wrong('/value', 'must be a number');
  }
  if (needed === 'from') {
    if (!Object.hasOwn(operation, 'from')) wrong('/from', 'is required');
    else if (typeof from !== 'string' || !pointer.test(from)) wrong('/from', 'must be a JSON Pointer (RFC 6901)');
  }
  if (typeof path !== 'string' || !pointer.test(path)) return;
  // The row's id is the service's: no operation writes, removes or moves it (reads are fine).
  if (op !== 'test' && namesId(path)) wrong('/path', 'must not name id: ids never change');
  if (op === 'move' && typeof from === 'string' && namesId(from)) wrong('/from', 'must not name id: ids never change');
  if (path === '') {
    // The whole row: tested, or replaced by an object of fields (but id); nothing else applies to it.
    if (op === 'add' || op === 'replace') {
      if (!isObject(value)) wrong('/value', 'must be an object of fields: it replaces the row (but id)');
      else if (Object.hasOwn(value, 'id')) wrong('/value/id', 'is not allowed: ids never change');
    } else if (op !== 'test') {
      wrong('/path', `must not be empty: ${op} cannot apply to the whole row`);
    }
  }
  // RFC 6902 §4.4: a value cannot move into itself.
  if (op === 'move' && typeof from === 'string' && pointer.test(from) && path.startsWith(`${from}/`)) {
    wrong('/from', 'must not be a proper prefix of path');
  }
}

/** Whether an object has a member, found without listing them (a PATCH's body is read on every request). */
function hasMember(object: object): boolean {
  for (const _ in object) return true;
  return false;
}

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
const topField = (path: string) => unescapeToken(path.slice(1).split('/')[0]);

/** RFC 6901 §4: `~1` is `/`, then `~0` is `~`. */
export const unescapeToken = (token: string) => token.replaceAll('~1', '/').replaceAll('~0', '~');
