// What nothing in a document uses: the components no `$ref` leads to from outside the components, and
// the security schemes no requirement names. The documents for a publishable key (caller.ts) leave out
// most of the API, and with it what only that part named: linters warn of unused components, and they
// would name what the caller may not use.
import { isObject, type JsonObject } from './row-schemas.ts';

/** The kinds of component whose members are named by `$ref` (`#/components/<kind>/<name>`). */
const REFERENCED = /^#\/components\/([^/]+)\/([^/]+)/;

/** `document` without the components nothing uses (above): a new value, whose parts are `document`'s. */
export function withoutUnused(document: JsonObject): JsonObject {
  const components = document.components as Record<string, JsonObject>;
  const used = new Set<string>();
  // A document shares its parts (each collection's operations are made of the same generic ones): each is walked once.
  const walked = new Set<object>();
  const visit = (node: unknown): void => {
    if (typeof node !== 'object' || node === null || walked.has(node)) return;
    walked.add(node);
    if (Array.isArray(node)) for (const item of node) visit(item);
    if (!isObject(node)) return;
    for (const [key, value] of Object.entries(node)) {
      const [, kind, escaped] = (key === '$ref' && typeof value === 'string' && REFERENCED.exec(value)) || [];
      if (kind === undefined || escaped === undefined) visit(value);
      else {
        const name = decodeURIComponent(escaped);
        if (used.has(`${kind}/${name}`)) continue;
        used.add(`${kind}/${name}`);
        visit(components[kind]?.[name]);
      }
    }
  };
  const { components: _components, ...rest } = document;
  visit(rest);
  // OpenAPI names a security scheme in its requirements by its name alone.
  const required = (node: unknown): string[] =>
    Array.isArray(node) ? node.flatMap((requirement) => (isObject(requirement) ? Object.keys(requirement) : [])) : [];
  for (const item of Object.values((document.paths ?? {}) as JsonObject)) {
    for (const operation of Object.values(item as JsonObject))
      if (isObject(operation)) for (const name of required(operation.security)) used.add(`securitySchemes/${name}`);
  }
  for (const name of required(document.security)) used.add(`securitySchemes/${name}`);
  const kept = Object.fromEntries(
    Object.entries(components).map(([kind, members]) => [
      kind,
      Object.fromEntries(Object.entries(members).filter(([name]) => used.has(`${kind}/${name}`))),
    ]),
  );
  return { ...document, components: Object.fromEntries(Object.entries(kept).filter(([, members]) => Object.keys(members).length > 0)) };
}
