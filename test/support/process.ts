// Real `bin/rowbase` processes for tests: the CLI run to its end, and `rowbase serve` on a free port; and
// the project's own tools (node_modules/.bin), run to their end. Each workspace is a temp folder holding the SQLite file; `cleanUp()` kills whatever still runs in it
// and removes the folder. Nothing here sleeps: every wait ends on an event (a line, an exit).
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { expect } from 'chai';

const rowbaseExecutable = fileURLToPath(new URL('../../bin/rowbase', import.meta.url));
const projectRoot = fileURLToPath(new URL('../../', import.meta.url));
const run = promisify(execFile);

/**
 * Runs one of the project's tools (`tsc`, `biome`, a generator) from node_modules/.bin to its end, in
 * `cwd` (default: the project's folder), with `environment` added to this process's (default: nothing
 * added), and gives what it printed; its failure says what it printed.
 */
export async function runTool(tool: string, args: string[], cwd = projectRoot, environment: Record<string, string> = {}): Promise<string> {
  try {
    const env = { ...process.env, ...environment };
    const { stdout, stderr } = await run(join(projectRoot, 'node_modules/.bin', tool), args, { cwd, env, maxBuffer: 16 << 20 });
    return stdout + stderr;
  } catch (error) {
    const { stdout = '', stderr = '' } = error as { stdout?: string; stderr?: string };
    throw new Error(`${tool} ${args.join(' ')} failed:\n${stdout}${stderr}`);
  }
}

/** Variables to add to a process's environment; `undefined` leaves one out. */
export type Environment = Record<string, string | undefined>;

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface Finished extends Exit {
  stdout: string;
  stderr: string;
}

/** One pino line of `rowbase serve`. */
export type LogLine = { msg?: string; url?: string; level?: number } & Record<string, unknown>;

export class Workspace {
  /** `sqlite:<dir>/rowbase.sqlite`: the database every process of this workspace uses unless told otherwise. */
  readonly databaseUrl: string;
  private readonly running = new Set<ChildProcess>();

  private constructor(readonly dir: string) {
    this.databaseUrl = `sqlite:${join(dir, 'rowbase.sqlite')}`;
  }

  static async create(): Promise<Workspace> {
    return new Workspace(await mkdtemp(join(tmpdir(), 'rowbase-cli-')));
  }

  /** Runs `rowbase <args>` to its end and returns its exit status and everything it printed. */
  async run(args: string[], environment: Environment = {}): Promise<Finished> {
    const child = this.spawn(args, environment);
    const stdout = collect(child.stdout);
    const stderr = collect(child.stderr);
    const exit = await exitOf(child);
    return { ...exit, stdout: await stdout, stderr: await stderr };
  }

  /**
   * Makes a key of `account` on the workspace's database and returns it, as `rowbase keys create
   * --account <account>` makes it (store.createKey), in this process: for a test about another
   * command, to which a start of `rowbase` would add a third of a second of CPU (test/cli/keys.test.ts
   * runs `keys create` itself).
   */
  async createKey(account: string): Promise<string> {
    // Loaded when asked: most tests of a workspace open no Store.
    const { openStore } = await import('../../src/db/open-store.ts');
    const store = await openStore(this.databaseUrl);
    try {
      return (await store.createKey(account)).key;
    } finally {
      await store.close();
    }
  }

  /**
   * Starts `rowbase serve` (PORT=0 unless `environment` says otherwise) and resolves once it logs that
   * it is listening; rejects, with what it printed, if it exits first.
   */
  async serve(environment: Environment = {}): Promise<ServeProcess> {
    const serving = new ServeProcess(this.spawn(['serve'], { PORT: '0', ...environment }));
    const listening = await serving.logged('rowbase is listening');
    serving.url = String(listening.url);
    return serving;
  }

  /** Kills (SIGKILL) every process of this workspace still running, waits for each to exit, removes the folder. */
  async cleanUp(): Promise<void> {
    await Promise.all(
      [...this.running].map((child) => {
        const exited = exitOf(child);
        child.kill('SIGKILL');
        return exited;
      }),
    );
    await rm(this.dir, { recursive: true, force: true });
  }

  private spawn(args: string[], environment: Environment): ChildProcess {
    // A clean environment, so a developer's own DATABASE_URL or PORT never leaks in; `node` is found
    // through PATH by the executable's #! line. The working folder is the temp folder, so a relative
    // default path could never write into the repository.
    const env: NodeJS.ProcessEnv = {
      PATH: [dirname(process.execPath), process.env.PATH].join(delimiter),
      HOME: process.env.HOME,
      DATABASE_URL: this.databaseUrl,
      LOG_LEVEL: 'info',
    };
    for (const [name, value] of Object.entries(environment)) {
      if (value === undefined) delete env[name];
      else env[name] = value;
    }
    const child = spawn(rowbaseExecutable, args, { cwd: this.dir, env, stdio: ['ignore', 'pipe', 'pipe'] });
    this.running.add(child);
    child.once('exit', () => this.running.delete(child));
    child.once('error', () => this.running.delete(child)); // it never started, so it will never exit
    return child;
  }
}

/** A running `rowbase serve`: its url, its log lines as they come, and its exit. */
export class ServeProcess {
  /** Base URL from the "rowbase is listening" line, e.g. http://127.0.0.1:41234 */
  url = '';
  /** Every stdout line so far. */
  readonly lines: string[] = [];
  readonly stderr: Promise<string>;
  /** Resolves once the process has exited; rejects only if it could not start. */
  readonly exited: Promise<Exit>;
  private readonly waiting = new Set<() => void>();
  /** stdout has ended: no more lines will come. */
  private finished = false;

  constructor(readonly child: ChildProcess) {
    this.stderr = collect(child.stderr);
    this.exited = exitOf(child);
    this.exited.catch(() => {}); // a failure to start is reported by logged(), which every start awaits
    createInterface({ input: child.stdout! })
      .on('line', (line) => {
        this.lines.push(line);
        this.notify();
      })
      .on('close', () => {
        this.finished = true;
        this.notify();
      });
  }

  /** Resolves with the first log line (already printed or still to come) whose `msg` is `message`. */
  logged(message: string): Promise<LogLine> {
    return new Promise((resolve, reject) => {
      const check = () => {
        const line = this.lines.map(parseLogLine).find((parsed) => parsed?.msg === message);
        if (line) {
          this.waiting.delete(check);
          resolve(line);
        } else if (this.finished) {
          this.waiting.delete(check);
          void this.stderr.then((stderr) =>
            reject(new Error(`rowbase serve exited before logging "${message}"\nstdout:\n${this.lines.join('\n')}\nstderr:\n${stderr}`)),
          );
        }
      };
      this.waiting.add(check);
      check();
    });
  }

  /** The process's id (the server's own: bin/rowbase starts again in place, execve keeping it). */
  get pid(): number | undefined {
    return this.child.pid;
  }

  /** Sends `signal` to the process (by its pid). */
  signal(signal: NodeJS.Signals): void {
    this.child.kill(signal);
  }

  private notify() {
    for (const check of [...this.waiting]) check();
  }
}

function parseLogLine(line: string): LogLine | undefined {
  try {
    const parsed = JSON.parse(line);
    return parsed !== null && typeof parsed === 'object' ? parsed : undefined;
  } catch {
    return undefined;
  }
}

/** Resolves when `child` exits; rejects if it could not be started. */
function exitOf(child: ChildProcess): Promise<Exit> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve({ code: child.exitCode, signal: child.signalCode });
  return once(child, 'exit').then(([code, signal]) => ({ code, signal }));
}

async function collect(stream: NodeJS.ReadableStream | null): Promise<string> {
  let text = '';
  if (!stream) return text;
  stream.setEncoding('utf8');
  for await (const chunk of stream) text += chunk;
  return text;
}

/**
 * Calls `attempt` until it returns true, and returns how long that took in milliseconds, or rejects
 * once `deadlineMs` has passed without it. For conditions that must become true within a bound.
 */
export async function pollUntil(attempt: () => Promise<boolean>, deadlineMs: number): Promise<number> {
  const started = performance.now();
  for (;;) {
    if (await attempt()) return performance.now() - started;
    const elapsed = performance.now() - started;
    if (elapsed > deadlineMs) throw new Error(`not true within ${deadlineMs} ms (tried for ${Math.round(elapsed)} ms)`);
    await new Promise((resolve) => setImmediate(resolve));
  }
}

/**
 * Bad arguments (or configuration) exit 2 with a one-line reason on stderr, `reason` if given, and
 * print nothing on stdout.
 */
export function expectBadArguments(finished: Finished, reason?: string): void {
  expect(finished.code, finished.stderr).to.equal(2);
  expect(finished.stderr).to.match(/^rowbase: [^\n]+\n$/);
  if (reason !== undefined) expect(finished.stderr).to.equal(`rowbase: ${reason}\n`);
  expect(finished.stdout).to.equal('');
}

/**
 * For a mocha `describe`: a workspace with `rowbase serve` running from `before` to `after`.
 * `rowbase(...args)` runs the CLI on the same database.
 */
export function servingWorkspace() {
  const suite = {
    workspace: undefined as unknown as Workspace,
    server: undefined as unknown as ServeProcess,
    rowbase: (...args: string[]) => suite.workspace.run(args),
  };
  before(async () => {
    suite.workspace = await Workspace.create();
    suite.server = await suite.workspace.serve();
  });
  after(() => suite.workspace.cleanUp());
  return suite;
}
