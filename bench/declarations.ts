// How long a declaration of 100 collections takes (issue 64, "Speed"; docs/performance.md): each a schema
// of 20 fields and two relation fields, 3 indexes (one unique, one of two fields), 2 relations and rules.
// `node --import tsx bench/declarations.ts [<database URL>]` (default a SQLite file of its own, removed
// after): on a new account of that database, the file's reading, a plan without and with the contract's
// diff, the apply onto the empty account, and the plan again (no change), each printed in ms.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { openStore } from '../src/db/open-store.ts';
import { parseDeclaration } from '../src/declarations/format.ts';
import { applyPlan, makePlan } from '../src/declarations/plan.ts';

const COLLECTIONS = 100;

/** The declaration: collection c<i> relates to c<i+1> and c<i+2>, restricting deletes (no circle of cascades). */
function declarationText(): string {
  const collections: Record<string, unknown> = {};
  for (let i = 0; i < COLLECTIONS; i++) {
    const properties: Record<string, unknown> = {};
    for (let field = 0; field < 20; field++)
      properties[`f${field}`] = field % 3 === 0 ? { type: 'integer' } : { type: 'string', maxLength: 200 };
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

async function timed<T>(what: string, work: () => T | Promise<T>): Promise<T> {
  const start = performance.now();
  const done = await work();
  console.log(`${what}: ${Math.round(performance.now() - start)} ms`);
  return done;
}

const dir = process.argv[2] ? undefined : await mkdtemp(join(tmpdir(), 'rowbase-declarations-'));
const store = await openStore(process.argv[2] ?? `sqlite:${join(dir as string, 'rowbase.sqlite')}`);
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
