// Objects keyed by HTTP status codes (an OpenAPI operation's `responses`: "200", "404"), made anew for
// each collection's copy of an operation. V8 keeps a member whose key is an array index as an element,
// and an object built by a literal, a spread or Object.fromEntries gets a backing array as long as its
// largest index: some 5 KB for one map of status codes, ten times the time of the same map keyed by
// words. An object that has once held an element far out keeps its elements in a dictionary instead,
// about 1 KB (docs/performance.md, "The plan's diff: maps of status codes").
/** Past the largest index V8 keeps in a backing array before it takes a dictionary. */
const FAR = 2 ** 30;

/** A new empty object whose index-like keys V8 keeps in a dictionary: for maps of status codes. */
export function statusMap<T>(): Record<string, T> {
  const map: Record<string, T | null> = {};
  map[FAR] = null;
  delete map[FAR];
  return map as Record<string, T>;
}

/** `object`'s members, each value changed by `transform`, as a new object: a statusMap() where a key is an index. */
export function mapValues<V, W>(object: Record<string, V>, transform: (value: V, key: string) => W): Record<string, W> {
  const keys = Object.keys(object);
  const out: Record<string, W> = keys.some(isIndex) ? statusMap() : {};
  for (const key of keys) out[key] = transform(object[key], key);
  return out;
}

/** Whether `key` is one V8 keeps as an element: an array index. */
export const isIndex = (key: string): boolean => /^(?:0|[1-9]\d{0,8})$/.test(key);
