// asyncapi.yaml: valid, and every message the feed sends checked against it.
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { fromFile, Parser } from '@asyncapi/parser';
import { expect } from 'chai';
import { parse } from 'yaml';
import { messageValidators } from '../../generated/feed-validators.js';
import { closeCodes } from '../../src/feed/messages.ts';

const run = promisify(execFile);
const root = new URL('../../', import.meta.url).pathname;
const readYaml = async (name: string) => parse(await readFile(join(root, name), 'utf8'));

describe('the feed contract', () => {
  describe('asyncapi.yaml', () => {
    it('is a valid AsyncAPI 3.0.0 document (@asyncapi/parser reports no error)', async () => {
      const { document, diagnostics } = await fromFile(new Parser(), join(root, 'asyncapi.yaml')).parse();
      const errors = diagnostics.filter((diagnostic) => diagnostic.severity === 0);
      expect(errors.map((error) => `${error.path.join('.')}: ${error.message}`)).to.deep.equal([]);
      expect(document?.version()).to.equal('3.0.0');
      expect(document?.channels().get('feed')?.address()).to.equal('/ws');
    });

    it('lints clean with Spectral (spectral:asyncapi, warnings included)', async () => {
      const spectral = join(root, 'node_modules/.bin/spectral');
      const args = ['lint', 'asyncapi.yaml', '--ruleset', '.spectral-asyncapi.yaml', '--fail-severity', 'warn'];
      await run(spectral, args, { cwd: root }).catch((error) => {
        throw new Error(`spectral found problems:\n${error.stdout}${error.stderr}`);
      });
    });

    it('names each message after the `type` it carries', async () => {
      const document = await readYaml('asyncapi.yaml');
      for (const message of Object.values<{ name: string; payload: { $ref: string } }>(document.components.messages)) {
        const schema = document.components.schemas[message.payload.$ref.split('/').pop() as string];
        expect(schema.properties.type.const, message.name).to.equal(message.name);
      }
    });

    it('describes refused upgrades with the Problem body and codes of openapi.yaml', async () => {
      const [asyncapi, openapi] = await Promise.all([readYaml('asyncapi.yaml'), readYaml('openapi.yaml')]);
      const ours = asyncapi.components.schemas;
      const theirs = openapi.components.schemas;
      expect(ours.ProblemCode.enum).to.deep.equal(theirs.ProblemCode.enum);
      expect(ours.Problem.required).to.deep.equal(theirs.Problem.required);
      expect(Object.keys(ours.Problem.properties)).to.deep.equal(Object.keys(theirs.Problem.properties));
      expect(ours.ValidationError.properties.in.enum).to.deep.equal(theirs.ValidationErrorLocation.enum);
      for (const { code, status } of asyncapi.channels.feed['x-upgrade-refusals'].statuses) {
        expect(theirs.ProblemCode.enum, code).to.include(code);
        expect(status, code).to.be.within(400, 599);
      }
    });

    it('lists every close code the server uses, with its reason', async () => {
      const document = await readYaml('asyncapi.yaml');
      const documented = document.channels.feed['x-close-codes'].map(({ code, reason }: { code: number; reason: string }) => [
        code,
        reason,
      ]);
      const used = Object.values(closeCodes).map(({ code, reason }) => [code, reason]);
      expect(documented).to.deep.include.members(used);
    });
  });

  describe('generated/feed-validators.js', () => {
    it('accepts every example message of asyncapi.yaml', async () => {
      const document = await readYaml('asyncapi.yaml');
      for (const message of Object.values<{ name: keyof typeof messageValidators; examples: { payload: unknown }[] }>(
        document.components.messages,
      )) {
        const validate = messageValidators[message.name];
        for (const { payload } of message.examples) expect(validate(payload), JSON.stringify(validate.errors)).to.equal(true);
      }
    });

    it('refuses messages that break their schema', () => {
      const insert = { type: 'insert', collection: 'notes', seq: 1, at: '2026-11-22T10:00:00.000Z', row: { id: 1 } };
      expect(messageValidators.insert(insert)).to.equal(true);
      expect(messageValidators.insert({ ...insert, seq: 0 })).to.equal(false);
      expect(messageValidators.insert({ ...insert, at: 'yesterday' })).to.equal(false);
      expect(messageValidators.insert({ ...insert, row: { text: 'no id' } })).to.equal(false);
      expect(messageValidators.insert({ ...insert, extra: true })).to.equal(false);
      expect(messageValidators.ready({ type: 'ready', collection: 'notes', events: [], seq: 0 })).to.equal(false);
    });
  });
});
