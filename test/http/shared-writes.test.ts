// Patches and deletes of one collection sent together (src/db/postgres/rows.ts, write and writeSeveral;
// docs/development.md, "Work done together"): on PostgreSQL those queued side by side share one
// transaction, on SQLite its writer's groups; either way each is answered as it would be alone (200 or
// 204, a stale If-Match's 412, a missing row's 404), each stored one event (a patch's row what it
// answered), with consecutive seqs.
import { expect } from 'chai';
import { describeEachBackend } from '../support/backends.ts';
import type { Client } from '../support/client.ts';
import { startTestServer, type TestServer } from '../support/server.ts';

type Row = { id: number } & Record<string, unknown>;
const ROWS = 40;

describeEachBackend('writes of one collection sent together', (backend) => {
  let server: TestServer;
  let client: Client;
  before(async () => {
    server = await startTestServer({}, { backend });
    client = await server.client();
  });
  after(() => server?.stop());

  /** A new collection of ROWS rows `{n: 0}`, and its id. */
  async function seeded(name: string): Promise<number> {
    expect((await client.post('/v1/collections', { name })).status).to.equal(201);
    expect(
      (
        await client.post(
          `/v1/collections/${name}/rows`,
          Array.from({ length: ROWS }, () => ({ n: 0 })),
        )
      ).status,
    ).to.equal(201);
    return Number((await server.store.knex('collections').where({ name }).first('id')).id);
  }

  it('answers each as it would be alone, and stores each 200 as one event, with consecutive seqs', async () => {
    const id = await seeded('together');
    const stale = `"${id}.999"`;
    // Every row patched once; every fifth also sent with a stale If-Match, and as many ids that no row has.
    const sent = [
      ...Array.from({ length: ROWS }, (_, index) => ({ row: index + 1, n: index + 100, ifMatch: undefined })),
      ...Array.from({ length: ROWS / 5 }, (_, index) => ({ row: 5 * index + 1, n: -1, ifMatch: stale })),
      ...Array.from({ length: ROWS / 5 }, (_, index) => ({ row: ROWS + 10 + index, n: -2, ifMatch: undefined })),
    ].sort((a, b) => ((a.row * 7919) % 97) - ((b.row * 7919) % 97));
    const answers = await Promise.all(
      sent.map(({ row, n, ifMatch }) =>
        client.patch<Row>(`/v1/collections/together/rows/${row}`, { n }, ifMatch ? { headers: { 'if-match': ifMatch } } : undefined),
      ),
    );
    for (const [index, { row, n, ifMatch }] of sent.entries()) {
      const answer = answers[index];
      if (row > ROWS) expect(answer.status, answer.text).to.equal(404);
      else if (ifMatch) expect(answer.status, answer.text).to.equal(412);
      else {
        expect(answer.status, answer.text).to.equal(200);
        expect(answer.body).to.deep.equal({ id: row, n });
      }
    }
    // The insert's events are 1 to ROWS.
    const events = await server.store.readEvents(id, { after: ROWS, limit: 1000 });
    expect(events.map((event) => event.seq)).to.deep.equal(Array.from({ length: ROWS }, (_, index) => ROWS + index + 1));
    const stored = new Map(events.map((event) => [event.row.id, event.row]));
    expect(stored.size).to.equal(ROWS);
    for (const [index, { row, ifMatch }] of sent.entries()) {
      if (row > ROWS || ifMatch) continue;
      expect(stored.get(row)).to.deep.equal(answers[index].body);
      // Its version is its event's seq.
      const seq = events.find((event) => event.row.id === row)?.seq;
      expect(answers[index].headers.get('etag')).to.equal(`"${id}.${seq}"`);
    }
    const rows = (await client.get<Row[]>('/v1/collections/together/rows?limit=100')).body;
    expect(rows).to.deep.equal(Array.from({ length: ROWS }, (_, index) => ({ id: index + 1, n: index + 100 })));
  });

  it('deletes each row sent together once, a missing one 404, and stores each as one event, with consecutive seqs', async () => {
    const id = await seeded('deleted');
    // Every row, and every fifth twice, and as many ids that no row has.
    const sent = [
      ...Array.from({ length: ROWS }, (_, index) => index + 1),
      ...Array.from({ length: ROWS / 5 }, (_, index) => 5 * index + 1),
      ...Array.from({ length: ROWS / 5 }, (_, index) => ROWS + 10 + index),
    ].sort((a, b) => ((a * 7919) % 97) - ((b * 7919) % 97));
    const answers = await Promise.all(sent.map((row) => client.delete(`/v1/collections/deleted/rows/${row}`)));
    const statuses = new Map<number, number[]>();
    for (const [index, row] of sent.entries()) statuses.set(row, [...(statuses.get(row) ?? []), answers[index].status]);
    for (const [row, got] of statuses) {
      if (row > ROWS) expect(got, `row ${row}`).to.deep.equal([404]);
      else expect(got.sort(), `row ${row}`).to.deep.equal(got.length === 1 ? [204] : [204, 404]);
    }
    const events = await server.store.readEvents(id, { after: ROWS, limit: 1000 });
    expect(events.map((event) => event.seq)).to.deep.equal(Array.from({ length: ROWS }, (_, index) => ROWS + index + 1));
    expect(events.every((event) => event.type === 'delete')).to.equal(true);
    expect(events.map((event) => event.row.id).sort((a, b) => a - b)).to.deep.equal(Array.from({ length: ROWS }, (_, index) => index + 1));
    expect((await client.get<Row[]>('/v1/collections/deleted/rows')).body).to.deep.equal([]);
  });

  const JSON_PATCH = 'application/json-patch+json';
  const patchOf = <T = Row>(path: string, type: string, body: unknown, headers: Record<string, string> = {}) =>
    client.request<T>('PATCH', path, { raw: JSON.stringify(body), headers: { 'content-type': type, ...headers } });

  it('patches one row sent together one after another, each on the row as the ones before it left it', async () => {
    const id = await seeded('chained');
    const answers = await Promise.all(
      Array.from({ length: ROWS }, () =>
        patchOf('/v1/collections/chained/rows/1', JSON_PATCH, [{ op: 'increment', path: '/n', value: 1 }]),
      ),
    );
    expect(answers.map((answer) => answer.status)).to.deep.equal(Array(ROWS).fill(200));
    // None lost: each counted the ones before it.
    expect(answers.map((answer) => answer.body.n).sort((a, b) => Number(a) - Number(b))).to.deep.equal(
      Array.from({ length: ROWS }, (_, index) => index + 1),
    );
    const events = await server.store.readEvents(id, { after: ROWS, limit: 1000 });
    expect(events.map((event) => event.seq)).to.deep.equal(Array.from({ length: ROWS }, (_, index) => ROWS + index + 1));
    for (const [index, event] of events.entries()) {
      // Each event's row as it was is the row the event before it stored, and its answer the row it stored, its ETag its seq.
      expect(event.previous).to.deep.equal(index === 0 ? { id: 1, n: 0 } : events[index - 1].row);
      expect(event.row).to.deep.equal({ id: 1, n: index + 1 });
      const answered = answers.filter((answer) => answer.headers.get('etag') === `"${id}.${event.seq}"`);
      expect(answered.map((answer) => answer.body)).to.deep.equal([event.row]);
    }
    expect((await client.get('/v1/collections/chained/rows/1')).body).to.deep.equal({ id: 1, n: ROWS });
  });

  it('answers each patch of a collection with a schema sent together as alone: its own 422, 409 or 412, the others stored', async () => {
    const id = await seeded('checked');
    const schema = { type: 'object', properties: { n: { type: 'number' } }, required: ['n'] };
    expect((await client.put('/v1/collections/checked/schema', schema)).status).to.equal(200);
    const seq = (await client.get<{ seq: number }>('/v1/collections/checked')).body.seq;
    // Each row i patched by one of five kinds, i % 5: stored; refused by the schema; a JSON Patch's failed test; a stale If-Match; stored under its own If-Match.
    const sent = Array.from({ length: ROWS }, (_, index) => {
      const row = index + 1;
      const path = `/v1/collections/checked/rows/${row}`;
      switch (row % 5) {
        case 0:
          return patchOf(path, 'application/json', { n: row });
        case 1:
          return patchOf(path, 'application/json', { n: 'x' });
        case 2:
          return patchOf(path, JSON_PATCH, [
            { op: 'test', path: '/n', value: 1 },
            { op: 'replace', path: '/n', value: row },
          ]);
        case 3:
          return patchOf(path, 'application/json', { n: row }, { 'if-match': `"${id}.${seq + 1000}"` });
        default:
          return patchOf(path, 'application/json', { n: row }, { 'if-match': `"${id}.${row}"` });
      }
    });
    const answers = await Promise.all(sent);
    const expected = [200, 422, 409, 412, 200];
    for (const [index, answer] of answers.entries()) expect(answer.status, answer.text).to.equal(expected[(index + 1) % 5]);
    const events = await server.store.readEvents(id, { after: seq, limit: 1000 });
    const stored = answers.flatMap((answer, index) => (answer.status === 200 ? [index + 1] : []));
    expect(events.map((event) => event.seq)).to.deep.equal(Array.from({ length: stored.length }, (_, index) => seq + index + 1));
    expect(events.map((event) => event.row.id).sort((a, b) => a - b)).to.deep.equal(stored);
    const rows = (await client.get<Row[]>('/v1/collections/checked/rows?limit=100')).body;
    expect(rows).to.deep.equal(
      Array.from({ length: ROWS }, (_, index) => ({ id: index + 1, n: stored.includes(index + 1) ? index + 1 : 0 })),
    );
  });

  it('changes by filter sent together one after another, each on the rows as the ones before it left them', async () => {
    // Row 1 of k 0, rows 2 to 41 of k 1 to 40.
    expect((await client.post('/v1/collections', { name: 'filtered' })).status).to.equal(201);
    const rows = Array.from({ length: ROWS + 1 }, (_, k) => ({ k, flag: false, n: 0 }));
    expect((await client.post('/v1/collections/filtered/rows', rows)).status).to.equal(201);
    const id = Number((await server.store.knex('collections').where({ name: 'filtered' }).first('id')).id);
    const byFilter = (filter: object) => `/v1/collections/filtered/rows?filter=${encodeURIComponent(JSON.stringify(filter))}`;
    // One change flags rows 2 to 21; each of the others counts on row 1 and on the flagged rows: how many it
    // reaches tells whether it came after the first, and its event on row 1 where it came.
    // Sent amid the others, so that most likely some count in the same group after it.
    const count = () =>
      patchOf<{ count: number }>(byFilter({ $or: [{ flag: true }, { k: 0 }] }), JSON_PATCH, [{ op: 'increment', path: '/n', value: 1 }]);
    const sent = [
      ...Array.from({ length: 10 }, count),
      patchOf<{ count: number }>(byFilter({ flag: false, k: { $gte: 1, $lte: 20 } }), 'application/json', { flag: true }),
      ...Array.from({ length: 10 }, count),
    ];
    const answers = await Promise.all(sent);
    const [flagged] = answers.splice(10, 1);
    const counted = answers;
    expect([flagged, ...counted].map((answer) => answer.status)).to.deep.equal(Array(21).fill(200));
    expect(flagged.body.count).to.equal(20);
    const events = await server.store.readEvents(id, { after: ROWS + 1, limit: 1000 });
    expect(events.map((event) => event.seq)).to.deep.equal(events.map((_, index) => ROWS + 2 + index));
    // The events in blocks, a change's each: the flags' 20, and each count's, from its event on row 1.
    const blocks: (typeof events)[] = [];
    let flagging = false;
    for (const event of events) {
      const flags = event.previous?.flag === false && event.row.flag === true;
      if (event.row.id === 1 || (flags && !flagging)) blocks.push([event]);
      else blocks.at(-1)?.push(event);
      flagging = flags;
    }
    const flagsAt = blocks.findIndex((block) => block[0].row.id !== 1);
    expect(blocks[flagsAt].map((event) => event.row.id)).to.deep.equal(Array.from({ length: 20 }, (_, index) => index + 2));
    // Each count reached row 1 alone before the flags, and row 1 and the 20 flagged after them, each once.
    const sizes = blocks
      .filter((_, index) => index !== flagsAt)
      .map((block, index) => {
        expect(block[0].row.id).to.equal(1);
        expect(block.map((event) => event.row.n)).to.deep.equal(block.map((event) => Number(event.previous?.n) + 1));
        expect(block).to.have.length(index < flagsAt ? 1 : 21);
        return block.length;
      });
    expect(counted.map((answer) => answer.body.count).sort((a, b) => a - b)).to.deep.equal(sizes.sort((a, b) => a - b));
    const after = 20 - flagsAt;
    const stored = (await client.get<Row[]>('/v1/collections/filtered/rows?limit=100')).body;
    expect(stored.map((row) => row.n)).to.deep.equal(rows.map(({ k }) => (k === 0 ? 20 : k <= 20 ? after : 0)));
  });

  it('changes by filter through indexes sent together: each changes exactly the rows its filter keeps, or is refused alone', async () => {
    // Its own server: no change may patch more than 20 rows.
    const small = await startTestServer({ maxRowsByFilter: 20 }, { backend });
    try {
      const own = await small.client();
      expect((await own.post('/v1/collections', { name: 'ranged' })).status).to.equal(201);
      for (const field of ['score', 'name'])
        expect((await own.post('/v1/collections/ranged/indexes', { fields: [field] })).status).to.equal(201);
      // Scores 0 to 59, a few of them strings, names n00 to n11, five rows each; then 30 rows of scores from 100
      // that only a change refused reads (one that met rows the others patched would have each run again alone).
      const rows = [
        ...Array.from({ length: 60 }, (_, i) => ({ score: i % 13 === 5 ? String(i) : i, name: `n${String(i % 12).padStart(2, '0')}` })),
        ...Array.from({ length: 30 }, (_, i) => ({ score: 100 + i, name: 'x' })),
      ];
      expect((await own.post('/v1/collections/ranged/rows', rows)).status).to.equal(201);
      type Fields = { score: number | string; name: string };
      const number = (test: (score: number) => boolean) => (row: Fields) => typeof row.score === 'number' && test(row.score);
      // Each a change that sets a field of its own on the rows its filter keeps: in any order, the same rows.
      const changes: { filter: object; keeps: (row: Fields) => boolean }[] = [
        ...[0, 7, 30, 52].map((from) => ({
          filter: { score: { $gte: from, $lt: from + 5 } },
          keeps: number((s) => s >= from && s < from + 5),
        })),
        { filter: { score: { $gt: 40, $lte: 44 } }, keeps: number((s) => s > 40 && s <= 44) },
        { filter: { score: 3 }, keeps: number((s) => s === 3) },
        { filter: { score: '18' }, keeps: (row) => row.score === '18' },
        { filter: { name: 'n03' }, keeps: (row) => row.name === 'n03' },
        { filter: { name: { $gte: 'n10', $lt: 'n11' } }, keeps: (row) => row.name >= 'n10' && row.name < 'n11' },
        {
          filter: { name: { $prefix: 'n0' }, score: { $lt: 10 } },
          keeps: (row) => row.name.startsWith('n0') && number((s) => s < 10)(row),
        },
        { filter: { score: { $in: [1, 31, 59] } }, keeps: number((s) => [1, 31, 59].includes(s)) },
        // A range of ten rows, one of which the filter keeps.
        {
          filter: { score: { $gte: 20, $lt: 30 }, name: 'n02' },
          keeps: (row) => row.name === 'n02' && number((s) => s >= 20 && s < 30)(row),
        },
        // A range of every row: more keys than a change may patch, its rows read again by its whole filter.
        {
          filter: { score: { $gte: 0 }, name: { $in: ['n05', 'n06'] } },
          keeps: (row) => ['n05', 'n06'].includes(row.name) && number((s) => s >= 0)(row),
        },
      ];
      const byFilter = (filter: object) => `/v1/collections/ranged/rows?filter=${encodeURIComponent(JSON.stringify(filter))}`;
      const sent = changes.map(({ filter }, k) => own.patch<{ count: number }>(byFilter(filter), { [`c${k}`]: true }));
      // 30 rows, amid the others: refused, nothing of it written.
      const refusal = own.patch(byFilter({ score: { $gte: 100 } }), { refused: true });
      const answers = await Promise.all(sent);
      const refused = await refusal;
      expect(refused.status, refused.text).to.equal(400);
      const stored = (await own.get<Row[]>('/v1/collections/ranged/rows?limit=1000')).body;
      for (const [k, { keeps }] of changes.entries()) {
        expect(answers[k].status, answers[k].text).to.equal(200);
        const kept = rows.flatMap((row, i) => (keeps(row) ? [i + 1] : []));
        expect(answers[k].body.count, JSON.stringify(changes[k].filter)).to.equal(kept.length);
        expect(
          stored.filter((row) => row[`c${k}`] === true).map((row) => row.id),
          JSON.stringify(changes[k].filter),
        ).to.deep.equal(kept);
      }
      expect(stored.some((row) => 'refused' in row)).to.equal(false);
    } finally {
      await small.stop();
    }
  });

  if (backend === 'postgres')
    it('commits the patches, and the deletes, queued side by side together, in fewer transactions than writes', async () => {
      await seeded('fewer');
      // Each transaction that writes takes a transaction id of its own, in order: so does each read of it.
      const lastXid = async () => Number((await server.store.knex.raw('select txid_current() as xid')).rows[0].xid);
      const before = await lastXid();
      const answers = await Promise.all(
        Array.from({ length: ROWS }, (_, index) => client.patch(`/v1/collections/fewer/rows/${index + 1}`, { n: index })),
      );
      expect(answers.map((answer) => answer.status)).to.deep.equal(Array(ROWS).fill(200));
      // The server's own writes meanwhile (its pruner, its sweeper) may take a few; on a loaded host the requests
      // come over a longer time, in smaller groups (26 transactions for 40 deletes in a CI run), so the bound
      // is the writes' count: one transaction a write, as without the groups, would reach it.
      const patched = await lastXid();
      expect(patched - before - 1).to.be.below(ROWS);
      const deletes = await Promise.all(
        Array.from({ length: ROWS }, (_, index) => client.delete(`/v1/collections/fewer/rows/${index + 1}`)),
      );
      expect(deletes.map((answer) => answer.status)).to.deep.equal(Array(ROWS).fill(204));
      expect((await lastXid()) - patched - 1).to.be.below(ROWS);
    });
});
