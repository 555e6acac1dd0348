// What the bench's workloads send (bench/workloads.ts): insert-1-typed's rows must all be written (a 2xx
// each), so each must meet the typed collection's schema and hold an email no other request holds; the
// app's user's workloads must send what their secret-key twins send, with a publishable key and a token
// whose user the rule of `bench` grants every seeded row.
import type { Request } from 'autocannon';
import { expect } from 'chai';
import { jwtVerify } from 'jose';
import { endUserToken, issuer, rules } from '../../bench/end-user.ts';
import { ownedRow, typedIndex, typedSchema } from '../../bench/seed.ts';
import { settingsFromArgs } from '../../bench/settings.ts';
import { httpWorkloads, type LoadJob } from '../../bench/workloads.ts';
import { checkAccess } from '../../src/rules/check.ts';
import { type Claims, compileRules } from '../../src/rules/compile.ts';
import { checkRules } from '../../src/rules/rules.ts';
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

  describe("an app's user's workloads", () => {
    const twins = [
      ['get-row-app', 'get-row'],
      ['list-app', 'list'],
      ['get-row-app-postgres', 'get-row-postgres'],
      ['list-app-postgres', 'list-postgres'],
    ];

    for (const [app, twin] of twins) {
      it(`${app} sends ${twin}'s request with a publishable key and the user's token, on its server`, async () => {
        const token = await endUserToken(60);
        const [sent] = await httpWorkloads[app].requests({ ...job, workload: app, key: 'rb_pub_key', token });
        const [secret] = await httpWorkloads[twin].requests({ ...job, workload: twin });
        expect(httpWorkloads[app].endUser).to.equal(true);
        expect(httpWorkloads[twin].endUser).to.equal(undefined);
        expect(httpWorkloads[app].server).to.equal(httpWorkloads[twin].server);
        expect(httpWorkloads[app].rowsPerRequest(job.settings)).to.equal(httpWorkloads[twin].rowsPerRequest(job.settings));
        expect([sent.method, sent.path, sent.body]).to.deep.equal([secret.method, secret.path, secret.body]);
        expect(sent.headers).to.deep.equal({
          'x-api-key': 'rb_pub_key',
          authorization: `Bearer ${token}`,
          'content-type': 'application/json',
        });
        expect(secret.headers).to.deep.equal({ authorization: 'Bearer rb_key', 'content-type': 'application/json' });
      });
    }

    it("mints a token of the app's issuer whose user the rule of bench grants every seeded row", async () => {
      const token = await endUserToken(3600);
      const { payload } = await jwtVerify(token, new TextEncoder().encode(issuer.secret), {
        issuer: issuer.issuer,
        audience: issuer.audiences[0],
        algorithms: ['HS256'],
      });
      expect(payload.exp! - payload.iat!).to.equal(3600);
      const compiled = compileRules(checkRules(rules));
      const claims = payload as Claims;
      for (const id of [1, 2, 50_000, 100_000]) {
        expect(checkAccess(compiled, { operation: 'read', claims, row: { id, ...ownedRow(id) } }).allowed).to.equal(true);
      }
      const another = { ...claims, sub: 'another-user' };
      expect(checkAccess(compiled, { operation: 'read', claims: another, row: { id: 1, ...ownedRow(1) } }).allowed).to.equal(false);
    });
  });
});
