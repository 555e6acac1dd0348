// Several instances starting at once on one new SQLite file (src/db/sqlite/index.ts, migrate): each
// opens it, its schema made once, and none is refused for a race it lost.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { openStore } from '../../../src/db/open-store.ts';

describe('SQLite instances starting at once on one file', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'rowbase-startup-'));
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  it('all open one schema, each migration run once, whatever order they race in', async () => {
    const url = `sqlite:${join(dir, 'rowbase.sqlite')}`;
    for (let round = 0; round < 5; round++) {
      const file = `sqlite:${join(dir, `rowbase-${round}.sqlite`)}`;
      const stores = await Promise.all(Array.from({ length: 4 }, () => openStore(file)));
      try {
        const [first, ...others] = stores;
        const { key } = await first.createKey('starter');
        // Every instance sees what another wrote: one database, not four.
        for (const other of others) expect(await other.findPrincipal(key)).to.include({ account: 'starter' });
        const ran = await first.knex('knex_migrations').select('name');
        expect(new Set(ran.map(({ name }) => name)).size, 'each migration recorded once').to.equal(ran.length);
        expect(await first.knex('knex_migrations_lock').count({ n: '*' })).to.deep.equal([{ n: 1 }]);
      } finally {
        await Promise.all(stores.map((store) => store.close()));
      }
    }
    // A later start finds the schema made, and changes nothing.
    const store = await openStore(url);
    await store.close();
  });
});
