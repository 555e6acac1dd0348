import { execFile } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { promisify } from 'node:util';
import SwaggerParser from '@apidevtools/swagger-parser';
import { expect } from 'chai';
import { parse } from 'yaml';
import { generate } from '../../scripts/generate.ts';

const run = promisify(execFile);
const root = new URL('../../', import.meta.url).pathname;

describe('the contract documents', () => {
  describe('openapi.yaml', () => {
    it('is a valid OpenAPI 3.0 document', async () => {
      const document = parse(await readFile(join(root, 'openapi.yaml'), 'utf8'));
      const api = await SwaggerParser.validate(document);
      expect(api).to.have.property('openapi', '3.0.3');
    });

    it('lints clean with Spectral (spectral:oas, warnings included)', async () => {
      const spectral = join(root, 'node_modules/.bin/spectral');
      const args = ['lint', 'openapi.yaml', '--ruleset', '.spectral.yaml', '--fail-severity', 'warn'];
      const { stdout } = await run(spectral, args, { cwd: root }).catch((error) => {
        throw new Error(`spectral found problems:\n${error.stdout}${error.stderr}`);
      });
      expect(stdout).to.include('No results');
    });

    it('gives every operation an operationId, a tag, a summary and a description', async () => {
      const document = parse(await readFile(join(root, 'openapi.yaml'), 'utf8'));
      for (const [path, item] of Object.entries<Record<string, Record<string, unknown>>>(document.paths)) {
        for (const [method, operation] of Object.entries(item)) {
          if (method === 'parameters') continue;
          const where = `${method.toUpperCase()} ${path}`;
          expect(operation.operationId, where).to.be.a('string');
          expect(operation.tags, where).to.be.an('array').that.is.not.empty;
          expect(operation.summary, where).to.be.a('string');
          expect(operation.description, where).to.be.a('string');
        }
      }
    });
  });

  describe('generated/', () => {
    it('is exactly what npm run generate writes from the documents (no drift)', async function () {
      this.timeout(60_000);
      const out = await mkdtemp(join(tmpdir(), 'rowbase-generate-'));
      try {
        const written = await generate(out);
        const committed = (await generatedFiles()).sort();
        expect(committed, 'the files in generated/').to.deep.equal(written);
        for (const name of written) {
          const fresh = await readFile(join(out, name), 'utf8');
          const current = await readFile(join(root, 'generated', name), 'utf8');
          expect(current === fresh, `generated/${name} differs from a fresh npm run generate`).to.equal(true);
        }
      } finally {
        await rm(out, { recursive: true, force: true });
      }
    });

    it('heads every file with a do-not-edit line (but the JSON document, which cannot hold one)', async () => {
      for (const name of await generatedFiles()) {
        if (name.endsWith('.json')) continue;
        const text = await readFile(join(root, 'generated', name), 'utf8');
        expect(text.split('\n')[0], name).to.match(/Do not edit/);
      }
    });
  });
});

/** The files of generated/, its subfolders' too, by their paths inside it. */
async function generatedFiles(): Promise<string[]> {
  const entries = await readdir(join(root, 'generated'), { recursive: true, withFileTypes: true });
  return entries.filter((entry) => entry.isFile()).map((entry) => relative(join(root, 'generated'), join(entry.parentPath, entry.name)));
}
