// What a group of patches costs SQLite's writer, measured on the driver alone: no HTTP, no load
// generator, nothing else on the machine's two cores but this process. `npm run bench` measures
// patch end to end; this says where its writer's time goes, with far less noise.
//
//   node --import tsx bench/patch-cost.ts [rows]
//
// It seeds a fresh SQLite file in a temp folder through rowbase's own data layer (100,000 rows
// `{score, name, text}` by default, with the sort index on score that list makes), then runs
// rowbase's patch statement (sqlite-procedures.ts) on Knex's writer connection, as the server does,
// one group after another: groups of 1, 3 and 10 patches of random rows, of `score` (its sort key
// moves) and of `name` (no index: no key moves). For each it prints the process's CPU time per patch
// (user and system: the driver's thread, the main thread and the checkpoints together) and the wall
// time, and from groups of 3 and 10 the cost of a statement itself and of each patch in it (a group of
// one has a statement of its own, without the temporary table of a SELECT's rows).
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import type sqlite3 from 'sqlite3';
import { openDatabase } from '../src/db/connect.ts';
import { patchStatements } from './patch-statements.ts';
import { seedFile } from './seed-file.ts';

const rows = Number(process.argv[2] ?? 100_000);
/** Patches measured per group size and field, after as many again not measured. */
const PATCHES = 30_000;
const WARM_UP = 3_000;

const work = mkdtempSync(join(os.tmpdir(), 'rowbase-patch-cost-'));
const file = join(work, 'rowbase.sqlite');
const accountId = await seedFile(file, rows);
const db = await openDatabase(`sqlite:${file}`);
try {
  // The writer, as the server has it: Knex's one connection, with the views the statement writes through.
  const connection = (await db.knex.client.acquireConnection()) as sqlite3.Database;
  // The statement for each group's size, as in the server (patchSql); a failed prepare fails its first run.
  const statements = patchStatements((sql) => connection.prepare(sql));
  const run = (params: unknown[], size: number) =>
    new Promise<unknown[]>((resolve, reject) =>
      statements.forGroup(size).all(params, (error, answered) => (error ? reject(error) : resolve(answered))),
    );
  const group = (size: number, field: 'score' | 'name') => {
    const patches = Array.from({ length: size }, () => {
      const value = field === 'score' ? Math.floor(Math.random() * 1_000_000) : `patched ${Math.random()}`;
      return [1 + Math.floor(Math.random() * rows), [[`$."${field}"`, JSON.stringify(value)]]];
    });
    return [accountId, 'bench', JSON.stringify(patches), new Date().toISOString()];
  };
  const measure = async (size: number, field: 'score' | 'name') => {
    for (let done = 0; done < WARM_UP; done += size) await run(group(size, field), size);
    const cpu = process.cpuUsage();
    const started = performance.now();
    let done = 0;
    for (; done < PATCHES; done += size) {
      const answered = await run(group(size, field), size);
      if (answered.length !== size) throw new Error(`a group of ${size} answered ${answered.length} rows`);
    }
    const { user, system } = process.cpuUsage(cpu);
    return { cpu: (user + system) / done, user: user / done, system: system / done, wall: ((performance.now() - started) * 1000) / done };
  };

  process.stdout.write(`${os.availableParallelism()} cores, Node ${process.version}, ${rows.toLocaleString('en-US')} rows\n`);
  process.stdout.write('field  group   CPU µs/patch (user + system)   wall µs/patch\n');
  for (const field of ['score', 'name'] as const) {
    const cost: Record<number, number> = {};
    for (const size of [1, 3, 10]) {
      const m = await measure(size, field);
      cost[size] = m.cpu;
      const cpu = `${m.cpu.toFixed(1)} (${m.user.toFixed(1)} + ${m.system.toFixed(1)})`;
      process.stdout.write(`${field.padEnd(6)} ${String(size).padStart(5)}   ${cpu.padEnd(28)} ${m.wall.toFixed(1).padStart(14)}\n`);
    }
    // cost(size) = statement / size + patch, fitted to groups of 3 and 10 (one statement's SQL).
    const statementCost = ((cost[3] - cost[10]) * 30) / 7;
    process.stdout.write(
      `${field}: a statement ${statementCost.toFixed(0)} µs, each patch in it ${(cost[10] - statementCost / 10).toFixed(0)} µs\n`,
    );
  }
  for (const statement of statements.prepared()) await new Promise<void>((resolve) => statement.finalize(() => resolve()));
  await db.knex.client.releaseConnection(connection);
} finally {
  await db.close();
  rmSync(work, { recursive: true, force: true });
}
