// Every child process of a run: spawned through here, remembered, and stopped at the end, also when the
// run fails or is interrupted (Ctrl-C). Servers announce their url in a JSON line on stdout.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

export const repoRoot = fileURLToPath(new URL('..', import.meta.url));
const running = new Set<ChildProcess>();
let interrupted = false;

/** True once Ctrl-C or SIGTERM came: the children's failures that follow are ours, not theirs. */
export const isInterrupted = () => interrupted;

export interface Started {
  child: ChildProcess;
  pid: number;
  url: string;
  /** What the server logged at warn or above, by message: counted rather than echoed, and reported. */
  problems: Map<string, number>;
}

export interface SpawnOptions {
  /** Give the child a stdin to write to (default: none). */
  stdin?: boolean;
  /**
   * Open files (sockets) the child needs: if this process's soft limit is lower, the child is started
   * through `sh -c 'ulimit -n <n>; exec node …'` (it keeps its pid). Above the hard limit this throws.
   */
  openFiles?: number;
}

/** `node [nodeFlags] <script> [args]` from the repository root; a bench script runs through tsx. */
export function spawnNode(
  script: string,
  args: string[],
  env: NodeJS.ProcessEnv = {},
  nodeFlags: string[] = [],
  options: SpawnOptions = {},
): ChildProcess {
  const tsx = script.startsWith('bench/') ? ['--import', 'tsx'] : [];
  let command = process.execPath;
  let argv = [...nodeFlags, ...tsx, script, ...args];
  if (options.openFiles !== undefined && options.openFiles > openFilesLimit().soft) {
    const { hard } = openFilesLimit();
    if (options.openFiles > hard)
      throw new Error(`${script} needs ${options.openFiles} open files; the hard limit (ulimit -Hn) is ${hard}`);
    argv = ['-c', `ulimit -n ${options.openFiles} && exec "$0" "$@"`, command, ...argv];
    command = '/bin/sh';
  }
  const child = spawn(command, argv, {
    cwd: repoRoot,
    env: { ...process.env, ...env },
    stdio: [options.stdin ? 'pipe' : 'ignore', 'pipe', 'pipe'],
  });
  running.add(child);
  child.once('exit', () => running.delete(child));
  return child;
}

/** Waits for the JSON line whose `msg` is `message` and answers its `url`; rejects if the child exits first. */
export async function startServer(
  script: string,
  args: string[],
  message: string,
  env: NodeJS.ProcessEnv = {},
  nodeFlags: string[] = [],
  options: SpawnOptions = {},
) {
  const child = spawnNode(script, args, env, nodeFlags, options);
  const stderr = tail(child);
  const problems = new Map<string, number>();
  const url = await new Promise<string>((resolve, reject) => {
    const lines = createInterface({ input: child.stdout! });
    lines.on('line', (line) => {
      const parsed = parseJson(line);
      if (parsed?.msg === message) resolve(String(parsed.url));
      else if (parsed && Number(parsed.level) >= 40) {
        // pino warn and above, e.g. {"msg":"request failed","err":{"message":"…"}}
        const error = (parsed.err as { message?: string } | undefined)?.message;
        const problem = [parsed.msg, error].filter(Boolean).join(': ');
        problems.set(problem, (problems.get(problem) ?? 0) + 1);
      }
    });
    child.once('exit', (code) => reject(new Error(`${commandOf(child)} exited ${code} before listening: ${stderr()}`)));
  });
  return { child, pid: child.pid!, url, problems } satisfies Started;
}

/** Runs `node <script> <args>` to its end; answers its stdout, or rejects with its stderr when it fails. */
export const runToEnd = (script: string, args: string[], env: NodeJS.ProcessEnv = {}) => outputOf(spawnNode(script, args, env));

/**
 * Waits for a spawned child to end; answers its stdout, or rejects with its stderr when it fails. Given
 * `limitMs`, a child still running then is killed and the wait rejects, naming the limit: a workload that
 * hangs fails the run rather than holding it.
 */
export async function outputOf(child: ChildProcess, limitMs?: number): Promise<string> {
  const stderr = tail(child);
  let stdout = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk;
  });
  let overran = false;
  const timer =
    limitMs === undefined
      ? undefined
      : setTimeout(() => {
          overran = true;
          child.kill('SIGKILL');
        }, limitMs);
  const [code, signal] = await once(child, 'close'); // after its output is all read, unlike 'exit'
  clearTimeout(timer);
  if (overran) throw new Error(`${commandOf(child)} was still running after ${limitMs! / 1000} s, and was killed: ${stderr()}`);
  if (code !== 0) throw new Error(`${commandOf(child)} exited ${code ?? signal}: ${stderr()}`);
  return stdout;
}

/**
 * The JSON lines a child prints, one at a time: `next()` answers the next line, and rejects (with the
 * child's stderr) once the child has exited with none left, or after `timeoutMs`.
 */
export function jsonLines(child: ChildProcess): { next(what: string, timeoutMs: number): Promise<Record<string, unknown>> } {
  const stderr = tail(child);
  const lines: string[] = [];
  const waiting: (() => void)[] = [];
  let ended = false;
  const wakeAll = () => {
    for (const wake of waiting.splice(0)) wake();
  };
  createInterface({ input: child.stdout! })
    .on('line', (line) => {
      lines.push(line);
      wakeAll();
    })
    .on('close', () => {
      ended = true;
      wakeAll();
    });
  return {
    async next(what, timeoutMs) {
      const deadline = Date.now() + timeoutMs;
      while (lines.length === 0) {
        if (ended) {
          const [code, signal] =
            child.exitCode === null && child.signalCode === null ? await once(child, 'exit') : [child.exitCode, child.signalCode];
          throw new Error(`${commandOf(child)} exited ${code ?? signal} before ${what}: ${stderr()}`);
        }
        const left = deadline - Date.now();
        if (left <= 0) throw new Error(`${commandOf(child)} printed no ${what} within ${timeoutMs} ms: ${stderr()}`);
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, left);
          waiting.push(() => {
            clearTimeout(timer);
            resolve();
          });
        });
      }
      return JSON.parse(lines.shift()!);
    },
  };
}

/** This process's limit on open files (`ulimit -n`: soft, `ulimit -Hn`: hard), from /proc/self/limits. */
export function openFilesLimit(): { soft: number; hard: number } {
  try {
    const match = /^Max open files\s+(\d+|unlimited)\s+(\d+|unlimited)/m.exec(readFileSync('/proc/self/limits', 'utf8'));
    const value = (text: string | undefined) => (text === undefined || text === 'unlimited' ? Number.POSITIVE_INFINITY : Number(text));
    return { soft: value(match?.[1]), hard: value(match?.[2]) };
  } catch {
    return { soft: Number.POSITIVE_INFINITY, hard: Number.POSITIVE_INFINITY }; // not Linux: trust it
  }
}

/** SIGTERM, then SIGKILL after `graceMs`; resolves once the child has exited. */
export async function stop(child: ChildProcess, graceMs: number): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await exited;
  clearTimeout(timer);
}

export const stopAll = (graceMs: number) => Promise.all([...running].map((child) => stop(child, graceMs)));

/** On Ctrl-C or SIGTERM: `cleanUp` (which should stop every child), then exit 130. */
export function stopOnSignals(cleanUp: () => Promise<void>): void {
  const onSignal = () => {
    interrupted = true;
    process.stderr.write('\nbench: interrupted; stopping every child process\n');
    void cleanUp().finally(() => process.exit(130));
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
}

/** Kilobytes from /proc/<pid>/status: VmRSS (resident now) or VmHWM (the peak resident so far). */
export function memoryKb(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  try {
    const match = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) : Number.NaN;
  } catch {
    return Number.NaN; // not Linux, or the process is gone
  }
}

/** Samples VmRSS of `pid` every `intervalMs` until `done()`, which answers the peak in kB. */
export function sampleRss(pid: number, intervalMs: number): { done(): number } {
  let peak = 0;
  const sample = () => {
    const now = memoryKb(pid, 'VmRSS');
    if (now > peak) peak = now; // NaN once the process is gone
  };
  sample();
  // Unreferenced: a workload that fails leaves its samplers running, and they must not hold the run open.
  const timer = setInterval(sample, intervalMs).unref();
  return {
    done() {
      clearInterval(timer);
      sample();
      return peak || Number.NaN;
    },
  };
}

/**
 * CPU time (user + system) used so far, in µs: by the main thread of `pid`, and by all its threads; and
 * the time the main thread has waited for a core so far, runnable but not running (the kernel's
 * schedstat: it wakes a peer, say the load generator with its answer or PostgreSQL with a statement,
 * and the peer takes the core).
 */
export interface CpuUs {
  mainUs: number;
  processUs: number;
  waitUs: number;
}

let ticksPerSecond: number | undefined;

/** CPU time used so far by `pid` (NaN once it is gone, or off Linux), from /proc's clock ticks. */
export function cpuUs(pid: number): CpuUs {
  ticksPerSecond ??= Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' })) || 100;
  const used = (file: string) => {
    try {
      // Fields after the command's closing parenthesis, from the third: utime is the 14th, stime the 15th.
      const fields = readFileSync(file, 'utf8').split(') ')[1].split(' ');
      return ((Number(fields[11]) + Number(fields[12])) / ticksPerSecond!) * 1e6;
    } catch {
      return Number.NaN;
    }
  };
  return { mainUs: used(`/proc/${pid}/task/${pid}/stat`), processUs: used(`/proc/${pid}/stat`), waitUs: waited(pid) };
}

/** The main thread of `pid`'s wait for a core so far, in µs: schedstat's second field, in ns (NaN without it). */
function waited(pid: number): number {
  try {
    return Number(readFileSync(`/proc/${pid}/task/${pid}/schedstat`, 'utf8').split(' ')[1]) / 1000;
  } catch {
    return Number.NaN;
  }
}

/**
 * Samples the CPU time of `pid` every `intervalMs` until `done(windowUs)`, which answers what it used
 * within the window (of the monotonic clock, as Measured's): the rate between the first sample in the
 * window and the last, times the window's length. `busy`: the main thread's share of the wall time on a
 * core; `waiting`: its share waiting for one.
 */
export function sampleCpu(pid: number, intervalMs: number): { done(windowUs: [number, number]): CpuShares } {
  const sampler = sampleEvery(intervalMs, () => cpuUs(pid));
  return {
    done([from, to]) {
      const [first, last] = sampler.done([from, to]);
      if (!first || !last) return { mainUs: Number.NaN, processUs: Number.NaN, waitUs: Number.NaN, busy: Number.NaN, waiting: Number.NaN };
      const scale = (to - from) / (last.atUs - first.atUs);
      const mainUs = (last.mainUs - first.mainUs) * scale;
      const waitUs = (last.waitUs - first.waitUs) * scale;
      return {
        mainUs,
        processUs: (last.processUs - first.processUs) * scale,
        waitUs,
        busy: mainUs / (to - from),
        waiting: waitUs / (to - from),
      };
    },
  };
}

/** What sampleCpu() answers: the CPU used within the window, and the main thread's shares of it on a core and waiting for one. */
export type CpuShares = CpuUs & { busy: number; waiting: number };

/** The machine's CPU time so far, in clock ticks (/proc/stat's first line): busy, stolen, in all. */
interface MachineTicks {
  /** Busy, the time stolen included. */
  busy: number;
  /** Stolen: the time a core of this machine (a virtual one) was owed and given by the hypervisor to another guest of its host. */
  stolen: number;
  all: number;
}

/** The machine's CPU time so far (MachineTicks); undefined off Linux. */
export function machineTicks(): MachineTicks | undefined {
  if (!existsSync('/proc/stat')) return undefined;
  const [user, nice, system, idle, iowait, irq, softirq, steal] = readFileSync('/proc/stat', 'utf8')
    .split('\n')[0]
    .split(/\s+/)
    .slice(1)
    .map(Number);
  const busy = user + nice + system + irq + softirq + steal;
  return { busy, stolen: steal, all: busy + idle + iowait };
}

/** The machine's cores within a window: the share of their time busy, and stolen by the hypervisor. */
export interface HostShares {
  busy: number;
  stolen: number;
}

/**
 * Samples the machine's CPU time every `intervalMs` until `done(windowUs)`, which answers its HostShares within
 * the window: none off Linux, or where fewer than two samples fell in it.
 */
export function sampleMachine(intervalMs: number): { done(windowUs: [number, number]): HostShares | undefined } {
  const sampler = sampleEvery(intervalMs, machineTicks);
  return {
    done(window) {
      const [first, last] = sampler.done(window);
      if (!first || !last) return undefined;
      const all = Math.max(1, last.all - first.all);
      return { busy: (last.busy - first.busy) / all, stolen: (last.stolen - first.stolen) / all };
    },
  };
}

/**
 * Samples `read()` every `intervalMs` until `done(windowUs)`, which answers the first and last samples within the
 * window (of the monotonic clock, as Measured's), or none where fewer than two fell in it.
 */
function sampleEvery<T extends object>(intervalMs: number, read: () => T | undefined) {
  type Sample = T & { atUs: number };
  const samples: Sample[] = [];
  const sample = () => {
    const value = read();
    if (value) samples.push({ ...value, atUs: Number(process.hrtime.bigint() / 1000n) });
  };
  sample();
  // Unreferenced: a workload that fails leaves its samplers running, and they must not hold the run open.
  const timer = setInterval(sample, intervalMs).unref();
  return {
    done([from, to]: [number, number]): [Sample, Sample] | [] {
      clearInterval(timer);
      const inside = samples.filter((s) => s.atUs >= from && s.atUs <= to);
      const [first, last] = [inside[0], inside.at(-1)];
      return first && last && first !== last ? [first, last] : [];
    },
  };
}

/** The last 2 kB a child wrote on stderr, for error messages. */
function tail(child: ChildProcess): () => string {
  let text = '';
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
    text = (text + chunk).slice(-2048);
  });
  return () => text.trim();
}

/** The command line of a child, without a load worker's JSON job (it holds the key). */
function commandOf(child: ChildProcess): string {
  const args = child.spawnargs[0] === '/bin/sh' ? child.spawnargs.slice(4) : child.spawnargs.slice(1);
  return args.map((arg) => (arg.startsWith('{') ? '<job>' : arg)).join(' ');
}

function parseJson(line: string): Record<string, unknown> | undefined {
  try {
    return JSON.parse(line);
  } catch {
    return undefined;
  }
}
