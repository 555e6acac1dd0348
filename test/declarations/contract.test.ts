// The contract's diff of a plan (src/declarations/contract.ts, comparable.ts): what api-smart-diff reports of
// the documents whole, though it is given only the parts that bear on a change, and stand-ins of those one
// side holds alone. In the declarations' worker (aside.ts): one not made within its time is a 503, the
// worker running it ended with the jobs waiting in it; the next diff starts a worker of its own.
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { promisify } from 'node:util';
import { apiCompare } from 'api-smart-diff';
import { expect } from 'chai';
import { AccountContracts, type ContractKind } from '../../src/contract/served.ts';
import { aside } from '../../src/declarations/aside.ts';
import { targetOf } from '../../src/declarations/checks.ts';
import { type ContractChange, changeOf, comparable } from '../../src/declarations/comparable.ts';
import { contractDiffAside, diffAnswer } from '../../src/declarations/contract.ts';
import { parseDeclaration } from '../../src/declarations/format.ts';
import { canonical, type Model } from '../../src/declarations/model.ts';
import type { ApiError } from '../../src/errors.ts';

const none = () => undefined;

/**
 * The account's collections of `model` as the documents take them, without relations (whose expansions are
 * compared by name), their rules of `version` (compiled and kept by id and version).
 */
const servedOf = (model: Model, version: number) =>
  Object.entries(model.collections ?? {}).map(([name, { schema, rules }], index) => ({
    name,
    schema: schema as Record<string, unknown> | null,
    relations: [],
    rules: rules === null ? null : { collectionId: index + 1, version, rules },
    ttl: null,
  }));

describe("declarations: the contract's diff", () => {
  it('reports what api-smart-diff reports of the documents whole, for each document and viewer', async () => {
    const documents = {
      openapi: await readFile(new URL('../../openapi.yaml', import.meta.url), 'utf8'),
      asyncapi: await readFile(new URL('../../asyncapi.yaml', import.meta.url), 'utf8'),
    };
    const model = async (text: string, current: Model = {}) => targetOf(parseDeclaration(text), current, none, {});
    const people = `people:
    schema: {type: object, required: [email], properties: {email: {type: string, maxLength: 80}, age: {type: integer}, kind: {enum: [a, b]}}}
    rules: {read: true, create: authenticated}`;
    const notes =
      "notes: {schema: {type: object, $defs: {text: {type: string, maxLength: 9}}, properties: {text: {$ref: '#/$defs/text'}}}}";
    const tags = 'tags: {}';
    const base = await model(`collections:\n  ${people}\n  ${notes}\n  ${tags}\n`);
    const plans: [string, Model, Model][] = [
      ['new collections', { collections: {} }, base],
      ['collections dropped', base, { collections: {} }],
      [
        'a schema narrowed, a field made optional',
        base,
        await model(
          `collections:\n  ${people.replace('maxLength: 80', 'maxLength: 10').replace('required: [email], ', '')}\n  ${notes.replace('maxLength: 9', 'maxLength: 3')}\n  ${tags}\n`,
          base,
        ),
      ],
      [
        'a schema dropped, another set',
        base,
        await model(
          `collections:\n  people: {rules: {read: true, create: authenticated}}\n  ${notes}\n  tags: {schema: {type: object}}\n`,
          base,
        ),
      ],
      [
        'rules changed, a collection added and one dropped',
        base,
        await model(
          `collections:\n  ${people.replace('read: true', 'read: authenticated')}\n  ${notes}\n  labels: {rules: {read: true}}\n`,
          base,
        ),
      ],
    ];
    const served = new AccountContracts(documents);
    for (const [number, [plan, current, target]] of plans.entries()) {
      const made = diffAnswer({ current, target, documents });
      for (const kind of ['openapi', 'asyncapi'] as ContractKind[]) {
        for (const viewer of ['secret', 'publishable'] as const) {
          const publishable = viewer === 'publishable' ? { claims: null } : undefined;
          const [was, will] = [current, target].map((side, each) =>
            structuredClone(comparable(kind, served.built(kind, servedOf(side, 2 * number + each), publishable))),
          );
          const whole = new Map(apiCompare(was, will).diffs.map((reported) => [canonical(changeOf(reported)), changeOf(reported)]));
          // The collections the plan does not touch are not in the documents compared: the places in the
          // list of tags of those it does are not the whole documents' (docs/declarations.md).
          const listed = (changes: ContractChange[]) => changes.filter(({ path }) => !path.startsWith('/tags/'));
          expect(listed(made.documents[kind][viewer]), `${plan}: ${kind}, ${viewer}`).to.deep.equal(listed([...whole.values()]));
        }
      }
    }
  });

  it("reads each diff's rules, not those of a diff made before in the same thread", async () => {
    const documents = {
      openapi: await readFile(new URL('../../openapi.yaml', import.meta.url), 'utf8'),
      asyncapi: await readFile(new URL('../../asyncapi.yaml', import.meta.url), 'utf8'),
    };
    const readable = (read: string) => targetOf(parseDeclaration(`collections: {people: {rules: {read: ${read}}}}\n`), {}, none, {});
    const anonymous = (target: Model) => diffAnswer({ current: {}, target, documents }).documents.openapi.publishable;
    // The first collection of each: its rules were kept by their place, and the second diff found the first's.
    expect(anonymous(await readable('true'))).to.not.deep.equal([]);
    expect(anonymous(await readable('authenticated'))).to.deep.equal([]);
  });

  it('answers 503 for a diff not made within its time, and makes the next in a new worker', async function () {
    // The next diff's worker starts cold (under tsx, its modules loaded again): seconds at load.
    this.timeout(60_000);
    const documents = {
      openapi: await readFile(new URL('../../openapi.yaml', import.meta.url), 'utf8'),
      asyncapi: await readFile(new URL('../../asyncapi.yaml', import.meta.url), 'utf8'),
    };
    const options = { allowPrivate: true };
    const none = () => undefined;
    const current = await targetOf(parseDeclaration('collections: {people: {}}\n'), {}, none, options);
    const target = await targetOf(
      parseDeclaration('collections: {people: {schema: {type: object, properties: {name: {type: string}}}}}\n'),
      current,
      none,
      options,
    );
    const refusal = (error: ApiError) => error;
    // No worker answers within a millisecond: it has not even started. A job waiting behind it in that
    // worker is refused with it.
    const diff = contractDiffAside(current, target, documents, 1);
    const waiting = aside({ readDeclaration: 'version: 1\n' });
    const waitingDiff = contractDiffAside(current, target, documents);
    const stopped = await diff.then(() => undefined, refusal);
    expect(stopped?.status).to.equal(503);
    expect(stopped?.code).to.equal('unavailable');
    expect(stopped?.detail).to.match(/took longer than 0\.001 s and was stopped/);
    expect((await waiting.then(() => undefined, refusal))?.code).to.equal('unavailable');
    // A plan's diff waiting there is told so, not that its own diff failed.
    expect((await waitingDiff.then(() => undefined, refusal))?.detail).to.match(/another plan ran past its time/);

    const made = await contractDiffAside(current, target, documents);
    expect(made.documents.openapi.secret.some(({ path }) => path.endsWith('/properties/name'))).to.equal(true);
  });

  it("makes the server's own heap as small as it can be as the worker starts, its young generation at its smallest", async function () {
    // Node 20's V8 takes the memory-reducing collection for an ordinary one (src/memory.ts, reduceNow).
    if (Number(process.versions.node.split('.')[0]) < 22) this.skip();
    this.timeout(60_000);
    // A process started as bin/rowbase starts the server, busy first (objects that live a while, which grow
    // V8's young generation to its largest), then asking the worker its first job.
    const script = `
      import { getHeapSpaceStatistics } from 'node:v8';
      import { aside } from ${JSON.stringify(new URL('../../src/declarations/aside.ts', import.meta.url).href)};
      const young = () => getHeapSpaceStatistics().find(({ space_name }) => space_name === 'new_space').physical_space_size;
      let kept = [];
      for (let i = 0; i < 3e6; i++) {
        kept.push({ i, text: 'x' + i });
        if (kept.length > 300000) kept = [];
      }
      const before = young();
      await aside({ heapSpaces: true });
      console.log(JSON.stringify({ before, after: young() }));
      process.exit(0);`;
    const { before, after } = (await printedBy(script, 8)) as { before: number; after: number };
    expect(before).to.be.above(8 * 1024 * 1024);
    expect(after).to.be.at.most(2 * 1024 * 1024);
  });

  it("holds the server's young generation at 16 MB at most while held, a full collection's shrink included, and lets V8 grow it again once released", async function () {
    this.timeout(60_000);
    // A process started as bin/rowbase starts the server, busy a turn of the event loop at a time (objects
    // that live a while, which grow V8's young generation to its largest, and full collections that shrink
    // it) while held, then once released. The size held is read after a full collection: while one marks,
    // Node 24's V8 lets the young generation grow past its size for a moment, a page at a time.
    const script = `
      import { getHeapSpaceStatistics } from 'node:v8';
      import { setImmediate as nextTurn } from 'node:timers/promises';
      import { collector, holdYoung } from ${JSON.stringify(new URL('../../src/memory.ts', import.meta.url).href)};
      const capacity = () => getHeapSpaceStatistics().find(({ space_name }) => space_name === 'new_space').space_size;
      const busy = async () => {
        let kept = [];
        for (let turn = 0; turn < 300; turn++) {
          for (let i = 0; i < 10000; i++) kept.push({ i, text: 'x' + i });
          if (kept.length > 300000) kept = [];
          await nextTurn();
        }
      };
      const collect = collector();
      const release = holdYoung();
      await busy();
      collect();
      const held = capacity();
      release();
      await busy();
      console.log(JSON.stringify({ held, released: capacity() }));
      process.exit(0);`;
    const { held, released } = (await printedBy(script)) as { held: number; released: number };
    expect(held).to.be.at.most(16 * 1024 * 1024);
    expect(released).to.be.above(16 * 1024 * 1024);
  });

  for (const started of [undefined, 16]) {
    it(`keeps the worker's young generation at 8 MB, the process started ${started ? 'with a larger one' : 'as Node sizes it'}`, async function () {
      this.timeout(60_000);
      // A process started as Node sizes V8's young generation (as bin/rowbase starts the server), or with
      // --max-semi-space-size (larger here), which overrides a worker's resourceLimits. Reading a declaration
      // of 100 collections three times fills the worker's young generation to what it may hold; then the
      // worker reports its heap's spaces.
      const script = `
      import { aside } from ${JSON.stringify(new URL('../../src/declarations/aside.ts', import.meta.url).href)};
      let text = 'version: 1\\ncollections:\\n';
      for (let i = 0; i < 100; i++) {
        text += \`  c\${i}:\\n    schema:\\n      type: object\\n      properties:\\n\`;
        for (let field = 0; field < 20; field++) text += \`        f\${field}: {type: string, maxLength: \${200 + i}}\\n\`;
      }
      for (let round = 0; round < 3; round++) await aside({ readDeclaration: text });
      const spaces = await aside({ heapSpaces: true });
      console.log(JSON.stringify(spaces));
      process.exit(0);`;
      const spaces = (await printedBy(script, started)) as {
        space_name: string;
        space_size: number;
        physical_space_size: number;
        space_used_size: number;
      }[];
      const young = spaces.find(({ space_name }) => space_name === 'new_space') ?? {
        space_size: 0,
        physical_space_size: 0,
        space_used_size: 0,
      };
      expect(young.space_used_size).to.be.above(0);
      expect(young.physical_space_size).to.be.at.most(8 * 1024 * 1024);
      // Sized so from its start: it needs no growth, which the server's thread holds back while it lives.
      expect(young.space_size).to.equal(8 * 1024 * 1024);
    });
  }
});

/** What `script` (an ES module) prints as JSON, run in a Node process of its own whose semi-spaces are `semiSpaceMb` MB (else Node's own). */
async function printedBy(script: string, semiSpaceMb?: number): Promise<unknown> {
  const { stdout } = await promisify(execFile)(
    process.execPath,
    [...(semiSpaceMb ? [`--max-semi-space-size=${semiSpaceMb}`] : []), '--import', 'tsx', '--input-type=module', '-e', script],
    { cwd: new URL('../..', import.meta.url) },
  );
  return JSON.parse(stdout);
}
