// Where a server's CPU time goes: reads a V8 .cpuprofile (what `node --cpu-prof` writes) and adds up
// self time by function and by area (a package, a node: module, a rowbase file), optionally within a
// window of the monotonic clock. run.ts calls summariseProfile(); by hand:
//   node --import tsx bench/profile.ts <file.cpuprofile> [top]
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { repoRoot } from './processes.ts';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}

interface CpuProfile {
  nodes: ProfileNode[];
  /** Microseconds, same clock as process.hrtime. */
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}

export interface SelfTime {
  name: string;
  ms: number;
  /** Of the CPU time in the window (idle excluded). */
  percent: number;
}

export interface ProfileSummary {
  /** Wall time of the window, and the part of it the main thread was on the CPU (idle excluded). */
  windowMs: number;
  busyMs: number;
  functions: SelfTime[];
  areas: SelfTime[];
}

/** Self time of every function and area within `windowUs` (the whole profile without one). */
export function summariseProfile(file: string, windowUs?: [number, number], top = 15): ProfileSummary {
  const profile: CpuProfile = JSON.parse(readFileSync(file, 'utf8'));
  const nodes = new Map(profile.nodes.map((node) => [node.id, node]));
  const byFunction = new Map<string, number>();
  const byArea = new Map<string, number>();
  let busyUs = 0;
  let time = profile.startTime;
  const [from, to] = windowUs ?? [Number.NEGATIVE_INFINITY, Number.POSITIVE_INFINITY];
  for (let i = 0; i < profile.samples.length; i++) {
    time += profile.timeDeltas[i];
    // A sample stands for the interval until the next one (as Chrome DevTools counts it).
    const us = profile.timeDeltas[i + 1] ?? 0;
    if (time < from || time > to) continue;
    const { functionName, url, lineNumber } = nodes.get(profile.samples[i])!.callFrame;
    if (functionName === '(idle)') continue;
    busyUs += us;
    const { area, file } = locate(functionName, url);
    // tsx compiles rowbase's files to a line or so: their line numbers say nothing.
    const line = url && !file.startsWith('src/') ? `:${lineNumber + 1}` : '';
    const name = !url ? (area === '(native)' ? `${functionName} (native)` : area) : `${functionName || '(anonymous)'} ${file}${line}`;
    byFunction.set(name, (byFunction.get(name) ?? 0) + us);
    byArea.set(area, (byArea.get(area) ?? 0) + us);
  }
  const windowMs = windowUs ? (to - from) / 1000 : (time - profile.startTime) / 1000;
  const ranked = (totals: Map<string, number>) =>
    [...totals]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([name, us]) => ({ name, ms: round(us / 1000), percent: round((100 * us) / busyUs) }));
  return { windowMs: round(windowMs), busyMs: round(busyUs / 1000), functions: ranked(byFunction), areas: ranked(byArea) };
}

/**
 * Where a frame's code lives: its `area` is a package (`knex`, `@scope/name`), a node: module
 * (`node:streams`), a rowbase file (`src/db/rows.ts`), or what V8 calls the rest: `(garbage collector)`,
 * `(program)` (V8 and native code outside JS), `(native)` for builtins such as JSON.parse. Its `file`
 * names the file within the area (`openapi-backend/router.js`).
 */
function locate(functionName: string, url: string): { area: string; file: string } {
  if (!url) {
    const area = functionName.startsWith('(') ? functionName : '(native)';
    return { area, file: area };
  }
  if (url.startsWith('node:')) {
    const module = url.slice('node:'.length).replace(/^internal\//, '');
    return { area: `node:${module.split('/')[0]}`, file: url };
  }
  const path = url.startsWith('file://') ? fileURLToPath(url) : url;
  const inPackage = /.*node_modules\/((?:@[^/]+\/)?[^/]+)\/(.*)$/.exec(path);
  if (inPackage) return { area: inPackage[1], file: `${inPackage[1]}/${inPackage[2]}` };
  const file = path.startsWith(repoRoot) ? path.slice(repoRoot.length) : path;
  return { area: file, file };
}

const round = (value: number) => Math.round(value * 10) / 10;

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const summary = summariseProfile(process.argv[2], undefined, Number(process.argv[3] ?? 15));
  process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
}
