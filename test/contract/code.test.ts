// The code itself, checked where CI runs it. The tests run TypeScript through tsx, which strips the types
// without checking them: without these, a type error or a lint finding would pass CI. The same checks
// as `npm run lint`, and Biome's warnings counted as errors.
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { expect } from 'chai';
import ts from 'typescript';
import { parse } from 'yaml';
import { runTool } from '../support/process.ts';

const root = new URL('../../', import.meta.url).pathname;

/** The longest a function of src/ may be (docs/development.md): past it, it is several ideas sharing a closure. */
const MAX_FUNCTION_LINES = 150;

describe('the code', function () {
  this.timeout(120_000);

  // One program: the benchmarks import most of src/, which a program of their own checked again.
  it('type-checks: the service, its tests, scripts, benchmarks and generated types (tsc --noEmit)', async () => {
    expect(await runTool('tsc', ['--noEmit', '-p', 'tsconfig.json'])).to.equal('');
  });

  it('lints and is formatted as biome.json says, warnings included (biome check)', async () => {
    expect(await runTool('biome', ['check', '--error-on-warnings', '.'])).to.match(/Checked \d+ files/);
  });

  it('imports only along the arrows .dependency-cruiser.cjs allows (depcruise src)', async () => {
    expect(await runTool('depcruise', ['src', '--config', '.dependency-cruiser.cjs'])).to.match(/no dependency violations found/);
  });

  it('refuses an import from a dialect, or from the SQL both share, into an area, naming the rule (dialects-below-the-areas, shared-sql-below-the-areas)', async () => {
    // A copy of the rules over a tree of four files: two of a dialect's and one of the shared SQL's, each
    // importing an operation of the rows (one of the dialect's its type alone).
    const tree = await mkdtemp(join(tmpdir(), 'rowbase-depcruise-'));
    try {
      for (const file of ['.dependency-cruiser.cjs', 'tsconfig.json']) copyFileSync(join(root, file), join(tree, file));
      mkdirSync(join(tree, 'src/db/sqlite'), { recursive: true });
      mkdirSync(join(tree, 'src/db/rows'), { recursive: true });
      mkdirSync(join(tree, 'src/db/engine/sql'), { recursive: true });
      writeFileSync(join(tree, 'src/db/rows/writes.ts'), 'export const deleteRow = () => {};\n');
      writeFileSync(
        join(tree, 'src/db/sqlite/rows.ts'),
        "import { deleteRow } from '../rows/writes.ts';\n\nexport const rows = deleteRow;\n",
      );
      writeFileSync(
        join(tree, 'src/db/sqlite/types.ts'),
        "import type { deleteRow } from '../rows/writes.ts';\n\nexport type Rows = typeof deleteRow;\n",
      );
      writeFileSync(
        join(tree, 'src/db/engine/sql/rows.ts'),
        "import { deleteRow } from '../../rows/writes.ts';\n\nexport const sql = deleteRow;\n",
      );
      const refused = await runTool('depcruise', ['src', '--config', '.dependency-cruiser.cjs'], tree).then(
        () => '',
        (error: Error) => error.message,
      );
      expect(refused).to.match(/error dialects-below-the-areas: src\/db\/sqlite\/rows\.ts → src\/db\/rows\/writes\.ts/);
      expect(refused).to.match(/error dialects-below-the-areas: src\/db\/sqlite\/types\.ts → src\/db\/rows\/writes\.ts/);
      expect(refused).to.match(/error shared-sql-below-the-areas: src\/db\/engine\/sql\/rows\.ts → src\/db\/rows\/writes\.ts/);
    } finally {
      rmSync(tree, { recursive: true, force: true });
    }
  });

  it('has no file, export or dependency that nothing uses, but those knip.jsonc names (knip)', async () => {
    expect(await runTool('knip', ['--no-progress'])).to.equal('');
  });
});

describe('the source', () => {
  const files = readdirSync(join(root, 'src'), { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.ts'))
    .map((file) => join(root, 'src', file));

  /** The src/ files each file imports, type-only imports and re-exports included. */
  const imports = new Map(
    files.map((file) => {
      const { importedFiles } = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
      const local = importedFiles.map(({ fileName }) => fileName).filter((name) => name.startsWith('.'));
      return [file, local.map((name) => resolve(dirname(file), name)).filter((name) => name.startsWith(join(root, 'src')))];
    }),
  );

  it('has no import circles, type-only imports included', () => {
    const circles: string[] = [];
    const done = new Set<string>();
    const visit = (file: string, path: string[]) => {
      if (path.includes(file))
        return void circles.push([...path.slice(path.indexOf(file)), file].map((f) => relative(root, f)).join(' → '));
      if (done.has(file)) return;
      for (const next of imports.get(file) ?? []) visit(next, [...path, file]);
      done.add(file);
    };
    for (const file of files) visit(file, []);
    expect(circles).to.deep.equal([]);
  });

  it('has no function over 150 lines: a function is a page (the migrations, tables of steps, aside)', () => {
    const long: string[] = [];
    for (const file of files.filter((each) => !each.endsWith('/migrations.ts'))) {
      const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
      const visit = (node: ts.Node) => {
        if (ts.isFunctionLike(node) && (node as ts.FunctionLikeDeclarationBase).body) {
          const first = source.getLineAndCharacterOfPosition(node.getStart(source)).line;
          const lines = source.getLineAndCharacterOfPosition(node.end).line - first + 1;
          if (lines > MAX_FUNCTION_LINES) long.push(`${relative(root, file)}:${first + 1} ${lines} lines`);
        }
        ts.forEachChild(node, visit);
      };
      visit(source);
    }
    expect(long).to.deep.equal([]);
  });

  it('chooses the data module of a dialect in one place, src/db/open-store.ts, and keeps no service locator', () => {
    const asking = files.filter((file) => /\bdialect\s*[!=]==|client\.dialect|userParams/.test(readFileSync(file, 'utf8')));
    expect(asking.map((file) => relative(root, file))).to.deep.equal([]);
  });
});

describe('the map of the code (docs/development.md)', () => {
  const tracked = readdirSync(root, { recursive: true, encoding: 'utf8' })
    .filter((path) => !/^(node_modules|\.git|tmp|data|dist)(\/|$)/.test(path))
    .map((path) => `/${path}`);

  it('names only files and folders that exist: from the root, or as the end of a path that does', () => {
    const text = readFileSync(join(root, 'docs/development.md'), 'utf8');
    const named = new Set([...text.matchAll(/`([\w./-]+\/|[\w./-]+\.(?:ts|js|cjs|json|yaml|md|sql))`/g)].map(([, path]) => path));
    const missing = [...named].filter((path) => {
      if (path.startsWith('tmp/')) return false; // made by a run, ignored by git
      if (/^(src|test|bench|scripts|generated|docs)\//.test(path) || path.startsWith('.')) {
        return !tracked.includes(`/${path.replace(/\/$/, '')}`);
      }
      return !tracked.some((candidate) => candidate.endsWith(`/${path.replace(/\/$/, '')}`));
    });
    expect(missing).to.deep.equal([]);
  });

  it('gives each tag of openapi.yaml one path: its handler module holding its operations and none other, its data, SQL and docs', async () => {
    const text = readFileSync(join(root, 'docs/development.md'), 'utf8');
    const table = text.split("### Each tag's path")[1].split('\n### ')[0];
    const rows = new Map(
      [...table.matchAll(/^\| `([\w-]+)` \|(.*)\|$/gm)].map(([, tag, cells]) => [tag, cells.split(' | ').map((cell) => cell.trim())]),
    );
    const document = parse(readFileSync(join(root, 'openapi.yaml'), 'utf8')) as {
      tags: { name: string }[];
      paths: Record<string, Record<string, { operationId?: string; tags?: string[] }>>;
    };
    const operations = new Map<string, string[]>();
    for (const item of Object.values(document.paths)) {
      // A HEAD is answered by its GET's handler (src/http/operations.ts); openFeed, by the feed (src/feed/upgrade.ts).
      for (const [method, operation] of Object.entries(item)) {
        if (method !== 'head' && operation?.operationId && operation.operationId !== 'openFeed')
          operations.set(operation.tags?.[0] ?? '', [...(operations.get(operation.tags?.[0] ?? '') ?? []), operation.operationId]);
      }
    }
    expect([...rows.keys()]).to.have.members(document.tags.map(({ name }) => name));
    for (const [tag, [handlers, data, sql]] of rows) {
      expect(handlers, tag).to.equal(`\`handlers/${tag}.ts\``);
      // The module's one export is its tag's handlers, by operationId: those of the tag, and no other.
      const module = (await import(join(root, 'src', 'handlers', `${tag}.ts`))) as Record<string, Record<string, unknown>>;
      const exported = Object.values(module).filter((value) => typeof value === 'object');
      expect(exported, tag).to.have.length(1);
      expect(Object.keys(exported[0]), tag).to.have.members(operations.get(tag) ?? []);
      for (const [, path] of `${data} ${sql}`.matchAll(/`([\w./-]+(?:\/|\.ts))`/g)) {
        expect(existsSync(join(root, 'src', path)), `${tag}: src/${path}`).to.equal(true);
      }
    }
  });
});

describe('every file of the code', () => {
  const code = ['src', 'test', 'bench', 'scripts'].flatMap((folder) =>
    readdirSync(join(root, folder), { recursive: true, encoding: 'utf8' })
      .filter((file) => /\.(ts|js|cjs|mjs)$/.test(file))
      .map((file) => join(folder, file)),
  );

  it('opens with one line that says what it is (a // comment)', () => {
    const silent = code.filter((file) => !readFileSync(join(root, file), 'utf8').startsWith('//'));
    expect(silent).to.deep.equal([]);
  });
});
