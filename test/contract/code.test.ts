// The code itself, checked where CI runs it. The tests run TypeScript through tsx, which strips the types
// without checking them: without these, a type error or a lint finding would pass CI. The same checks
// as `npm run lint`, with the benchmarks' own project too, and Biome's warnings counted as errors.
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';

const run = promisify(execFile);
const root = new URL('../../', import.meta.url).pathname;

/** Runs one of the project's own tools to its end; its failure says what it printed. */
async function check(tool: string, args: string[]): Promise<string> {
  try {
    const { stdout, stderr } = await run(join(root, 'node_modules/.bin', tool), args, { cwd: root, maxBuffer: 16 << 20 });
    return stdout + stderr;
  } catch (error) {
    const { stdout = '', stderr = '' } = error as { stdout?: string; stderr?: string };
    throw new Error(`${tool} ${args.join(' ')} failed:\n${stdout}${stderr}`);
  }
}

describe('the code', function () {
  this.timeout(120_000);

  it('type-checks: the service, its tests, scripts and generated types (tsc --noEmit)', async () => {
    expect(await check('tsc', ['--noEmit', '-p', 'tsconfig.json'])).to.equal('');
  });

  it('type-checks: the benchmarks (tsc --noEmit -p bench)', async () => {
    expect(await check('tsc', ['--noEmit', '-p', 'bench'])).to.equal('');
  });

  it('lints and is formatted as biome.json says, warnings included (biome check)', async () => {
    expect(await check('biome', ['check', '--error-on-warnings', '.'])).to.match(/Checked \d+ files/);
  });
});
