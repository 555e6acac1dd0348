// The served documents and generated/: as committed, and as npm run generate makes them.
import { execFile } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { promisify } from 'node:util';
import SwaggerParser from '@apidevtools/swagger-parser';
import { expect } from 'chai';
import { parse } from 'yaml';
import { generate } from '../../scripts/generate.ts';
import { openApiTo31 } from '../../src/contract/openapi-31.ts';
import { openApiTo32 } from '../../src/contract/openapi-32.ts';
import { sitePages } from '../../src/http/site.ts';

const run = promisify(execFile);
const root = new URL('../../', import.meta.url).pathname;

describe('the contract documents', () => {
  describe('openapi.yaml', () => {
    it('is a valid OpenAPI 3.0 document', async () => {
      const document = parse(await readFile(join(root, 'openapi.yaml'), 'utf8'));
      const api = await SwaggerParser.validate(document);
      expect(api).to.have.property('openapi', '3.0.3');
    });

    it('lints clean with Spectral (spectral:oas, warnings included)', async function () {
      // Spectral takes about 14 s over openapi.yaml on a quiet host, and past 30 s in CI's two Node lines at once.
      this.timeout(90_000);
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

    it('describes the HEAD of every GET as an operation of its own, with the same parameters and security', async () => {
      const document = parse(await readFile(join(root, 'openapi.yaml'), 'utf8'));
      const paths = Object.entries<Record<string, { operationId: string; parameters?: unknown; security?: unknown }>>(document.paths);
      expect(paths.filter(([, item]) => item.get).length).to.be.at.least(6);
      for (const [path, item] of paths) {
        expect(Boolean(item.head), `HEAD ${path}`).to.equal(Boolean(item.get));
        if (!item.get || !item.head) continue;
        expect(item.head.operationId, `HEAD ${path}`).to.match(/^head[A-Z]/);
        expect(item.head.parameters, `HEAD ${path} parameters`).to.deep.equal(item.get.parameters);
        expect(item.head.security, `HEAD ${path} security`).to.deep.equal(item.get.security);
      }
    });

    it("declares the end user's token (endUserToken, a bearer JWT) beside the key on every operation that takes a publishable key, and only there, in 3.0, 3.1 and 3.2 alike", async () => {
      const written = parse(await readFile(join(root, 'openapi.yaml'), 'utf8'));
      for (const [version, document] of [
        ['3.0', written],
        ['3.1', openApiTo31(written)],
        ['3.2', openApiTo32(written)],
      ] as const) {
        const schemes = (document.components as { securitySchemes: Record<string, object> }).securitySchemes;
        // The name and the form of the scheme the account's documents for a publishable key use (contract/caller.ts).
        expect(schemes.endUserToken, version).to.deep.include({ type: 'http', scheme: 'bearer', bearerFormat: 'JWT' });
        let publishable = 0;
        for (const [path, item] of Object.entries<Record<string, Record<string, unknown>>>(document.paths as never)) {
          for (const [method, operation] of Object.entries(item)) {
            if (method === 'parameters') continue;
            const where = `${version} ${method.toUpperCase()} ${path}`;
            const security = (operation.security ?? document.security) as Record<string, unknown>[];
            const withToken = security.filter((requirement) => 'endUserToken' in requirement);
            if (operation['x-rowbase-publishable'] !== true) {
              expect(withToken, where).to.deep.equal([]);
              continue;
            }
            publishable += 1;
            // The key alone (an anonymous caller, or a secret key), or the publishable key in x-api-key with the token in Authorization.
            expect(withToken, where).to.deep.equal([{ headerKey: [], endUserToken: [] }]);
            expect(security, where).to.deep.include.members([{ bearerKey: [] }, { headerKey: [] }]);
          }
        }
        expect(publishable, version).to.be.at.least(20);
      }
    });

    it('takes the key and the token in the query where a browser can set no header: the feed and the changes, and nowhere else', async () => {
      const document = parse(await readFile(join(root, 'openapi.yaml'), 'utf8'));
      const queried: string[] = [];
      for (const item of Object.values<Record<string, { operationId: string; security?: object[] }>>(document.paths)) {
        const tokenParameter = ((item.parameters ?? []) as unknown as { name: string; in: string }[]).some(
          (parameter) => parameter.name === 'access_token' && parameter.in === 'query',
        );
        for (const [method, operation] of Object.entries(item)) {
          if (method === 'parameters') continue;
          const takesKey = (operation.security ?? []).some((requirement) => 'queryKey' in requirement);
          expect(tokenParameter, operation.operationId).to.equal(takesKey);
          if (takesKey) queried.push(operation.operationId);
        }
      }
      expect(queried).to.have.members(['getChanges', 'headChanges', 'openFeed', 'headFeed']);
    });

    it('names every schema a generator would otherwise name itself', async () => {
      const document = parse(await readFile(join(root, 'openapi.yaml'), 'utf8'));
      const found: string[] = [];
      // An enum, or a schema made of others, only as a named schema of its own (a component), whose
      // members are references: else generators name it after where it is (`ErrorResponseAllOf`).
      const visit = (node: unknown, where: string, named: boolean): void => {
        if (Array.isArray(node)) {
          for (const [index, item] of node.entries()) visit(item, `${where}/${index}`, false);
          return;
        }
        if (typeof node !== 'object' || node === null) return;
        for (const [key, value] of Object.entries(node)) {
          if (key === 'enum' && !named) found.push(`${where}: an enum`);
          if (['allOf', 'oneOf', 'anyOf'].includes(key)) {
            if (!named) found.push(`${where}: ${key}`);
            else if ((value as object[]).some((member) => !('$ref' in member)))
              found.push(`${where}: ${key} of a schema that is no reference`);
          }
          if (key !== 'example' && key !== 'examples') visit(value, `${where}/${key}`, false);
        }
      };
      visit(document.paths, '#/paths', false);
      for (const [kind, entries] of Object.entries<Record<string, Record<string, unknown>>>(document.components)) {
        for (const [name, value] of Object.entries(entries)) {
          if (kind === 'schemas') {
            // The schema itself is named: its own enum, allOf, anyOf or oneOf is fine; anything inside it is not.
            const { enum: _enum, allOf: _allOf, anyOf: _anyOf, oneOf: _oneOf, ...rest } = value;
            if (_allOf) visit({ allOf: _allOf }, `#/components/${kind}/${name}`, true);
            if (_anyOf) visit({ anyOf: _anyOf }, `#/components/${kind}/${name}`, true);
            if (_oneOf) visit({ oneOf: _oneOf }, `#/components/${kind}/${name}`, true);
            visit(rest, `#/components/${kind}/${name}`, false);
          } else visit(value, `#/components/${kind}/${name}`, false);
        }
      }
      expect(found).to.deep.equal([]);
      // A parameter and a schema of one name become two types of one name (`CollectionName2`).
      const key = (name: string) => name.replace(/[^A-Za-z0-9]/g, '').toLowerCase();
      const schemas = new Set(Object.keys(document.components.schemas).map(key));
      const shared = Object.keys(document.components.parameters ?? {}).filter((name) => schemas.has(key(name)));
      expect(shared).to.deep.equal([]);
    });

    it('takes a body of several media types as a request body component, application/json first (docs/patches.md)', async () => {
      // orval's fetch client sends no Content-Type for such a body described inline, and fetch labels it
      // text/plain, a 415; for a component's it sends the first type.
      const document = parse(await readFile(join(root, 'openapi.yaml'), 'utf8'));
      const several: string[] = [];
      for (const [path, item] of Object.entries<Record<string, { requestBody?: { $ref?: string; content?: object } }>>(document.paths)) {
        for (const [method, { requestBody }] of Object.entries(item)) {
          const where = `${method.toUpperCase()} ${path}`;
          const name = requestBody?.$ref?.replace('#/components/requestBodies/', '');
          const types = Object.keys((name === undefined ? requestBody : document.components.requestBodies[name])?.content ?? {});
          if (types.length < 2) continue;
          several.push(where);
          expect(name, where).to.be.a('string');
          expect(types[0], where).to.equal('application/json');
        }
      }
      expect(several).to.have.members([
        'PATCH /v1/collections/{collection_name}/rows',
        'PATCH /v1/collections/{collection_name}/rows/{row_id}',
      ]);
    });

    it('leaves out the pages served beside the API (src/http/site.ts), which a generated client has no use for', async () => {
      const document = parse(await readFile(join(root, 'openapi.yaml'), 'utf8'));
      expect(sitePages.map((page) => page.path)).to.include.members(['/openapi.yaml', '/asyncapi.yaml', '/docs', '/docs/{asset}']);
      for (const { path } of sitePages) expect(document.paths, path).not.to.have.property(path);
      for (const [path, item] of Object.entries<Record<string, { responses?: Record<string, { content?: object }> }>>(document.paths)) {
        for (const [method, operation] of Object.entries(item)) {
          for (const [status, response] of Object.entries(operation.responses ?? {})) {
            // The changes' streams (getChanges) are the one answer of other types.
            const streams = path.endsWith('/changes') && status === '200' ? ['text/event-stream', 'application/jsonl'] : [];
            const types = Object.keys(response.content ?? {});
            expect(
              types.filter((type) => !type.endsWith('json') && !streams.includes(type)),
              `${method} ${path} ${status}`,
            ).to.deep.equal([]);
          }
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
