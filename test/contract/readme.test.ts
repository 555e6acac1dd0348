// README.md's newcomer path, run as written: the shell commands of "First requests", "Typed collections", "Keys and scopes",
// "Apps", "Plans and usage" and "The real-time feed" go to bash in the repository folder (curl, bin/rowbase) against a real
// `rowbase serve` on a temp SQLite file, in the order the README gives them, and what each prints must
// be the output the README shows under it (`# …` lines). The README sets `PORT=8080` once, and the
// commands use `$PORT`: the test sets it to the port of its server instead, and carries it, as `KEY`,
// from one command to the next. `npx -y wscat -c <url>` is stood in for by a
// WebSocket client on the same URL (wscat is not a dependency), and the README's `< …` lines are the feed
// messages it must receive. Every HTTP response curl sees is checked against openapi.yaml, every feed
// message against asyncapi.yaml. Times, keys and their prefixes differ run to run: both sides show them
// as <time>, <key>, <prefix>. The variables a command sets whose names end in KEY or TOKEN (`KEY`, `READ_KEY`,
// `USER_TOKEN`) are kept for the commands after it, as a terminal keeps them.
// The README also names files (links, `src/…` paths), and so does each page of docs/, which the README
// links: each file, and each heading a link points to, must exist, so that a moved file or section
// fails here rather than in a reader's hands. The docs' shell examples are not run.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join, relative } from 'node:path';
import { expect } from 'chai';
import { checkResponse } from '../support/contract.ts';
import { FeedClient } from '../support/feed.ts';
import { type ServeProcess, Workspace } from '../support/process.ts';

const root = new URL('../../', import.meta.url).pathname;
const sections = ['First requests', 'Typed collections', 'Keys and scopes', 'Apps', 'Plans and usage', 'The real-time feed'];

/** One thing the README tells a newcomer to do, with what it says they will see. */
type Step =
  | { kind: 'shell'; command: string; expected: string[] }
  | { kind: 'feed'; url: string; expected: string[] }
  | { kind: 'messages'; expected: string[] };

/** The steps of `sections`, in README order: fenced `sh` blocks and the `< …` message blocks. */
function readmeSteps(readme: string): Step[] {
  const steps: Step[] = [];
  const wanted = readme.split(/^## /m).filter((section) => sections.some((name) => section.startsWith(`${name}\n`)));
  for (const section of wanted) {
    for (const [, indent, info, body] of section.matchAll(/^( *)```(\w*)\n([\s\S]*?)\n *```$/gm)) {
      const lines = body.split('\n').map((line) => line.slice(indent.length));
      if (info === 'sh') steps.push(...shellSteps(lines));
      else if (info === '' && lines.every((line) => line.startsWith('< '))) {
        steps.push({ kind: 'messages', expected: lines.map((line) => line.slice(2)) });
      }
    }
  }
  return steps;
}

/** Commands (a line, with its `\` continuations), each followed by the `# ` lines of its output. */
function shellSteps(lines: string[]): Step[] {
  const steps: Step[] = [];
  for (let index = 0; index < lines.length; index++) {
    if (lines[index].trim() === '' || lines[index].startsWith('#')) continue;
    let command = lines[index];
    while (command.endsWith('\\')) command += `\n${lines[++index]}`;
    const expected: string[] = [];
    while (lines[index + 1]?.startsWith('# ')) expected.push(lines[++index].slice(2));
    const wscat = /^npx -y wscat -c "([^"]+)"$/.exec(command);
    if (wscat) steps.push({ kind: 'feed', url: wscat[1], expected: expected.map((line) => line.replace(/^< /, '')) });
    else steps.push({ kind: 'shell', command, expected });
  }
  return steps;
}

/** A document's relative links, as absolute paths from `dir` (its folder), each with the heading it points to. */
function links(text: string, dir: string): { file: string; heading?: string }[] {
  return [...text.matchAll(/\]\(([^)\s]+)\)/g)]
    .map(([, target]) => target)
    .filter((target) => !/^[a-z]+:/.test(target))
    .map((target) => {
      const [path, heading] = target.split('#');
      return { file: path === '' ? '' : join(dir, path), heading };
    })
    .filter(({ file }) => file !== '');
}

/**
 * The files a document names, as absolute paths: its relative links (from `dir`), and, from the
 * repository's root, the paths it quotes (`src/…`, `bench/…`, …) and the files it quotes by name
 * (`openapi.yaml`).
 */
function namedFiles(text: string, dir: string): string[] {
  const paths = [...text.matchAll(/`((?:src|test|bench|scripts|generated|bin|docs|\.ci)\/[\w./-]*)`/g)].map(([, path]) => path);
  const names = [...text.matchAll(/`(\w+\.(?:md|yaml|json))`/g)].map(([, file]) => file);
  return [...links(text, dir).map(({ file }) => file), ...[...paths, ...names].map((path) => join(root, path))];
}

/** A heading's anchor as GitHub makes it: lower case, punctuation dropped, spaces as hyphens. */
const slug = (title: string) =>
  title
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, '')
    .replace(/ /g, '-');

/** What may differ from run to run, made the same on both sides. */
const normalize = (text: string) =>
  text
    .replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z/g, '<time>')
    .replace(/\brb_[A-Za-z0-9_-]{32}(?![A-Za-z0-9_-])/g, '<key>')
    .replace(/\brb_[A-Za-z0-9_-]{8}(?![A-Za-z0-9_-])/g, '<prefix>')
    .replace(/urn:rowbase:request:[A-Za-z0-9._:-]+/g, 'urn:rowbase:request:<id>');

/** Output lines as a terminal shows them: no carriage returns, no trailing empty line. */
const outputLines = (text: string) =>
  text
    .replace(/\r/g, '')
    .replace(/\n$/, '')
    .split('\n')
    .filter((line, i, all) => line !== '' || i < all.length - 1);

describe('README.md', () => {
  let workspace: Workspace;
  let server: ServeProcess;
  let files: string;

  before(async () => {
    workspace = await Workspace.create();
    // The quick start's commands run here back to back, faster than anyone types them: on a quiet host
    // the free plan's 10 requests a second refused some (429). Its quota, which the answers' RateLimit-*
    // headers show, stays; what the README prints does not depend on the rate.
    const plan = await workspace.run(['plans', 'set', 'free', '--quota', '10000', '--period', 'month', '--no-rate']);
    expect(plan.code, plan.stderr).to.equal(0);
    server = await workspace.serve();
    files = await mkdtemp(join(tmpdir(), 'rowbase-readme-'));
  });
  after(async () => {
    await workspace.cleanUp();
    await rm(files, { recursive: true, force: true });
  });

  it('starts with npm install, npm start, then npm test, and npm start is rowbase serve', async () => {
    const readme = await readFile(join(root, 'README.md'), 'utf8');
    const first = /```sh\n([\s\S]*?)\n```/.exec(readme)?.[1] ?? '';
    expect(first.split('\n').map((line) => line.split('#')[0].trim())).to.deep.equal(['npm install', 'npm start', 'npm test']);
    const manifest = JSON.parse(await readFile(join(root, 'package.json'), 'utf8'));
    // Run as an executable, by its first line.
    expect(manifest.scripts.start).to.equal('bin/rowbase serve');
    expect((await stat(join(root, 'bin/rowbase'))).mode & 0o111, 'bin/rowbase is executable').to.equal(0o111);
    expect((await readFile(join(root, 'bin/rowbase'), 'utf8')).split('\n', 1)[0]).to.match(/^#!\/usr\/bin\/env (-S )?node( |$)/);
  });

  it('links to and names only files that exist', async () => {
    const readme = await readFile(join(root, 'README.md'), 'utf8');
    const named = namedFiles(readme, root);
    expect(named).to.have.length.of.at.least(10);
    const missing = named.filter((path) => !existsSync(path));
    expect(missing.map((path) => relative(root, path))).to.deep.equal([]);
  });

  it('stays a page a newcomer reads: under 250 lines, the rules in docs/', async () => {
    const readme = await readFile(join(root, 'README.md'), 'utf8');
    expect(readme.split('\n').length).to.be.below(250);
  });

  it('links every page of docs/', async () => {
    const readme = await readFile(join(root, 'README.md'), 'utf8');
    const pages = (await readdir(join(root, 'docs'))).filter((name) => name.endsWith('.md'));
    expect(pages).to.include.members(['api.md', 'feed.md', 'operations.md', 'development.md']);
    const linked = new Set(links(readme, root).map(({ file }) => relative(root, file)));
    expect(pages.filter((page) => !linked.has(`docs/${page}`))).to.deep.equal([]);
  });

  it('links, in README.md and every page of docs/, only to files and headings that exist', async () => {
    const documents = [
      'README.md',
      ...(await readdir(join(root, 'docs'))).filter((name) => name.endsWith('.md')).map((name) => `docs/${name}`),
    ];
    const broken: string[] = [];
    for (const document of documents) {
      const text = await readFile(join(root, document), 'utf8');
      const dir = dirname(join(root, document));
      for (const path of namedFiles(text, dir)) if (!existsSync(path)) broken.push(`${document}: ${relative(root, path)}`);
      for (const { file, heading } of links(text, dir)) {
        if (heading === undefined || !file.endsWith('.md') || !existsSync(file)) continue;
        const slugs = [...(await readFile(file, 'utf8')).matchAll(/^#+ (.+)$/gm)].map(([, title]) => slug(title));
        if (!slugs.includes(heading)) broken.push(`${document}: ${relative(root, file)}#${heading}`);
      }
    }
    expect(broken).to.deep.equal([]);
  });

  it('lists every variable the service reads (src/config.ts) in the configuration table of docs/operations.md, which it links', async () => {
    const config = await readFile(join(root, 'src/config.ts'), 'utf8');
    const read = [...config.matchAll(/\benv\.([A-Z][A-Z0-9_]*)|\(env, '([A-Z][A-Z0-9_]*)'/g)].map(
      ([, field, argument]) => field ?? argument,
    );
    expect(read).to.have.length.of.at.least(10);
    const readme = await readFile(join(root, 'README.md'), 'utf8');
    expect(readme).to.include('(docs/operations.md#configuration)');
    const operations = await readFile(join(root, 'docs/operations.md'), 'utf8');
    const section = operations.split(/^## /m).find((part) => part.startsWith('Configuration\n')) ?? '';
    const listed = [...section.matchAll(/^\| `([A-Z][A-Z0-9_]*)` \|/gm)].map(([, name]) => name);
    expect([...new Set(listed)].sort()).to.deep.equal([...new Set(read)].sort());
  });

  it('sets the port once, in PORT, and every example reaches the service through $PORT', async () => {
    const steps = readmeSteps(await readFile(join(root, 'README.md'), 'utf8'));
    const commands = steps.flatMap((step) => (step.kind === 'shell' ? [step.command] : step.kind === 'feed' ? [step.url] : []));
    expect(commands.filter((command) => /^PORT=/.test(command)).map((command) => command.split('#')[0].trim())).to.deep.equal([
      'PORT=8080',
    ]);
    expect(commands.filter((command) => /:\d{2,5}\b/.test(command))).to.deep.equal([]);
    expect(commands.filter((command) => command.includes(':$PORT/')).length).to.be.at.least(10);
  });

  it('gives a quick start whose every command answers what it shows', async () => {
    const steps = readmeSteps(await readFile(join(root, 'README.md'), 'utf8'));
    // A README reorganised past this parser must fail here, not pass with nothing run.
    expect(steps.filter((step) => step.kind === 'shell')).to.have.length.of.at.least(10);
    expect(steps.filter((step) => step.kind === 'messages')).to.have.length.of.at.least(1);

    const port = new URL(server.url).port;
    let variables: Record<string, string> = {};
    const feeds: FeedClient[] = [];
    try {
      for (const step of steps) {
        if (step.kind === 'shell') {
          const ran = await runShell(step.command.replace(/^PORT=8080\b/, `PORT=${port}`), variables);
          variables = ran.variables;
          expect(ran.code, `${step.command}\nexited ${ran.code}: ${ran.stderr}`).to.equal(0);
          if (step.expected.length > 0) {
            expect(outputLines(normalize(ran.stdout)), step.command).to.deep.equal(step.expected.map(normalize));
          }
        } else if (step.kind === 'feed') {
          const url = new URL(step.url.replaceAll('$KEY', variables.KEY ?? '').replaceAll('$PORT', variables.PORT ?? ''));
          const apiKey = url.searchParams.get('api_key') ?? undefined;
          url.searchParams.delete('api_key');
          const feed = await FeedClient.open(server.url, apiKey, Object.fromEntries(url.searchParams));
          feeds.push(feed);
          const shown = feed.messages.slice(0, step.expected.length).map((message) => normalize(JSON.stringify(message)));
          expect(shown, step.url).to.deep.equal(step.expected.map(normalize));
        } else {
          const feed = feeds.at(-1);
          if (!feed) throw new Error('the README shows feed messages before it opens a feed');
          const changes = await feed.changesCount(step.expected.length);
          expect(changes.map((message) => normalize(JSON.stringify(message)))).to.deep.equal(step.expected.map(normalize));
        }
      }
    } finally {
      for (const feed of feeds) await feed.close();
    }
  });

  /**
   * Runs `command` in bash in the repository folder with `variables` set (`PORT`, `KEY`, `READ_KEY`,
   * `USER_TOKEN`), as a newcomer's terminal would, and returns what it printed and the variables it left:
   * PORT and those ending in KEY or TOKEN. curl is wrapped to also record each response, which is checked against openapi.yaml.
   */
  async function runShell(command: string, variables: Record<string, string>) {
    const headers = join(files, 'headers');
    const output = join(files, 'output');
    const variablesFile = join(files, 'variables');
    const script = [
      `curl() { rm -f '${headers}'; command curl -D '${headers}' "$@" | tee '${output}'; return "\${PIPESTATUS[0]}"; }`,
      command,
      'status=$?',
      `for name in $(compgen -v | grep -E '^([A-Z_]*(KEY|TOKEN)|PORT)$'); do printf '%s=%s\\n' "$name" "\${!name}"; done > '${variablesFile}'`,
      'exit $status',
    ].join('\n');
    const child = spawn('bash', ['-c', script], {
      cwd: root,
      env: {
        PATH: [dirname(process.execPath), process.env.PATH].join(delimiter),
        HOME: process.env.HOME,
        DATABASE_URL: workspace.databaseUrl,
        LOG_LEVEL: 'info',
        // Unset until the README sets them, as in a new terminal.
        ...variables,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => {
      stdout += chunk;
    });
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
    });
    const code = await new Promise<number | null>((resolve, reject) => {
      child.once('error', reject);
      child.once('close', resolve);
    });
    if (command.startsWith('curl ')) await checkCurl(command.replaceAll('$PORT', variables.PORT ?? ''), headers, output);
    const left = (await readFile(variablesFile, 'utf8')).split('\n').filter((line) => line !== '');
    return {
      code,
      stdout,
      stderr,
      variables: Object.fromEntries(left.map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)])),
    };
  }
});

/** The response curl recorded for `command`, checked against openapi.yaml. */
async function checkCurl(command: string, headersFile: string, outputFile: string) {
  const [statusLine, ...headerLines] = (await readFile(headersFile, 'utf8')).trim().split(/\r?\n/);
  const status = Number(statusLine.split(' ')[1]);
  const headers = new Headers();
  for (const line of headerLines) headers.append(line.slice(0, line.indexOf(':')), line.slice(line.indexOf(':') + 1).trim());
  let text = await readFile(outputFile, 'utf8');
  if (/ -o \/dev\/null\b/.test(command)) text = '';
  else if (/ -\w*i\w* /.test(command)) text = text.slice(text.indexOf('\r\n\r\n') + 4);
  const method = /-X (\w+)/.exec(command)?.[1] ?? (/ -d /.test(command) ? 'POST' : 'GET');
  const path = /(?:localhost|127\.0\.0\.1):\d+(\/[^\s'"?]*)/.exec(command)?.[1] ?? '/';
  checkResponse({ method, path, status, headers, text });
}
