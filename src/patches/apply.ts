// A patch applied to a row's fields: today's top-level merge, JSON Merge Patch (RFC 7396), or JSON Patch
// (RFC 6902) with our `increment`. A well-formed patch (read.ts) that cannot apply to the row as it is
// (a failing `test`, a path that does not exist, a path through a value that is no object or array, an
// array index out of range, an increment of a non-number) is a 409 patch_conflict: the write it is part
// of stores nothing.
// Why it is ours and not a library's, and how it bounds what a patch copies: docs/patches.md,
// "Applying a patch".
import { ApiError } from '../errors.ts';
import { setMember } from '../rows.ts';
import { isObject, type Patch, type PatchOperation, unescapeToken } from './read.ts';

type Container = Record<string, unknown> | unknown[];

/**
 * The row's new fields (without id) from its stored fields (without id); 409 patch_conflict when the
 * patch cannot apply, naming the operation and the row `rowId`. Never mutates `fields` (nor the patch).
 */
export function applyPatch(patch: Patch, fields: Record<string, unknown>, rowId: number): Record<string, unknown> {
  if (patch.format === 'merge') return { ...fields, ...patch.fields };
  if (patch.format === 'merge-patch') return mergePatch(fields, patch.document) as Record<string, unknown>;
  const row = new RowDocument(fields, rowId);
  for (const [index, operation] of patch.operations.entries()) {
    try {
      row.apply(operation);
    } catch (error) {
      if (!(error instanceof Conflict)) throw error;
      const { op, path } = operation;
      throw new ApiError(
        'patch_conflict',
        `Operation ${index} of the patch (${op} at "${path}") cannot apply to row ${rowId}: ${error.message}. Nothing was written.`,
        { errors: [{ in: 'body', name: `/${index}`, message: error.message }] },
      );
    }
  }
  return row.fields;
}

/** RFC 7396 §2: objects merge member by member, `null` removes a member, anything else replaces the target. */
function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isObject(patch)) return copyOf(patch);
  const merged: Record<string, unknown> = isObject(target) ? { ...target } : {};
  for (const name of Object.keys(patch)) {
    const value = patch[name];
    if (value === null) delete merged[name];
    else setMember(merged, name, mergePatch(own(merged, name), value));
  }
  return merged;
}

/** Why an operation cannot apply, said of its place; made an ApiError by applyPatch. */
class Conflict extends Error {}

/** The most JSON text a patch copies (`copy`), in characters: as much as a row may weigh (15 MiB). */
const MAX_COPIED = 15 * 1024 * 1024;

/** The deepest a JSON Patch makes a row, unless it was deeper already: as deep as a request body may be by default. */
const MAX_DEPTH = 64;

/** A JSON array index (RFC 6901 §4): no sign, no leading zero. */
const arrayIndex = /^(0|[1-9][0-9]*)$/;

/** The row a JSON Patch applies to: `{id, ...fields}`, whose id is only read. */
class RowDocument {
  /** The containers this patch has copied already, which it may change in place. */
  private readonly copied = new WeakSet<object>();
  /** The row as handed in, never changed. */
  private readonly original: Record<string, unknown>;
  /** How deep the row was, once asked (fits()). */
  private originalDepth?: number;
  /** Characters of JSON text `copy` has copied so far. */
  private copiedText = 0;

  constructor(
    public fields: Record<string, unknown>,
    private readonly rowId: number,
  ) {
    this.original = fields;
    this.fields = { ...fields };
    this.copied.add(this.fields);
  }

  apply(operation: PatchOperation): void {
    const { op, path } = operation;
    if (path === '') {
      // The root: read.ts lets only test, and add or replace by an object without id, reach here.
      if (op === 'test') {
        this.test(this.read(''), operation.value);
      } else {
        this.fields = copyOf((operation as { value: Record<string, unknown> }).value) as Record<string, unknown>;
        this.copied.add(this.fields);
      }
      return;
    }
    switch (op) {
      case 'add':
        this.add(path, copyOf(operation.value));
        break;
      case 'remove':
        this.remove(path);
        break;
      case 'replace': {
        const value = copyOf(operation.value);
        this.fits(path, value);
        const { parent, token } = this.place(path);
        this.existing(parent, token, path);
        this.set(parent, token, value);
        break;
      }
      case 'move':
        // RFC 6902 §4.4: to where it is, a value stays (but must exist).
        if (operation.from === path) this.read(path);
        else this.add(path, this.remove(operation.from));
        break;
      case 'copy':
        this.add(path, this.copy(this.read(operation.from)));
        break;
      case 'test':
        this.test(this.read(path), operation.value);
        break;
      case 'increment':
        this.increment(path, operation.value);
        break;
    }
  }

  /**
   * A conflict unless `value` at `path` leaves the row no deeper than MAX_DEPTH, or than it was (whose
   * depth is measured only when a value goes deeper than MAX_DEPTH).
   */
  private fits(path: string, value: unknown): void {
    const depth = tokensOf(path).length + depthOf(value);
    if (depth <= MAX_DEPTH) return;
    this.originalDepth ??= depthOf(this.original);
    const most = Math.max(MAX_DEPTH, this.originalDepth);
    if (depth > most) throw new Conflict(`it would nest the row deeper than ${most} levels`);
  }

  /** RFC 6902 §4.6: equal as JSON values, else a conflict. */
  private test(found: unknown, value: unknown): void {
    if (!equal(found, value)) throw new Conflict(`the value there is not ${JSON.stringify(value)}`);
  }

  /** The value at `path` (`/id` is the row's id); a conflict when there is none. */
  private read(path: string): unknown {
    const tokens = tokensOf(path);
    let value: unknown = tokens.length === 0 ? { id: this.rowId, ...this.fields } : this.fields;
    if (tokens[0] === 'id') value = { id: this.rowId };
    for (const [depth, token] of tokens.entries()) {
      const at = pointerOf(tokens.slice(0, depth + 1));
      if (Array.isArray(value)) {
        if (!arrayIndex.test(token) || Number(token) >= value.length) throw new Conflict(`${at} does not exist`);
        value = value[Number(token)];
      } else if (isObject(value)) {
        if (!Object.hasOwn(value, token)) throw new Conflict(`${at} does not exist`);
        value = value[token];
      } else {
        throw new Conflict(`${pointerOf(tokens.slice(0, depth))} is not an object or array`);
      }
    }
    return value;
  }

  /**
   * The container that holds the place `path` names (copied, so that it may change) and the place's
   * token in it; a conflict when the way there does not exist or passes through a value that is no
   * object or array.
   */
  private place(path: string): { parent: Container; token: string } {
    const tokens = tokensOf(path);
    let parent: Container = this.fields;
    for (const [depth, token] of tokens.slice(0, -1).entries()) {
      const at = pointerOf(tokens.slice(0, depth + 1));
      let child: unknown;
      if (Array.isArray(parent)) {
        if (!arrayIndex.test(token) || Number(token) >= parent.length) throw new Conflict(`${at} does not exist`);
        child = parent[Number(token)];
      } else {
        if (!Object.hasOwn(parent, token)) throw new Conflict(`${at} does not exist`);
        child = parent[token];
      }
      if (typeof child !== 'object' || child === null) throw new Conflict(`${at} is not an object or array`);
      if (!this.copied.has(child)) {
        child = Array.isArray(child) ? [...child] : { ...child };
        this.copied.add(child as object);
        this.set(parent, token, child);
      }
      parent = child as Container;
    }
    return { parent, token: tokens[tokens.length - 1] };
  }

  /** Checks that `token` names a member or element of `parent` that exists. */
  private existing(parent: Container, token: string, path: string): void {
    const exists = Array.isArray(parent) ? arrayIndex.test(token) && Number(token) < parent.length : Object.hasOwn(parent, token);
    if (!exists) throw new Conflict(`${path} does not exist`);
  }

  /** Sets an existing element, or a member (added if new). */
  private set(parent: Container, token: string, value: unknown): void {
    if (Array.isArray(parent)) parent[Number(token)] = value;
    else setMember(parent, token, value);
  }

  /** A copy of `value`, counted against MAX_COPIED: 413 past it. */
  private copy(value: unknown): unknown {
    if (typeof value !== 'object' || value === null) return value;
    const text = JSON.stringify(value);
    this.copiedText += text.length;
    if (this.copiedText > MAX_COPIED) {
      throw new ApiError('payload_too_large', `A patch copies ${MAX_COPIED} characters of JSON text at most; this one copies more.`);
    }
    return JSON.parse(text);
  }

  /** RFC 6902 §4.1: a member added or replaced, or an element inserted (`-`: appended). */
  private add(path: string, value: unknown): void {
    this.fits(path, value);
    const { parent, token } = this.place(path);
    if (!Array.isArray(parent)) setMember(parent, token, value);
    else if (token === '-') parent.push(value);
    else if (arrayIndex.test(token) && Number(token) <= parent.length) parent.splice(Number(token), 0, value);
    else throw new Conflict(`${path} is past the end of its array`);
  }

  /** RFC 6902 §4.2: the member or element removed, answered. */
  private remove(path: string): unknown {
    const { parent, token } = this.place(path);
    this.existing(parent, token, path);
    if (Array.isArray(parent)) return parent.splice(Number(token), 1)[0];
    const value = parent[token];
    delete parent[token];
    return value;
  }

  /** Ours: `value` added to the number at `path`; a member absent from an object that exists counts as 0. */
  private increment(path: string, value: number): void {
    const { parent, token } = this.place(path);
    if (Array.isArray(parent)) this.existing(parent, token, path);
    const current = Array.isArray(parent) ? parent[Number(token)] : (own(parent, token) ?? 0);
    if (typeof current !== 'number') throw new Conflict(`${path} is not a number`);
    const sum = current + value;
    if (!Number.isFinite(sum)) throw new Conflict(`${path} would be past ±1.8e308, which no double holds`);
    this.set(parent, token, sum);
  }
}

/** The tokens of a pointer, unescaped (`""`: none, the whole document). */
const tokensOf = (path: string) => (path === '' ? [] : path.slice(1).split('/').map(unescapeToken));
const pointerOf = (tokens: readonly string[]) => tokens.map((token) => `/${token.replaceAll('~', '~0').replaceAll('/', '~1')}`).join('');

/** An own member of `object`: an inherited one (`constructor`) is no member of a JSON object. */
const own = (object: Record<string, unknown>, name: string) => (Object.hasOwn(object, name) ? object[name] : undefined);

/** A copy of a JSON value that shares nothing with it: JSON.parse makes every member an own property. */
const copyOf = (value: unknown): unknown => (typeof value === 'object' && value !== null ? JSON.parse(JSON.stringify(value)) : value);

/** How many levels of objects and arrays `value` nests (0 for anything else), walked without recursion. */
function depthOf(value: unknown): number {
  let deepest = 0;
  const walk: [unknown, number][] = [[value, 1]];
  while (walk.length > 0) {
    const [item, depth] = walk.pop() as [unknown, number];
    if (typeof item !== 'object' || item === null) continue;
    if (depth > deepest) deepest = depth;
    for (const child of Array.isArray(item) ? item : Object.values(item))
      if (typeof child === 'object' && child !== null) walk.push([child, depth + 1]);
  }
  return deepest;
}

/** RFC 6902 §4.6: numbers by value, objects by their members whatever their order, arrays item by item. */
function equal(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) return a.length === (b as unknown[]).length && a.every((item, index) => equal(item, (b as unknown[])[index]));
  const names = Object.keys(a);
  if (names.length !== Object.keys(b).length) return false;
  return names.every((name) => Object.hasOwn(b, name) && equal((a as Record<string, unknown>)[name], (b as Record<string, unknown>)[name]));
}
