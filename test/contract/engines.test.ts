// `npm install` warns (EBADENGINE) of every package whose `engines.node` does not admit the Node it runs
// on. package.json's `engines` admits each LTS line from a version up: every package of package-lock.json
// must admit the lowest of each, so that no one installing on a Node the service supports is warned. The
// check is npm's own (npm-install-checks): semver.satisfies with prereleases included.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import semver from 'semver';

const root = new URL('../../', import.meta.url).pathname;
const readJson = (file: string) => JSON.parse(readFileSync(join(root, file), 'utf8'));

interface LockedPackage {
  version?: string;
  engines?: { node?: string };
}

describe('package.json and package-lock.json', () => {
  const supported: string = readJson('package.json').engines.node;
  /** The lowest version of each line `engines` admits. */
  const lowest = supported.split('||').map((range) => semver.minVersion(range)?.version);

  it('admit Node 22 from 22.19.0 and Node 24 from 24.11.0', () => {
    expect(lowest).to.deep.equal(['22.19.0', '24.11.0']);
  });

  it('lock only packages whose engines admit the lowest Node of each line', () => {
    const packages: Record<string, LockedPackage> = readJson('package-lock.json').packages;
    const refusing = Object.entries(packages).flatMap(([path, { version, engines }]) => {
      const wanted = engines?.node;
      if (typeof wanted !== 'string') return [];
      const refused = lowest.filter((node) => !semver.satisfies(node!, wanted, { includePrerelease: true }));
      return refused.length ? [`${path}@${version} wants node ${wanted}, not ${refused.join(' or ')}`] : [];
    });
    expect(refusing).to.deep.equal([]);
  });
});
