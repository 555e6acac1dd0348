// What the bench's workloads send (bench/workloads.ts): insert-1-typed's rows must all be written (a 2xx
// each), so each must meet the typed collection's schema and hold an email no other request holds; the
// app's user's workloads must send what their secret-key twins send, with a publishable key and a token
// whose user the rule of `bench` grants every seeded row. The search corpus (issue 55) is a function of
// the row id, of real words drawn commonest most often; search asks for two words of its band, and
// insert-1-search sends insert-1's headers with rows of that corpus.
import type { Request } from 'autocannon';
import { expect } from 'chai';
import { jwtVerify } from 'jose';
import { endUserToken, issuer, rules } from '../../bench/end-user.ts';
import {
  BODY_WORDS,
  benchRelations,
  benchRow,
  collections,
  commentRow,
  corpusRow,
  ownedRow,
  personOf,
  personRow,
  postRow,
  searchIndex,
  TITLE_WORDS,
  typedIndex,
  typedSchema,
  VOCABULARY,
} from '../../bench/seed.ts';
import { settingsFromArgs } from '../../bench/settings.ts';
import {
  cascadeWorkloads,
  httpWorkloads,
  type LoadJob,
  needsPostgres,
  SEARCH_BAND,
  SEARCH_ORDER_BY,
  SEARCH_PAGE,
  usesRelations,
} from '../../bench/workloads.ts';
import { checkAccess } from '../../src/rules/check.ts';
import { type Claims, compileRules } from '../../src/rules/compile.ts';
import { checkRules } from '../../src/rules/rules.ts';
import { checkRowSchema, compileRowSchema } from '../../src/schema/index.ts';
import { wordsOf } from '../../src/search/words.ts';

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

  describe('the search corpus and its workloads (issue 55)', () => {
    it('makes each row of real words from its id alone: a title of 5 and a body of 25', () => {
      const vocabulary = new Set(VOCABULARY);
      expect(vocabulary.size).to.equal(5000);
      expect(corpusRow(7)).to.deep.equal(corpusRow(7));
      expect(corpusRow(7)).to.not.deep.equal(corpusRow(8));
      for (const id of [1, 2, 500_000, 1_000_000]) {
        const { title, body } = corpusRow(id);
        // The words a search reads (src/search/words.ts) are the words drawn, as they were drawn.
        expect(wordsOf(title)).to.deep.equal(title.split(' ')).and.have.length(TITLE_WORDS);
        expect(wordsOf(body)).to.deep.equal(body.split(' ')).and.have.length(BODY_WORDS);
        for (const word of wordsOf(`${title} ${body}`)) expect(vocabulary.has(word), word).to.equal(true);
      }
    });

    it('draws the commonest words most often (Zipf-like)', () => {
      const counts = new Map<string, number>();
      for (let id = 1; id <= 2000; id++) {
        const { title, body } = corpusRow(id);
        for (const word of `${title} ${body}`.split(' ')) counts.set(word, (counts.get(word) ?? 0) + 1);
      }
      const [first, tenth, hundredth, thousandth] = [0, 9, 99, 999].map((rank) => counts.get(VOCABULARY[rank]) ?? 0);
      expect(first).to.be.above(5 * tenth);
      expect(tenth).to.be.above(5 * hundredth);
      expect(hundredth).to.be.above(3 * thousandth);
    });

    for (const workload of ['search', 'search-postgres']) {
      it(`${workload} asks for the first page of two different words of its band, a pair of its own a request, at a few connections`, async () => {
        const band = new Set(VOCABULARY.slice(SEARCH_BAND.from, SEARCH_BAND.to));
        const requests = await sent(workload, 100);
        const pairs = new Set<string>();
        for (const request of requests) {
          expect(request.method).to.equal('GET');
          const url = new URL(String(request.path), 'http://127.0.0.1');
          expect(url.pathname).to.equal('/v1/collections/corpus/rows');
          expect(url.searchParams.get('order_by')).to.equal(SEARCH_ORDER_BY);
          expect(url.searchParams.get('limit')).to.equal(String(SEARCH_PAGE));
          const { $search } = JSON.parse(url.searchParams.get('filter') ?? '');
          const words = $search.split(' ');
          expect(words).to.have.length(2);
          expect(words[0]).to.not.equal(words[1]);
          for (const word of words) expect(band.has(word), word).to.equal(true);
          pairs.add($search);
        }
        expect(pairs.size).to.be.above(90);
        expect(httpWorkloads[workload].connections).to.be.below(job.settings.connections);
      });
    }

    for (const workload of ['insert-1-search', 'insert-1-search-postgres']) {
      it(`${workload} sends insert-1's headers and one corpus row a request, of the fields of the search index of notes`, async () => {
        const [plain] = await sent('insert-1', 1);
        const requests = await sent(workload, 50);
        expect(searchIndex.fields).to.have.length(2);
        const bodies = new Set<string>();
        for (const request of requests) {
          expect(request.path).to.equal('/v1/collections/notes/rows');
          expect(Object.keys(request.headers ?? {}).sort()).to.deep.equal(Object.keys(plain.headers ?? {}).sort());
          const rows = JSON.parse(String(request.body));
          expect(rows).to.have.length(1);
          expect(Object.keys(rows[0])).to.deep.equal([...searchIndex.fields]);
          bodies.add(String(request.body));
        }
        expect(bodies.size).to.equal(requests.length);
      });
    }
  });

  describe('the related rows and their workloads (issue 54)', () => {
    const { settings } = job;

    it('seeds posts naming people, and comments naming the posts, commentsPerPost each, every id one that exists', () => {
      const authors = new Set<number>();
      for (let id = 1; id <= settings.posts; id++) {
        const { author_id } = postRow(id, settings.people);
        expect(author_id).to.be.within(1, settings.people);
        authors.add(author_id);
      }
      // Scattered over every person, not one.
      expect(authors.size).to.be.above(settings.people * 0.9);
      const perPost = new Map<number, number>();
      for (let id = 1; id <= settings.posts * settings.commentsPerPost; id++) {
        const { post_id } = commentRow(id, settings.commentsPerPost);
        perPost.set(post_id, (perPost.get(post_id) ?? 0) + 1);
      }
      expect(perPost.size).to.equal(settings.posts);
      expect(new Set(perPost.values())).to.deep.equal(new Set([settings.commentsPerPost]));
      expect(
        benchRelations.map(([collection, name, { field, collection: target, on_delete }]) => [collection, name, field, target, on_delete]),
      ).to.deep.equal([
        [collections.posts, 'author', 'author_id', collections.people, 'restrict'],
        [collections.comments, 'post', 'post_id', collections.posts, 'cascade'],
        [collections.linked, 'person', 'person_id', collections.people, 'restrict'],
        [collections.children, 'parent', 'parent_id', collections.parents, 'cascade'],
      ]);
    });

    for (const workload of ['insert-1-related', 'insert-1-related-postgres']) {
      it(`${workload} sends insert-1's headers and row with a person that exists, a thousand in turn`, async () => {
        const [plain] = await sent('insert-1', 1);
        const requests = await sent(workload, 1000);
        const persons = new Set<number>();
        for (const request of requests) {
          expect(request.path).to.equal(`/v1/collections/${collections.linked}/rows`);
          expect(Object.keys(request.headers ?? {}).sort()).to.deep.equal(Object.keys(plain.headers ?? {}).sort());
          const [row, ...more] = JSON.parse(String(request.body));
          expect(more).to.deep.equal([]);
          const { person_id, ...fields } = row;
          expect(fields).to.deep.equal(benchRow(1));
          expect(person_id).to.be.within(1, settings.people);
          persons.add(person_id);
        }
        expect(persons.size).to.be.above(500);
        expect(personOf(1, settings.people)).to.equal(personOf(1, settings.people));
      });
    }

    for (const suffix of ['', '-postgres']) {
      it(`list-posts-by-author${suffix} and list-posts-match-author${suffix} ask for the same persons' posts in turn, by field and through the relation`, async () => {
        const filters = async (workload: string) =>
          (await httpWorkloads[workload].requests({ ...job, workload })).map((request) => {
            const url = new URL(String(request.path), 'http://bench');
            expect(url.pathname).to.equal(`/v1/collections/${collections.posts}/rows`);
            expect(url.searchParams.get('limit')).to.equal(String(settings.pageSize));
            return JSON.parse(String(url.searchParams.get('filter')));
          });
        const byField = await filters(`list-posts-by-author${suffix}`);
        const throughRelation = await filters(`list-posts-match-author${suffix}`);
        expect(byField.length).to.equal(Math.min(1000, settings.people));
        expect(new Set(byField.map((filter) => filter.author_id)).size).to.equal(byField.length);
        expect(throughRelation).to.deep.equal(
          byField.map(({ author_id }) => ({ author: { $match: { email: personRow(author_id).email } } })),
        );
      });
    }

    for (const [suffix, server] of [
      ['', 'rowbase'],
      ['-postgres', 'rowbase-postgres'],
    ]) {
      it(`list-posts${suffix} and its expanding twins read the same first page of posts, on ${server}`, async () => {
        const paths = [];
        for (const name of ['list-posts', 'list-posts-author', 'list-posts-comments']) {
          const workload = `${name}${suffix}`;
          expect(httpWorkloads[workload].server).to.equal(server);
          expect(httpWorkloads[workload].rowsPerRequest(settings)).to.equal(settings.pageSize);
          expect(usesRelations(workload)).to.equal(true);
          const [request] = await httpWorkloads[workload].requests({ ...job, workload });
          expect(request.method).to.equal('GET');
          paths.push(String(request.path));
        }
        expect(paths).to.deep.equal([
          `/v1/collections/posts/rows?limit=${settings.pageSize}`,
          `/v1/collections/posts/rows?limit=${settings.pageSize}&expand=author`,
          `/v1/collections/posts/rows?limit=${settings.pageSize}&expand=comments`,
        ]);
      });
    }

    it('deletes a row named by cascadeNaming others on each backend, measured when PostgreSQL answers on it', () => {
      expect(cascadeWorkloads).to.deep.equal({ 'cascade-1000': 'rowbase', 'cascade-1000-postgres': 'rowbase-postgres' });
      expect(settings.cascadeNaming).to.equal(1000);
      expect([needsPostgres('cascade-1000'), needsPostgres('cascade-1000-postgres')]).to.deep.equal([false, true]);
      expect(usesRelations('cascade-1000')).to.equal(true);
      expect(usesRelations('insert-1')).to.equal(false);
    });
  });
});
