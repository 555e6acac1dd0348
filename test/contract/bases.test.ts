// The base documents the account's are built of (src/contract/bases.ts): openapi.yaml and asyncapi.yaml
// read from generated/contract-documents.json as yaml parses them, and any other text parsed by yaml.
import { readFile } from 'node:fs/promises';
import { expect } from 'chai';
import { parse } from 'yaml';
import { parseBases } from '../../src/contract/bases.ts';

describe('contract: the base documents', () => {
  it('reads openapi.yaml and asyncapi.yaml as yaml parses them', async () => {
    const texts = {
      openapi: await readFile(new URL('../../openapi.yaml', import.meta.url), 'utf8'),
      asyncapi: await readFile(new URL('../../asyncapi.yaml', import.meta.url), 'utf8'),
    };
    const bases = parseBases(texts);
    expect(bases.openapi).to.deep.equal(parse(texts.openapi));
    expect(bases.asyncapi).to.deep.equal(parse(texts.asyncapi));
  });

  it('parses a text that generated/ was not made of with yaml', () => {
    expect(parseBases({ openapi: 'openapi: 3.0.3\npaths: {}\n' })).to.deep.equal({ openapi: { openapi: '3.0.3', paths: {} } });
  });
});
