/** Query strings kept at most, and the longest kept: a longer one is read apart every time. */
const MAX_ENTRIES = 256;
const MAX_LENGTH = 512;

/**
 * What a query string says, worked out once per distinct string. Clients send the same few again and
 * again (a page's `limit=50&order_by=score&order=desc`), and reading one apart (openapi-backend's qs,
 * then URLSearchParams for its names and for its values as sent) is a large part of a page's work.
 * At most MAX_ENTRIES strings are kept, the oldest
 * dropped first. What it answers is shared by every request that sent the same string: read it, never
 * change it.
 */
export class QueryMemo<T> {
  private readonly entries = new Map<string, T>();

  constructor(private readonly read: (querystring: string) => T) {}

  get(querystring: string): T {
    if (querystring.length > MAX_LENGTH) return this.read(querystring);
    let value = this.entries.get(querystring);
    if (value === undefined) {
      value = this.read(querystring);
      if (this.entries.size >= MAX_ENTRIES) this.entries.delete(this.entries.keys().next().value as string);
      this.entries.set(querystring, value);
    }
    return value;
  }
}
