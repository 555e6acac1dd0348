// declaration-100's client (issue 64, "Speed"; docs/performance.md): a declaration of 100 collections, each
// a schema of 20 fields and two relation fields, 3 indexes (one unique, one of two fields), 2 relations and
// rules, planned and applied over HTTP onto an account of no collections, while another account reads its
// rows one at a time: whether the plan and the apply hold up that account's requests.
//
//   node --import tsx bench/declarations.ts '<DeclarationsJob as JSON>'   (run.ts, in `npm run bench`)
//   node --import tsx bench/declarations.ts [<database URL>]              (alone, in one process: each stage
//                                                                         timed, for `node --cpu-prof`)
//
// The job: the other account's reads alone for `warmupSeconds`; then `POST /v1/declaration/plan` (with the
// contract's diff, as the API always plans), `POST /v1/declaration/apply` of the declaration (planned again
// and applied, as `rowbase apply -f` does), and the plan again (no change), each timed, the reads going on
// throughout. Prints one JSON line: Measured, the reads as its requests (p50 and p99 over the whole
// window), and `declarations`: each stage's time and the reads' p99 and longest during it. A stage not a
// 200, or a plan again that is not empty, counts as a failure.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, request } from 'undici';
import { stringify } from 'yaml';
import { type DeclarationsMeasured, measuredOf, monotonicUs, percentile } from './measure.ts';

const COLLECTIONS = 100;

export interface DeclarationsJob {
  url: string;
  /** An admin key of an account of no collections, which the declaration is applied onto. */
  key: string;
  /** A key of another account, and the paths of its rows it reads (`/v1/collections/bench/rows/<id>`), picked at random. */
  otherKey: string;
  otherCollection: string;
  otherRows: number;
  warmupSeconds: number;
  timeoutSeconds: number;
}

/**
 * The declaration: collection c<i> relates to c<i+1> and c<i+2>, restricting deletes (no circle of
 * cascades); each schema its own (its strings' maxLength), as an app's are, so that each is compiled.
 */
export function declarationText(): string {
  const collections: Record<string, unknown> = {};
  for (let i = 0; i < COLLECTIONS; i++) {
    const properties: Record<string, unknown> = {};
    for (let field = 0; field < 20; field++)
      properties[`f${field}`] = field % 3 === 0 ? { type: 'integer' } : { type: 'string', maxLength: 200 + i };
    properties.a_id = { type: ['integer', 'null'] };
    properties.b_id = { type: ['integer', 'null'] };
    collections[`c${i}`] = {
      schema: { type: 'object', properties },
      indexes: [{ fields: ['f1'], unique: true }, { fields: ['f2'] }, { fields: ['f4', 'f5'] }],
      relations: {
        a: { field: 'a_id', collection: `c${(i + 1) % COLLECTIONS}` },
        b: { field: 'b_id', collection: `c${(i + 2) % COLLECTIONS}` },
      },
      rules: { read: true, create: 'authenticated', update: { owner: { $auth: 'sub' } } },
    };
  }
  return stringify({ version: 1, collections });
}

/** The job's run, over HTTP; its Measured line printed. */
async function overHttp(job: DeclarationsJob): Promise<void> {
  const timeout = job.timeoutSeconds * 1000;
  const dispatcher = new Agent({ connections: 2, headersTimeout: timeout, bodyTimeout: timeout });
  const statusCodes: Record<string, number> = {};
  let failures = 0;
  // The other account's reads: each one's start and latency (ms, of performance.now()).
  const reads: [number, number][] = [];
  let reading = true;
  const readLoop = (async () => {
    while (reading) {
      const id = 1 + Math.floor(Math.random() * job.otherRows);
      const started = performance.now();
      const { statusCode, body } = await request(`${job.url}/v1/collections/${job.otherCollection}/rows/${id}`, {
        dispatcher,
        headers: { authorization: `Bearer ${job.otherKey}` },
      });
      await body.text();
      reads.push([started, performance.now() - started]);
      statusCodes[statusCode] = (statusCodes[statusCode] ?? 0) + 1;
      if (statusCode !== 200) failures++;
    }
  })();
  const stage = async (path: string, body: unknown): Promise<{ ms: number; window: [number, number]; answer: unknown }> => {
    const started = performance.now();
    const { statusCode, body: answer } = await request(`${job.url}${path}`, {
      dispatcher,
      method: 'POST',
      headers: { authorization: `Bearer ${job.key}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    const text = await answer.text();
    const finished = performance.now();
    if (statusCode !== 200) {
      failures++;
      process.stderr.write(`declarations: ${path} answered ${statusCode}: ${text.slice(0, 500)}\n`);
    }
    return { ms: finished - started, window: [started, finished], answer: statusCode === 200 ? JSON.parse(text) : undefined };
  };

  const startedUs = monotonicUs();
  const warm = performance.now();
  await new Promise((resolve) => setTimeout(resolve, job.warmupSeconds * 1000));
  const before: [number, number] = [warm, performance.now()];
  const declaration = declarationText();
  const plan = await stage('/v1/declaration/plan', { declaration });
  const apply = await stage('/v1/declaration/apply', { declaration });
  const again = await stage('/v1/declaration/plan', { declaration });
  if ((again.answer as { changes?: unknown[] } | undefined)?.changes?.length !== 0) failures++;
  reading = false;
  await readLoop;
  const finishedUs = monotonicUs();
  await dispatcher.close();

  /** The reads that were under way at some time of `[from, to]`: their p99 and the longest. */
  const during = ([from, to]: [number, number]) => {
    const latencies = reads
      .filter(([started, ms]) => started <= to && started + ms >= from)
      .map(([, ms]) => ms)
      .sort((a, b) => a - b);
    return { p99Ms: percentile(latencies, 0.99), maxMs: latencies.at(-1) ?? Number.NaN, reads: latencies.length };
  };
  const declarations: DeclarationsMeasured = {
    collections: COLLECTIONS,
    changes: ((plan.answer as { changes?: unknown[] } | undefined)?.changes ?? []).length,
    planMs: plan.ms,
    applyMs: apply.ms,
    replanMs: again.ms,
    before: during(before),
    plan: during(plan.window),
    apply: during(apply.window),
  };
  const measured = measuredOf(
    reads.map(([, ms]) => ms),
    reads.length,
    [startedUs, finishedUs],
    failures,
    statusCodes,
  );
  process.stdout.write(`${JSON.stringify({ ...measured, declarations })}\n`);
}

/** Each stage in this process against the database (a SQLite file of its own by default, removed after), timed. */
async function inProcess(databaseUrl: string | undefined): Promise<void> {
  const { openStore } = await import('../src/db/open-store.ts');
  const { parseDeclaration } = await import('../src/declarations/format.ts');
  const { applyPlan, makePlan } = await import('../src/declarations/plan.ts');
  const timed = async <T>(what: string, work: () => T | Promise<T>): Promise<T> => {
    const start = performance.now();
    const done = await work();
    console.log(`${what}: ${Math.round(performance.now() - start)} ms`);
    return done;
  };
  const dir = databaseUrl ? undefined : await mkdtemp(join(tmpdir(), 'rowbase-declarations-'));
  const store = await openStore(databaseUrl ?? `sqlite:${join(dir as string, 'rowbase.sqlite')}`);
  try {
    const { key } = await store.createKey(`declarations-${Date.now()}`, undefined, {});
    const principal = await store.findPrincipal(key as string);
    const accountId = principal?.accountId as number;
    const options = { maxCollections: 10_000, maxWebhooks: 100, allowPrivate: false };
    const secrets = () => undefined;
    const [openapi, asyncapi] = await Promise.all(['openapi.yaml', 'asyncapi.yaml'].map((name) => readFile(name, 'utf8')));
    const text = declarationText();
    const declaration = await timed(`read the file (${text.length} bytes)`, () => parseDeclaration(text));
    const plan = await timed('plan', () => makePlan(store, accountId, declaration, secrets, options));
    await timed('plan with the contract diff', () =>
      makePlan(store, accountId, declaration, secrets, { ...options, documents: { openapi, asyncapi } }),
    );
    await timed(`apply (${plan.changes.length} changes)`, () => applyPlan(store, accountId, plan, secrets, options));
    await timed('plan again (no change)', () => makePlan(store, accountId, declaration, secrets, options));
  } finally {
    await store.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  }
}

if (process.argv[2]?.startsWith('{')) await overHttp(JSON.parse(process.argv[2]) as DeclarationsJob);
else await inProcess(process.argv[2]);
