// The contract's diff of a plan in the declarations' worker (src/declarations/contract.ts, aside.ts): one
// not made within its time is a 503, the worker running it ended with the jobs waiting in it; the next diff
// starts a worker of its own.
import { readFile } from 'node:fs/promises';
import { expect } from 'chai';
import { aside } from '../../src/declarations/aside.ts';
import { targetOf } from '../../src/declarations/checks.ts';
import { contractDiffAside } from '../../src/declarations/contract.ts';
import { parseDeclaration } from '../../src/declarations/format.ts';
import type { ApiError } from '../../src/errors.ts';

describe("declarations: the contract's diff", () => {
  it('answers 503 for a diff not made within its time, and makes the next in a new worker', async function () {
    // The next diff's worker starts cold (under tsx, its modules loaded again): seconds at load.
    this.timeout(60_000);
    const documents = {
      openapi: await readFile(new URL('../../openapi.yaml', import.meta.url), 'utf8'),
      asyncapi: await readFile(new URL('../../asyncapi.yaml', import.meta.url), 'utf8'),
    };
    const options = { allowPrivate: true };
    const none = () => undefined;
    const current = await targetOf(parseDeclaration('collections: {people: {}}\n'), {}, none, options);
    const target = await targetOf(
      parseDeclaration('collections: {people: {schema: {type: object, properties: {name: {type: string}}}}}\n'),
      current,
      none,
      options,
    );
    const refusal = (error: ApiError) => error;
    // No worker answers within a millisecond: it has not even started. A job waiting behind it in that
    // worker is refused with it.
    const diff = contractDiffAside(current, target, documents, 1);
    const waiting = aside({ readDeclaration: 'version: 1\n' });
    const waitingDiff = contractDiffAside(current, target, documents);
    const stopped = await diff.then(() => undefined, refusal);
    expect(stopped?.status).to.equal(503);
    expect(stopped?.code).to.equal('unavailable');
    expect(stopped?.detail).to.match(/took longer than 0\.001 s and was stopped/);
    expect((await waiting.then(() => undefined, refusal))?.code).to.equal('unavailable');
    // A plan's diff waiting there is told so, not that its own diff failed.
    expect((await waitingDiff.then(() => undefined, refusal))?.detail).to.match(/another plan ran past its time/);

    const made = await contractDiffAside(current, target, documents);
    expect(made.documents.openapi.secret.some(({ path }) => path.endsWith('/properties/name'))).to.equal(true);
  });
});
