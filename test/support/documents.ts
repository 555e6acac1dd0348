// Contract documents as the tests read them: their `$ref`s, where each points, and their operations.

type Json = Record<string, unknown>;

/** The value a local `$ref` (`#/…`) points at in `document`, or undefined. */
export function resolve(document: unknown, ref: string): unknown {
  let node = document;
  for (const token of ref.slice(2).split('/')) {
    const key = decodeURIComponent(token).replaceAll('~1', '/').replaceAll('~0', '~');
    if (typeof node !== 'object' || node === null || !Object.hasOwn(node, key)) return undefined;
    node = (node as Json)[key];
  }
  return node;
}

/** Every `$ref` string of `node`. */
export function refsOf(node: unknown): string[] {
  if (Array.isArray(node)) return node.flatMap(refsOf);
  if (typeof node !== 'object' || node === null) return [];
  return Object.entries(node).flatMap(([key, value]) => (key === '$ref' && typeof value === 'string' ? [value] : refsOf(value)));
}
