// What the tests of rows that expire share (docs/expiry.md): collections made with or without a time to
// live, a walk of a page's Links, and a collection's change log read page after page.
import { expect } from 'chai';
import type { ChangesPage } from './changes.ts';
import type { Client, Response } from './client.ts';
import type { FeedMessage } from './feed.ts';

type Row = { id: number; [field: string]: unknown };

/** The next of a page's `Link`, or undefined when it has none. */
export const nextLink = (response: Response) => /^<(\/v1\/[^>]+)>; rel="next"$/.exec(response.headers.get('link') ?? '')?.[1];

/** Makes the collection `name`, with a time to live on `expires_at` unless `ttl` is false; answers its name. */
export async function madeCollection(client: Client, name: string, ttl = true): Promise<string> {
  expect((await client.post('/v1/collections', { name })).status).to.equal(201);
  if (ttl) expect((await client.put(`/v1/collections/${name}/ttl`, { field: 'expires_at' })).status).to.equal(200);
  return name;
}

/**
 * Answers once the row at `path` reads 404, its `expires_at` being `at`: a wait on the row, never a fixed
 * delay, bounded by the clock (10 s past `at`) rather than by a count of reads, which a fast host spends
 * before the instant comes.
 */
export async function expired(client: Client, path: string, at: string): Promise<void> {
  const deadline = Date.parse(at) + 10_000;
  while ((await client.get(path)).status !== 404) {
    if (Date.now() > deadline) throw new Error(`${path} never expired`);
  }
}

/** Every row of a walk from the page `first` by its Links, each page a 200. */
export async function walkedRows(client: Client, first: string): Promise<Row[]> {
  const seen: Row[] = [];
  for (let next: string | undefined = first; next; ) {
    const page: Response<Row[]> = await client.get<Row[]>(next);
    expect(page.status, page.text).to.equal(200);
    seen.push(...page.body);
    next = nextLink(page);
  }
  return seen;
}

/** Every row's `n` of a walk from the page `first` by its Links (walkedRows). */
export const walkedN = async (client: Client, first: string) => (await walkedRows(client, first)).map((row) => row.n as number);

/** The collection's whole change log, read a page of `limit` (default 1,000) at a time. */
export async function changeLog(client: Client, name: string, limit = 1000): Promise<FeedMessage[]> {
  const all: FeedMessage[] = [];
  for (let since = 0; ; ) {
    const page = await client.get<ChangesPage>(`/v1/collections/${name}/changes?since=${since}&limit=${limit}`);
    expect(page.status, page.text).to.equal(200);
    all.push(...page.body.changes);
    if (page.body.caught_up) return all;
    since = page.body.next_since;
  }
}
