// `rowbase export` and `rowbase import` as real processes, beside a real `rowbase serve` on the same
// database, on both backends (docs/operations.md, "Export and import").
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createReadStream, existsSync } from 'node:fs';
import { readFile, stat, writeFile } from 'node:fs/promises';
import { delimiter, dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { openStore, type Store } from '../../src/db/open-store.ts';
import { type BackendName, createDatabase, describeEachBackend, type TestDatabase } from '../support/backends.ts';
import { Client } from '../support/client.ts';
import { type Environment, type Finished, type ServeProcess, Workspace } from '../support/process.ts';
import { watchHealth } from '../support/watchdog.ts';

const peakRssPreload = fileURLToPath(new URL('../support/peak-rss.cjs', import.meta.url));
const rowbaseExecutable = fileURLToPath(new URL('../../bin/rowbase', import.meta.url));

/** The rows of the large collection, and what each weighs about (so that holding them all would show in memory). */
const LARGE_ROWS = 100_000;
const filler = 'a collection moved between servers, row by row, with its ids. '.repeat(10);
const rowAt = (i: number) => ({
  n: i % 997,
  text: `${filler}${i}`,
  tag: i % 5 === 0 ? null : `tag-${i % 7}`,
  nested: { i, list: [i, String(i), i % 2 === 0] },
});

/**
 * The rows of a collection exported and imported first, whose peak memory the large one's is compared
 * with: enough rows that the young generation of V8's heap has filled and been collected (a collection
 * of ten rows would not show it), a fifth of the large one's.
 */
const BASELINE_ROWS = 20_000;
/**
 * How much more memory, in kB, the large collection may take than the baseline: less than what its 80,000
 * rows more weigh as a file (checked below), and held in memory as JavaScript strings they would take at
 * least twice that, so a command that held them would fail. The peaks move by tens of MB with when V8
 * collects: on one day's runs the import read from -17 to +32 MB over the baseline.
 */
const MEMORY_BOUND_KB = 40 * 1024;

describeEachBackend('rowbase export and import', (backend: BackendName) => {
  let database: TestDatabase;
  let workspace: Workspace;
  let server: ServeProcess;
  let store: Store;
  let client: Client;
  let accountId: number;
  let env: Environment;
  let collections = 0;
  const newName = (prefix: string) => `${prefix}-${++collections}`;
  const rowbase = (...args: string[]) => workspace.run(args, env);
  const file = (name: string) => join(workspace.dir, name);

  before(async () => {
    database = await createDatabase(backend);
    workspace = await Workspace.create();
    // Sort indexes from the first ordered page: imported rows must be keyed in the indexes a collection has.
    env = { DATABASE_URL: database.url, ROWBASE_SORT_INDEX_MIN_ROWS: '0' };
    server = await workspace.serve(env);
    // The plan and the keys are made through the Store, as `rowbase plans set` and `rowbase keys create`
    // make them (test/cli/keys.test.ts and plans.test.ts run those): each start of `rowbase` costs CPU.
    store = await openStore(database.url);
    // A plan with room for every request here, at any rate: the other client writes as fast as it can.
    await store.setPlan({ name: 'bulk', quota: 100_000_000, period: 'month', rate: null });
    client = new Client(server.url, (await store.createKey('acme', 'bulk')).key);
    accountId = (await store.accountIdOf('acme')) as number;
  });

  after(async () => {
    await store?.close();
    await workspace?.cleanUp();
    await database?.drop();
  });
  watchHealth(() => server);

  /**
   * A collection of 3 rows (rowAt) and its export, made once: the file the tests of an import's refusals
   * and of its events start from, where the export itself is not what they test (one start of `rowbase`
   * in place of one a test).
   */
  const shared = { name: '', file: '' };
  before(async () => {
    shared.name = newName('shared');
    await collectionOf(shared.name, 3);
    shared.file = file(`${shared.name}.ndjson`);
    const exported = await rowbase('export', '--account', 'acme', '--collection', shared.name, '--out', shared.file);
    expect(exported.code, exported.stderr).to.equal(0);
  });

  /** A collection of `count` rows (rowAt), made through the Store, with `from` the first row's number. */
  async function collectionOf(name: string, count: number): Promise<void> {
    expect((await client.post('/v1/collections', { name })).status).to.equal(201);
    await collectionRows(name, count);
  }

  /** Inserts `count` rows (rowAt) into the collection, through the Store. */
  async function collectionRows(name: string, count: number): Promise<void> {
    for (let start = 0; start < count; start += 1000) {
      const items = Array.from({ length: Math.min(1000, count - start) }, (_, index) => rowAt(start + index + 1));
      await store.insertRows(accountId, name, items);
    }
  }

  /** The collection as an export reads it, with a digest of its rows (ids and texts) in place of the rows. */
  async function digestOf(name: string) {
    const hash = createHash('sha256');
    let described: unknown;
    let rows = 0;
    await store.exportCollection(accountId, name, {
      async collection({ created_at, last_row_id, row_count }) {
        described = { created_at, last_row_id, row_count };
      },
      async rows(page) {
        rows += page.length;
        for (const { id, data } of page) hash.update(`${id} ${data}\n`);
      },
    });
    return { described, rows, digest: hash.digest('hex') };
  }

  /** The next row inserted into the collection: its id. */
  async function nextId(name: string): Promise<number> {
    const inserted = await client.post<{ id: number }[]>(`/v1/collections/${name}/rows`, [{ next: true }]);
    expect(inserted.status).to.equal(201);
    return inserted.body[0].id;
  }

  /**
   * Runs `rowbase <args>` measuring its peak resident memory, in kB. V8's young generation (semi-spaces of
   * 16 MB by default) fills in its own time, so two runs of one command differ by tens of MB of it that
   * say nothing of what the command holds: capped at 2 MB semi-spaces, what is compared is the rest.
   */
  async function measured(...args: string[]): Promise<Finished & { peakKb: number }> {
    const report = file(`peak-${++collections}.txt`);
    const options = `--max-semi-space-size=2 --require ${peakRssPreload}`;
    const finished = await workspace.run(args, { ...env, NODE_OPTIONS: options, PEAK_RSS_FILE: report });
    return { ...finished, peakKb: Number(await readFile(report, 'utf8')) };
  }

  /** Inserts into `collection` one row after another until stopped, as another client would; counts the writes acknowledged. */
  function writeLoop(collection: string) {
    let stopped = false;
    let acknowledged = 0;
    const running = (async () => {
      while (!stopped) {
        const written = await client.post(`/v1/collections/${collection}/rows`, [{ write: acknowledged }]);
        expect(written.status).to.equal(201);
        acknowledged++;
      }
    })();
    return {
      acknowledged: () => acknowledged,
      async stop() {
        stopped = true;
        await running;
        return acknowledged;
      },
    };
  }

  it('moves 100,000 rows into an identical collection (rows, count, next id), in bounded memory, while others write', async function () {
    this.timeout(600_000);
    const source = newName('large');
    await collectionOf(source, LARGE_ROWS);
    // A gap where a row was deleted, the last id deleted (the next id is past every row), a patched row.
    expect((await client.delete(`/v1/collections/${source}/rows/500`)).status).to.equal(204);
    expect((await client.delete(`/v1/collections/${source}/rows/${LARGE_ROWS}`)).status).to.equal(204);
    expect((await client.patch(`/v1/collections/${source}/rows/7`, { n: 'patched', extra: [1, { two: 2 }] })).status).to.equal(200);
    const small = newName('baseline');
    await collectionOf(small, BASELINE_ROWS);
    const others = newName('others');
    expect((await client.post('/v1/collections', { name: others })).status).to.equal(201);

    const baselineExport = await measured('export', '--account', 'acme', '--collection', small, '--out', file('small.ndjson'));
    expect(baselineExport.code, baselineExport.stderr).to.equal(0);
    const baselineImport = await measured('import', '--account', 'acme', '--collection', newName('small-copy'), file('small.ndjson'));
    expect(baselineImport.code, baselineImport.stderr).to.equal(0);

    const writer = writeLoop(others);
    const exported = await measured('export', '--account', 'acme', '--collection', source, '--out', file('large.ndjson'));
    expect(exported.code, exported.stderr).to.equal(0);
    const target = newName('large-copy');
    const imported = await measured('import', '--account', 'acme', '--collection', target, file('large.ndjson'));
    expect(imported.code, imported.stderr).to.equal(0);
    const writesMeanwhile = await writer.stop();

    // The first line, then one line a row.
    const lines = await linesOf(file('large.ndjson'));
    expect(lines.count).to.equal(LARGE_ROWS - 2);
    expect(lines.first).to.include({
      format: 'rowbase-export',
      version: 1,
      name: source,
      last_row_id: LARGE_ROWS,
      row_count: LARGE_ROWS - 2,
    });
    // Plain lines (stderr is no terminal), ending with the sum.
    expect(exported.stderr).to.match(
      new RegExp(`rowbase: exported ${LARGE_ROWS - 2} rows of collection ${source} in [\\d.]+ s \\(\\d+ rows/s\\)\\n`),
    );
    expect(imported.stderr).to.match(
      new RegExp(`rowbase: imported ${LARGE_ROWS - 2} rows into collection ${target} in [\\d.]+ s \\(\\d+ rows/s\\)\\n`),
    );

    // Both read at once: each mostly waits on the database.
    const [from, to] = await Promise.all([digestOf(source), digestOf(target)]);
    expect(to).to.deep.equal(from);
    expect(from.rows).to.equal(LARGE_ROWS - 2);
    // The same page through a sort index made on each (both made at once).
    const page = '/rows?order_by=n&order=desc&limit=1000&offset=40000';
    const [targetPage, sourcePage] = await Promise.all([target, source].map((name) => client.get(`/v1/collections/${name}${page}`)));
    expect(targetPage.status).to.equal(200);
    expect(targetPage.text).to.equal(sourcePage.text);
    expect(await nextId(target)).to.equal(LARGE_ROWS + 1);
    expect(await nextId(source)).to.equal(LARGE_ROWS + 1);

    // The other client's writes all went in beside the export and import.
    expect(writesMeanwhile).to.be.above(0);
    expect((await client.get<{ row_count: number }>(`/v1/collections/${others}`)).body.row_count).to.equal(writesMeanwhile);

    const [large, baseline] = [await stat(file('large.ndjson')), await stat(file('small.ndjson'))];
    const size = large.size - baseline.size;
    expect(size).to.be.above(MEMORY_BOUND_KB * 1024);
    // What a command of this runtime takes holding little: the larger of the two small runs' peaks, since
    // one of them alone can read low by a collection that came at the right moment (21 MB once, on a busy host).
    const little = Math.max(baselineExport.peakKb, baselineImport.peakKb);
    const grewBy = { export: exported.peakKb - little, import: imported.peakKb - little };
    console.log(
      `      peak RSS: export ${exported.peakKb} kB (+${grewBy.export}), import ${imported.peakKb} kB (+${grewBy.import}); ${size} bytes more than the baseline's file`,
    );
    expect(grewBy.export).to.be.below(MEMORY_BOUND_KB);
    expect(grewBy.import).to.be.below(MEMORY_BOUND_KB);
  });

  it('writes to stdout without --out, and the same rows as the file', async () => {
    const name = newName('stdout');
    await collectionOf(name, 30);
    const [printed, written] = [
      await rowbase('export', '--account', 'acme', '--collection', name),
      await rowbase('export', '--account', 'acme', '--collection', name, '--out', file(`${name}.ndjson`)),
    ];
    expect([printed.code, written.code]).to.deep.equal([0, 0]);
    const lines = printed.stdout.trimEnd().split('\n');
    expect(lines).to.have.length(31);
    expect(lines.slice(1).map((line) => JSON.parse(line))).to.deep.equal(
      Array.from({ length: 30 }, (_, i) => ({ id: i + 1, ...rowAt(i + 1) })),
    );
    expect(lines.slice(1)).to.deep.equal((await readFile(file(`${name}.ndjson`), 'utf8')).trimEnd().split('\n').slice(1));
  });

  it('stops at a malformed line with its line number, writes nothing of its batch, and --resume goes on after the last batch', async () => {
    const source = newName('source');
    await collectionOf(source, 2500);
    expect((await client.delete(`/v1/collections/${source}/rows/2500`)).status).to.equal(204);
    const good = file(`${source}.ndjson`);
    expect((await rowbase('export', '--account', 'acme', '--collection', source, '--out', good)).code).to.equal(0);
    const text = await readFile(good, 'utf8');
    const lines = text.split('\n');
    // Line 1502 is row 1501, in the second batch (rows 1001 to 2000, lines 1002 to 2001).
    lines[1501] = '{"id": 1501, "n": oops}';
    const bad = file(`${source}-bad.ndjson`);
    await writeFile(bad, lines.join('\n'));

    const target = newName('target');
    const stopped = await rowbase('import', '--account', 'acme', '--collection', target, bad);

    expect(stopped.code).to.equal(1);
    expect(stopped.stdout).to.equal('');
    expect(stopped.stderr).to.match(
      new RegExp(
        `^rowbase: ${literally(bad)}: line 1502 is not JSON: [^\\n]+; the rows before line 1002 are imported; mend the file and run again with --resume\\n$`,
      ),
    );
    const partial = await client.get<{ row_count: number }>(`/v1/collections/${target}`);
    expect(partial.body.row_count).to.equal(1000);
    // A sort index made now, between the batches: the rows imported later must be keyed in it.
    const page = '/rows?order_by=n&order=desc&limit=500&offset=100';
    expect((await client.get(`/v1/collections/${target}${page}`)).status).to.equal(200);

    const resumed = await rowbase('import', '--account', 'acme', '--collection', target, '--resume', good);

    expect(resumed.code, resumed.stderr).to.equal(0);
    expect(resumed.stderr).to.include(`rowbase: imported 2499 rows into collection ${target}, 1000 of them there already (--resume)`);
    expect(await digestOf(target)).to.deep.equal(await digestOf(source));
    expect((await client.get(`/v1/collections/${target}${page}`)).text).to.equal(
      (await client.get(`/v1/collections/${source}${page}`)).text,
    );
    expect(await nextId(target)).to.equal(2501);
  });

  it('moves a collection whose rows were all deleted: no row, and the same next id', async () => {
    const source = newName('emptied');
    await collectionOf(source, 3);
    for (const id of [1, 2, 3]) expect((await client.delete(`/v1/collections/${source}/rows/${id}`)).status).to.equal(204);
    const exported = file(`${source}.ndjson`);
    expect((await rowbase('export', '--account', 'acme', '--collection', source, '--out', exported)).code).to.equal(0);
    expect((await readFile(exported, 'utf8')).trimEnd().split('\n')).to.have.length(1);
    const target = newName('emptied-copy');

    const imported = await rowbase('import', '--account', 'acme', '--collection', target, exported);

    expect(imported.code, imported.stderr).to.equal(0);
    expect(await digestOf(target)).to.deep.equal(await digestOf(source));
    expect(await nextId(target)).to.equal(4);
  });

  it("carries the collection's schema and indexes: the export names them, and the import makes the collection with them", async () => {
    const source = newName('typed');
    const schema = { type: 'object', required: ['n'], properties: { n: { type: 'integer' }, text: { type: 'string' } } };
    expect((await client.post('/v1/collections', { name: source, schema })).status).to.equal(201);
    await collectionRows(source, 5);
    expect((await client.post(`/v1/collections/${source}/indexes`, { fields: ['text'], unique: true })).status).to.equal(201);
    expect((await client.post(`/v1/collections/${source}/indexes`, { fields: ['n', 'tag'] })).status).to.equal(201);
    expect((await client.post(`/v1/collections/${source}/indexes`, { type: 'search', fields: ['tag', 'text'] })).status).to.equal(201);
    const indexes = (await client.get(`/v1/collections/${source}/indexes`)).body;
    const exported = file(`${source}.ndjson`);
    expect((await rowbase('export', '--account', 'acme', '--collection', source, '--out', exported)).code).to.equal(0);
    const header = JSON.parse((await readFile(exported, 'utf8')).split('\n')[0]);
    expect(header.schema).to.deep.equal(schema);
    expect(header.indexes).to.deep.equal([
      { fields: ['text'], unique: true },
      { fields: ['n', 'tag'], unique: false },
      { fields: ['tag', 'text'], unique: false, type: 'search' },
    ]);
    expect(header).to.not.have.property('rules');
    const target = newName('typed-copy');

    const imported = await rowbase('import', '--account', 'acme', '--collection', target, exported);

    expect(imported.code, imported.stderr).to.equal(0);
    expect((await client.get(`/v1/collections/${target}/schema`)).body).to.deep.equal(schema);
    expect((await client.get(`/v1/collections/${target}/indexes`)).body).to.deep.equal(indexes);
    expect((await client.get(`/v1/collections/${target}/rules`)).status).to.equal(404);
    expect(await digestOf(target)).to.deep.equal(await digestOf(source));
    // The search index holds the words of the rows imported.
    const searched = async (name: string) =>
      (await client.get<{ id: number }[]>(`/v1/collections/${name}/rows?filter=${encodeURIComponent('{"$search":"TAG 3"}')}`)).body;
    expect((await searched(target)).map((row) => row.id))
      .to.deep.equal([3])
      .and.deep.equal((await searched(source)).map((row) => row.id));
    const copied = await client.post<{ code: string }>(`/v1/collections/${target}/rows`, [{ n: 1, text: rowAt(1).text }]);
    expect(copied.body.code).to.equal('unique_violation');
    expect((await client.post(`/v1/collections/${target}/rows`, [{ n: 'one' }])).status).to.equal(422);
  });

  it('checks the whole file against the schema before it writes: the first row that breaks it names its line, nothing written', async () => {
    const source = newName('typed');
    const schema = { type: 'object', properties: { n: { type: 'integer' } } };
    expect((await client.post('/v1/collections', { name: source, schema })).status).to.equal(201);
    await collectionRows(source, 1500);
    const good = file(`${source}.ndjson`);
    expect((await rowbase('export', '--account', 'acme', '--collection', source, '--out', good)).code).to.equal(0);
    const lines = (await readFile(good, 'utf8')).split('\n');
    // Line 1202 is row 1201, in the second batch: the first batch is not written either.
    lines[1201] = JSON.stringify({ ...JSON.parse(lines[1201]), n: 'many' });
    const bad = file(`${source}-bad.ndjson`);
    await writeFile(bad, lines.join('\n'));
    const target = newName('typed-target');

    const stopped = await rowbase('import', '--account', 'acme', '--collection', target, bad);

    expect(stopped.code).to.equal(1);
    expect(stopped.stderr).to.match(
      new RegExp(`^rowbase: ${literally(bad)}: line 1202 breaks the collection's schema at "/n": [^\\n]+; nothing is imported\\n$`),
    );
    expect((await client.get(`/v1/collections/${target}`)).status).to.equal(404);

    // A schema in line 1 that rowbase does not take is refused before anything is written.
    lines[0] = JSON.stringify({ ...JSON.parse(lines[0]), schema: { type: 'object', if: {} } });
    await writeFile(bad, lines.join('\n'));
    const refused = await rowbase('import', '--account', 'acme', '--collection', target, bad);
    expect(refused.code).to.equal(1);
    expect(refused.stderr).to.match(/line 1: "schema" is no schema rowbase takes/);
    expect((await client.get(`/v1/collections/${target}`)).status).to.equal(404);
  });

  it("carries the collection's rules into another account: the export names them, and GET answers them there as here", async () => {
    const source = newName('ruled');
    await collectionOf(source, 3);
    const rules = {
      read: { $or: [{ owner: { $auth: 'sub' } }, { public: true }] },
      create: { owner: { $auth: 'sub' } },
      delete: 'authenticated',
      fields: { text: { read: { owner: { $auth: 'sub' } }, write: false } },
    };
    const set = await client.put(`/v1/collections/${source}/rules`, rules);
    expect(set.status).to.equal(200);
    const exported = file(`${source}.ndjson`);
    expect((await rowbase('export', '--account', 'acme', '--collection', source, '--out', exported)).code).to.equal(0);
    expect(JSON.parse((await readFile(exported, 'utf8')).split('\n')[0]).rules).to.deep.equal(set.body);
    const elsewhere = new Client(server.url, (await store.createKey('acme-elsewhere', 'bulk')).key);

    const imported = await rowbase('import', '--account', 'acme-elsewhere', '--collection', source, exported);

    expect(imported.code, imported.stderr).to.equal(0);
    const copied = await elsewhere.get(`/v1/collections/${source}/rules`);
    expect(copied.status).to.equal(200);
    expect(copied.body).to.deep.equal(set.body);
    expect((await elsewhere.get<{ row_count: number }>(`/v1/collections/${source}`)).body.row_count).to.equal(3);
  });

  it("carries the collection's time to live: the export names it, the import sets it before the rows, so that a row expired in the file is gone at once", async () => {
    const source = newName('expiring');
    expect((await client.post('/v1/collections', { name: source })).status).to.equal(201);
    const later = new Date(Date.now() + 3_600_000).toISOString();
    const rows = [{ ends: later }, { ends: later }, { note: 'never expires' }];
    expect((await client.post(`/v1/collections/${source}/rows`, rows)).status).to.equal(201);
    expect((await client.put(`/v1/collections/${source}/ttl`, { field: 'ends' })).status).to.equal(200);
    const exported = file(`${source}.ndjson`);
    expect((await rowbase('export', '--account', 'acme', '--collection', source, '--out', exported)).code).to.equal(0);
    const [first, ...lines] = (await readFile(exported, 'utf8')).trimEnd().split('\n');
    expect(JSON.parse(first).ttl).to.deep.equal({ field: 'ends' });
    // Row 2 has expired by the time the file is imported.
    const edited = file(`${source}-edited.ndjson`);
    const past = new Date(Date.now() - 60_000).toISOString();
    await writeFile(
      edited,
      [first, ...lines.map((line) => line.replace(`{"id":2,"ends":"${later}"}`, `{"id":2,"ends":"${past}"}`)), ''].join('\n'),
    );
    const target = newName('expiring-copy');

    const imported = await rowbase('import', '--account', 'acme', '--collection', target, edited);

    expect(imported.code, imported.stderr).to.equal(0);
    expect((await client.get(`/v1/collections/${target}/ttl`)).body).to.deep.equal({ field: 'ends' });
    expect((await client.get<{ row_count: number }>(`/v1/collections/${target}`)).body.row_count).to.equal(2);
    expect((await client.get(`/v1/collections/${target}/rows/2`)).status).to.equal(404);
    expect((await client.get(`/v1/collections/${target}/rows/1`)).status).to.equal(200);
  });

  it('refuses a time to live in line 1 that a PUT of it would refuse, naming it, before it writes anything', async () => {
    const [first, ...rows] = (await readFile(shared.file, 'utf8')).split('\n');
    const typed = { type: 'object', properties: { ends: { type: 'integer' } } };
    for (const [header, said] of [
      [{ ttl: { field: 'id' } }, /"ttl" must be \{"field": a plain top-level name, not id\}/],
      [{ ttl: 'ends' }, /"ttl" must be/],
      [{ ttl: { field: 'ends' }, schema: typed }, /"ttl" is no time to live rowbase takes: .*\/ttl\/field/],
    ] as const) {
      const bad = file(`${newName('bad-ttl')}.ndjson`);
      await writeFile(bad, [JSON.stringify({ ...JSON.parse(first), ...header }), ...rows].join('\n'));
      const target = newName('refused');

      const refused = await rowbase('import', '--account', 'acme', '--collection', target, bad);

      expect(refused.code, refused.stderr).to.equal(1);
      expect(refused.stderr).to.match(said);
      expect(refused.stderr.trimEnd().split('\n')).to.have.length(1);
      expect((await client.get(`/v1/collections/${target}`)).status).to.equal(404);
    }
  });

  it('refuses rules in line 1 that a PUT of them would refuse, naming the place, before it writes anything', async () => {
    const [first, ...rows] = (await readFile(shared.file, 'utf8')).split('\n');
    const target = newName('ruled-target');
    const bad = file(`${target}-bad.ndjson`);
    const cases: [unknown, string][] = [
      [{ read: { $auth: 'sub' } }, `/rules/read/$auth: names a claim, a value: it may stand for a condition's value, not a filter`],
      [{ fields: { id: { read: false } } }, "/rules/fields/id: is the row's id, which only the row's rules govern"],
      ['everyone', '/rules: must be a JSON object'],
    ];
    for (const [rules, place] of cases) {
      await writeFile(bad, [JSON.stringify({ ...JSON.parse(first), rules }), ...rows].join('\n'));

      const refused = await rowbase('import', '--account', 'acme', '--collection', target, bad);

      expectOneLine(
        refused,
        1,
        `rowbase: ${bad}: line 1: "rules" are no rules rowbase takes: The rules are not valid. ${place}; nothing is imported\n`,
      );
      expect((await client.get(`/v1/collections/${target}`)).status).to.equal(404);
    }
  });

  it('sends an insert event for every imported row, in id order', async () => {
    const target = newName('events-copy');
    expect((await rowbase('import', '--account', 'acme', '--collection', target, shared.file)).code).to.equal(0);

    const { feedStart } = store;
    const start = await feedStart(accountId, target);
    const events = await store.readEvents(start.collectionId, { after: 0, limit: 10 });
    expect(events.map(({ type, seq, row }) => ({ type, seq, row }))).to.deep.equal(
      [1, 2, 3].map((id) => ({ type: 'insert', seq: id, row: { id, ...rowAt(id) } })),
    );
  });

  it('refuses an existing collection without --resume: exit 2, one line, nothing written', async () => {
    const refused = await rowbase('import', '--account', 'acme', '--collection', shared.name, shared.file);

    expectOneLine(
      refused,
      2,
      `rowbase: collection ${shared.name} exists already; give --resume to go on with an import into it, or import into a new name\n`,
    );
    expect((await client.get<{ row_count: number }>(`/v1/collections/${shared.name}`)).body.row_count).to.equal(3);
  });

  it('refuses a missing file, and a file that is no export or is cut short, with one line', async () => {
    const missing = await rowbase('import', '--account', 'acme', '--collection', newName('none'), file('missing.ndjson'));
    expectOneLine(missing, 2, `rowbase: there is no file ${file('missing.ndjson')} to import\n`);

    const notExport = file('not-export.ndjson');
    await writeFile(notExport, '{"id":1}\n');
    const target = newName('none');
    const refused = await rowbase('import', '--account', 'acme', '--collection', target, notExport);
    expectOneLine(
      refused,
      1,
      `rowbase: ${notExport}: line 1 does not say "format":"rowbase-export": this is no file rowbase export wrote; nothing is imported\n`,
    );
    expect((await client.get(`/v1/collections/${target}`)).status).to.equal(404);

    const cutCopy = newName('cut-copy');
    const cut = file(`${cutCopy}.ndjson`);
    await writeFile(cut, (await readFile(shared.file, 'utf8')).split('\n').slice(0, 3).join('\n'));
    const short = await rowbase('import', '--account', 'acme', '--collection', cutCopy, cut);
    expectOneLine(short, 1, `rowbase: ${cut}: the file ends after 2 rows, where line 1 counts 3: it is cut short; nothing is imported\n`);
    // Not even the collection: an import run again needs no --resume.
    expect((await client.get(`/v1/collections/${cutCopy}`)).status).to.equal(404);

    const outOfOrder = file('out-of-order.ndjson');
    const header = (await readFile(shared.file, 'utf8')).split('\n')[0];
    await writeFile(outOfOrder, `${header}\n{"id":2}\n{"id":1}\n`);
    const unordered = await rowbase('import', '--account', 'acme', '--collection', newName('unordered'), outOfOrder);
    expectOneLine(
      unordered,
      1,
      `rowbase: ${outOfOrder}: line 3: id 1 follows id 2; rows come in increasing id order; nothing is imported\n`,
    );
  });

  it('refuses an unknown account or collection for export and import: exit 2, one line, nothing written', async () => {
    const noCollection = await rowbase('export', '--account', 'acme', '--collection', 'absent');
    expectOneLine(noCollection, 2, 'rowbase: account acme has no collection named absent\n');
    const noAccount = await rowbase('export', '--account', 'nobody', '--collection', 'absent');
    expectOneLine(noAccount, 2, 'rowbase: there is no account named nobody; make it with rowbase keys create --account nobody\n');
    const importing = await rowbase('import', '--account', 'nobody', '--collection', 'x', shared.file);
    expectOneLine(importing, 2, 'rowbase: there is no account named nobody; make it with rowbase keys create --account nobody\n');
  });

  it('refuses an --out file that exists unless --force, and leaves no file when the export fails', async () => {
    const source = newName('out');
    await collectionOf(source, 2);
    const out = file(`${source}.ndjson`);
    await writeFile(out, 'kept\n');

    const refused = await rowbase('export', '--account', 'acme', '--collection', source, '--out', out);
    expectOneLine(refused, 2, `rowbase: ${out} exists already; give --force to replace it\n`);
    expect(await readFile(out, 'utf8')).to.equal('kept\n');

    const replaced = await rowbase('export', '--account', 'acme', '--collection', source, '--out', out, '--force');
    expect(replaced.code, replaced.stderr).to.equal(0);
    expect((await readFile(out, 'utf8')).split('\n')).to.have.length(4);

    const failed = await rowbase('export', '--account', 'acme', '--collection', 'absent', '--out', file('absent.ndjson'));
    expect(failed.code).to.equal(2);
    expect(existsSync(file('absent.ndjson'))).to.equal(false);
  });

  if (backend === 'sqlite') {
    it('shows a progress bar with rows per second on a terminal', async function () {
      if (!existsSync('/usr/bin/script')) {
        if (process.env.CI === 'true') throw new Error('/usr/bin/script (util-linux) is needed to run the CLI on a terminal');
        this.skip();
      }
      const name = newName('terminal');
      await collectionOf(name, 2000);
      const out = file(`${name}.ndjson`);
      const command = [rowbaseExecutable, 'export', '--account', 'acme', '--collection', name, '--out', out].map(shellQuote).join(' ');
      const { stdout } = await promisify(execFile)('/usr/bin/script', ['-qec', command, '/dev/null'], {
        cwd: workspace.dir,
        env: { PATH: [dirname(process.execPath), process.env.PATH].join(delimiter), HOME: process.env.HOME, TERM: 'xterm', ...env },
      });
      expect(stdout).to.match(/exported \[[█░]+\] 2000\/2000 rows \| \d+ rows\/s/);
      expect(stdout).to.include(`rowbase: exported 2000 rows of collection ${name} in`);
    });
  }
});

describe('rowbase export, import and backup arguments', () => {
  let workspace: Workspace;
  before(async () => {
    workspace = await Workspace.create();
  });
  after(() => workspace.cleanUp());

  it('describes each command with --help', async () => {
    for (const command of ['export', 'import', 'backup']) {
      const described = await workspace.run([command, '--help']);
      expect(described.code).to.equal(0);
      expect(described.stdout).to.match(new RegExp(`^Usage: rowbase ${command} `));
      expect(described.stdout).to.include('docs/operations.md');
    }
  });

  it('exits 2 with one line for bad arguments, before it opens the database', async () => {
    const cases: [string[], string][] = [
      [['export', '--collection', 'notes'], '--account is required'],
      [['export', '--account', 'me'], '--collection is required'],
      [
        ['export', '--account', 'me', '--collection', 'no spaces'],
        '--collection must be a collection name (openapi.yaml, CollectionName), not "no spaces"',
      ],
      [['export', '--account', 'me', '--collection', 'notes', '--force'], '--force replaces the --out file; give --out'],
      [
        ['import', '--account', 'me', '--collection', 'notes'],
        'usage: rowbase import --account <name> --collection <name> [--resume] <file>',
      ],
      [['import', '--account', 'me', '--collection', 'notes', 'absent.ndjson'], 'there is no file absent.ndjson to import'],
      [['backup'], 'usage: rowbase backup [--force] <file>'],
    ];
    for (const [args, reason] of cases) {
      const refused = await workspace.run(args);
      expectOneLine(refused, 2, `rowbase: ${reason}\n`);
    }
    expect(existsSync(join(workspace.dir, 'rowbase.sqlite'))).to.equal(false);
  });
});

/** The first line of an NDJSON file, parsed, and how many lines follow it. */
async function linesOf(path: string): Promise<{ first: Record<string, unknown>; count: number }> {
  let first: Record<string, unknown> | undefined;
  let count = 0;
  for await (const line of createInterface({ input: createReadStream(path), crlfDelay: Number.POSITIVE_INFINITY })) {
    if (first === undefined) first = JSON.parse(line);
    else count++;
  }
  return { first: first ?? {}, count };
}

/** Exits `code` with `stderr` as its only output, one line. */
function expectOneLine(finished: Finished, code: number, stderr: string): void {
  expect(finished.code, finished.stderr).to.equal(code);
  expect(finished.stderr).to.equal(stderr);
  expect(finished.stdout).to.equal('');
}

const literally = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const shellQuote = (text: string) => `'${text.replaceAll("'", "'\\''")}'`;
