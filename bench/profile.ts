// Where a server's CPU time goes: reads a V8 .cpuprofile (what `node --cpu-prof` writes) and adds up
// self time by function and by area (a package, a node: module, a rowbase file), optionally within a
// window of the monotonic clock. run.ts calls summariseProfile(); by hand:
//   node --import tsx bench/profile.ts <file.cpuprofile> [top]
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
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
  /** Of the samples in the window that were not idle. */
  percent: number;
}

export interface ProfileSummary {
  /**
   * Wall time of the window, and the part of it V8's samples found the main thread not idle: on a core,
   * or waiting for one (sampled by the wall clock, a thread that waits is sampled where it was).
   */
  windowMs: number;
  busyMs: number;
  /** The main thread's shares of the window on a core and waiting for one, by the kernel's count (run.ts). */
  main?: { busy: number; waiting: number };
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
    const { area, file } = locate(functionName, url, lineNumber);
    // A rowbase file's line in the bundle (or in tsx's output, a line or so a file) says nothing.
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
 * (`node:streams`), a rowbase file (`src/db/rows/rows.ts`), or what V8 calls the rest: `(garbage collector)`,
 * `(program)` (V8 and native code outside JS), `(native)` for builtins such as JSON.parse. Its `file`
 * names the file within the area (`openapi-backend/router.js`). A line of bin/rowbase's bundle is
 * of the source file whose code it is (`lineNumber`, from 0).
 */
function locate(functionName: string, url: string, lineNumber: number): { area: string; file: string } {
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
  let file = path.startsWith(repoRoot) ? path.slice(repoRoot.length) : path;
  if (bundleFile.test(file)) file = sourceOfBundleLine(file, lineNumber);
  return { area: file, file };
}

/** bin/rowbase's bundle: its entry, dist/rowbase.mjs, and the chunks it loads (dist/rowbase-<hash>.mjs). */
const bundleFile = /^dist\/rowbase(-[A-Z0-9]+)?\.mjs$/;
const bundleSources = new Map<string, { line: number; file: string }[]>();

/**
 * The source file of a line of the bundle: esbuild, not minifying, starts the code of each with a
 * comment line naming it (`// src/db/rows/rows.ts`). The bundle read is the one on disk now, the one the
 * profiled server ran unless a source changed since.
 */
function sourceOfBundleLine(bundle: string, lineNumber: number): string {
  let sources = bundleSources.get(bundle);
  if (!sources) {
    sources = readFileSync(join(repoRoot, bundle), 'utf8')
      .split('\n')
      .flatMap((text, line) => (/^\/\/ (src|generated)\/\S+$/.test(text) ? [{ line, file: text.slice(3) }] : []));
    bundleSources.set(bundle, sources);
  }
  let found = bundle;
  for (const { line, file } of sources) {
    if (line > lineNumber) break;
    found = file;
  }
  return found;
}

const round = (value: number) => Math.round(value * 10) / 10;

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const summary = summariseProfile(process.argv[2], undefined, Number(process.argv[3] ?? 15));
  process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
}
