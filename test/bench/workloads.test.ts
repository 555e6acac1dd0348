// What the bench's insert workloads send (bench/workloads.ts): insert-1-typed's rows must all be written
// (a 2xx each), so each must meet the typed collection's schema and hold an email no other request holds.
import type { Request } from 'autocannon';
import { expect } from 'chai';
import { typedIndex, typedSchema } from '../../bench/seed.ts';
import { settingsFromArgs } from '../../bench/settings.ts';
import { httpWorkloads, type LoadJob } from '../../bench/workloads.ts';
import { checkRowSchema, compileRowSchema } from '../../src/schema/index.ts';

const job: LoadJob = { workload: 'insert-1-typed', url: 'http://127.0.0.1:1', key: 'rb_key', settings: settingsFromArgs([]) };

/** The requests the load generator sends for `workload`, `count` of them, each built as autocannon builds it. */
async function sent(workload: string, count: number): Promise<Request[]> {
  const [request] = await httpWorkloads[workload].requests({ ...job, workload });
  const setup = request.setupRequest as (request: Request, context: object) => Request;
  return Array.from({ length: count }, () => setup(request, {}));
}

describe('bench', () => {
  describe('insert-1-typed', () => {
    it('has a schema of ten fields and a unique index over one of them', () => {
      expect(Object.keys(typedSchema.properties)).to.have.length(10);
      expect(typedIndex.unique).to.equal(true);
      expect(Object.keys(typedSchema.properties)).to.include.members(typedIndex.fields);
    });

    for (const workload of ['insert-1-typed', 'insert-1-typed-postgres']) {
      it(`${workload} sends one valid row a request, each with a unique email of its own`, async () => {
        const validate = compileRowSchema(checkRowSchema(JSON.parse(JSON.stringify(typedSchema)), ''));
        const requests = await sent(workload, 200);
        const emails = new Set<string>();
        for (const request of requests) {
          expect(request.method).to.equal('POST');
          expect(request.path).to.equal('/v1/collections/typed/rows');
          const rows = JSON.parse(String(request.body));
          expect(rows).to.have.length(1);
          expect(validate(rows[0])).to.deep.equal([]);
          expect(rows[0].email).to.equal(`${request.headers?.['x-bench-request']}@example.com`);
          emails.add(rows[0].email);
        }
        expect(emails.size).to.equal(requests.length);
      });
    }

    it('sends the headers insert-1 sends', async () => {
      const [plain] = await sent('insert-1', 1);
      const [typed] = await sent('insert-1-typed', 1);
      expect(Object.keys(typed.headers ?? {}).sort()).to.deep.equal(Object.keys(plain.headers ?? {}).sort());
    });
  });
});
