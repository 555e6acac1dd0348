// The search indexes' makings left half-way (db/search/indexes.ts, fillSearchIndex): of a process that
// stopped in one, of a request whose making failed, of another instance gone. Gone on with where they
// ended, as the server starts and every minute after.
import type { Store } from './db/open-store.ts';
import type { Logger } from './log.ts';
import { Passes } from './periodic.ts';

/** How often a pass looks for makings left half-way. */
const INTERVAL_MS = 60_000;

/**
 * Each pass makes the words of every search index left half-way (Store.resumeSearchFills) and emits `pass`
 * with how many it found (Passes); stop() ends one under way after its batch under way. A making a
 * request is doing meanwhile, or another process, is shared: each batch reads where the last one ended.
 */
export class SearchFills extends Passes {
  constructor(store: Store, log: Logger) {
    super(
      () => store.resumeSearchFills(() => this.stopped),
      INTERVAL_MS,
      (error) => log.error({ err: error }, 'making search indexes failed'),
    );
  }
}
