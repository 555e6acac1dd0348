// Each dialect's SQL of a filter (src/db/sqlite/filter.ts, src/db/postgres/filter.ts) selects exactly the
// rows that matches() (src/query/evaluate.ts) says match: random rows stored as the service stores them
// (the JSON text of their fields but id) in a real database, and random filters of every operator,
// nested paths and $and, $or, $not, compiled and run there. fast-check prints the seed and the shrunk
// counterexample of any failure.
import { expect } from 'chai';
import fc from 'fast-check';
import knexFactory, { type Knex } from 'knex';
import { filterSql as postgresFilterSql } from '../../src/db/postgres/filter.ts';
import { filterSql as sqliteFilterSql } from '../../src/db/sqlite/filter.ts';
import { matches, type Row } from '../../src/query/evaluate.ts';
import { type Filter, type JsonValue, readFilter } from '../../src/query/filter.ts';
import { createDatabase, describeEachBackend, type TestDatabase } from '../support/backends.ts';

/** Property runs: each stores a new set of rows and checks this many filters against it. */
const RUNS = 150;
const FILTERS_PER_RUN = 40;

// Values come mostly from small pools, so that filters often name what rows hold: field names that a
// JSON path cannot spell, that look like array indexes or hold escapes; strings around the orders
// UTF-16 and code points disagree on (U+E000..U+FFFF against astral characters), U+0000, lone
// surrogates and U+D7FF, which PostgreSQL escapes; numbers at the edges of doubles. MARK is in names
// and strings so that the test can tell that nothing a filter holds reaches the SQL's text.
const MARK = 'Zq';
const keyPool = ['a', 'b', 'c', 'id', 'a.b', 'x\\y', '0', 'é', '😀', 'k\u0000', 'k\ud800', '\udc00', 'q"', `${MARK}'; --`, '__proto__'];
const stringPool = ['', 'a', 'ab', 'abc', 'b', 'B', 'é', 'e\u0301', '\u0000', 'a\u0000', 'a\u0000b', '\ud800', '\udbff', '\udc00'];
// Strings that are the JSON text of an object or an array: json_extract() reads such a value as its text.
stringPool.push('{}', '[]', '[null]', '{"a":1}');
stringPool.push('\ud800x', '😀', '😀a', '\uffff', '\ue000', '\ud7ff', '\u0001', 'x\\y', '"', `${MARK}'); drop table rows; --`);
const numberPool = [0, -0, 1, -1, 1.5, 0.1, 0.30000000000000004, 2, 10, 2 ** 53, 2 ** 53 + 2, -(2 ** 53), 2 ** 63, 1e21, 1e-7];
numberPool.push(5e-324, Number.MAX_VALUE, -Number.MAX_VALUE, 123456789012345680000);
// Numbers SQLite's JSON reader rounds to the neighbouring double.
numberPool.push(249989411471411200000, 1.375503693738937e-38, 8281980.495660285, -1.006187595630216e100);

// Most rows have the first few names, so that most conditions name a field some rows have and others lack.
const key = fc.oneof({ weight: 6, arbitrary: fc.constantFrom('a', 'b', 'c') }, fc.constantFrom(...keyPool));
const string = fc.oneof({ weight: 6, arbitrary: fc.constantFrom(...stringPool) }, fc.string({ unit: 'binary', maxLength: 3 }));
const number = fc.oneof({ weight: 6, arbitrary: fc.constantFrom(...numberPool) }, fc.double({ noNaN: true, noDefaultInfinity: true }));
const scalar = fc.oneof(fc.constant(null), fc.boolean(), number, string);
/** An object of `entries`, `__proto__` an own member as JSON.parse makes it. */
const objectOf = (entries: [string, JsonValue][]) => Object.fromEntries(entries) as JsonValue;
const { value } = fc.letrec<{ value: JsonValue }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', maxDepth: 3 },
    { weight: 4, arbitrary: scalar },
    fc.array(tie('value'), { maxLength: 3 }),
    fc.array(fc.tuple(key, tie('value')), { maxLength: 3 }).map(objectOf),
  ),
}));
// A row's own fields never include `id` (openapi.yaml, NewRow); below the top they may.
const rowData = fc.array(fc.tuple(key, value), { maxLength: 5 }).map((entries) => objectOf(entries.filter(([name]) => name !== 'id')));

type Field = { names: string[]; value: JsonValue };

/** Every field of `json` and below it, by the names of its path. */
function fieldsIn(json: JsonValue, names: string[] = [], into: Field[] = []): Field[] {
  if (json === null || typeof json !== 'object' || Array.isArray(json)) return into;
  for (const [name, item] of Object.entries(json)) {
    into.push({ names: [...names, name], value: item });
    fieldsIn(item, [...names, name], into);
  }
  return into;
}

/** `json` with every object's members in the reverse order: equal to it as JSON. */
function reversed(json: JsonValue): JsonValue {
  if (json === null || typeof json !== 'object') return json;
  if (Array.isArray(json)) return json.map(reversed);
  return objectOf(
    Object.entries(json)
      .reverse()
      .map(([name, item]) => [name, reversed(item)]),
  );
}

const escapeKey = (name: string) => name.replaceAll('\\', '\\\\').replaceAll('.', '\\.');
const isScalar = (json: JsonValue) => json === null || typeof json !== 'object';

/**
 * A condition on a field some row holds `sample` in: operands near the sample (itself, its members in
 * another order, a prefix of it, an item of it) as often as any other.
 */
function conditionNear(sample: JsonValue) {
  const operand = fc.oneof({ weight: 3, arbitrary: fc.constant(reversed(sample)) }, value);
  const items = Array.isArray(sample) && sample.length > 0 ? fc.constantFrom(...sample) : value;
  const prefix =
    typeof sample === 'string' ? fc.nat({ max: sample.length }).map((cut) => sample.slice(0, cut)) : fc.oneof(string, fc.constant(''));
  const bound = fc.oneof(
    { weight: 3, arbitrary: isScalar(sample) && sample !== null ? fc.constant(sample as number | string | boolean) : fc.boolean() },
    fc.boolean(),
    number,
    string,
  );
  return fc.oneof(
    { weight: 2, arbitrary: operand },
    fc.record({ $eq: operand }),
    fc.record({ $ne: operand }),
    fc.record({ $in: fc.array(operand, { maxLength: 3 }) }),
    fc.record({ $nin: fc.array(operand, { maxLength: 3 }) }),
    fc.record({ $exists: fc.boolean() }),
    fc.record({ $prefix: prefix }),
    fc.record({ $contains: items }),
    fc.record({ $gt: bound }),
    fc.record({ $gte: bound }),
    fc.record({ $lt: bound }),
    fc.record({ $lte: bound }),
    fc.record({ $gt: bound, $lte: bound }),
    fc.record({ $gte: bound, $lt: bound }),
  );
}

/** Filters as a client sends them, most conditions on fields the rows hold, with values near theirs. */
function filtersOf(rows: JsonValue[]) {
  const fields = rows.flatMap((row) => fieldsIn(row));
  const field = fc.oneof(
    { weight: 3, arbitrary: fields.length > 0 ? fc.constantFrom(...fields) : fc.constant({ names: ['a'], value: null }) },
    fc.record({ names: fc.array(key, { minLength: 1, maxLength: 3 }), value }),
  );
  const idOperand = fc.oneof(fc.integer({ min: -1, max: rows.length + 1 }), fc.double({ noNaN: true, noDefaultInfinity: true }), scalar);
  const idCondition = fc.oneof(
    idOperand,
    fc.record({ $gt: idOperand, $lt: idOperand }, { requiredKeys: [] }),
    fc.record({ $gte: idOperand, $lte: idOperand }, { requiredKeys: [] }),
    fc.record({ $in: fc.array(idOperand, { maxLength: 3 }), $ne: idOperand }, { requiredKeys: [] }),
    fc.record({ $nin: fc.array(idOperand, { maxLength: 3 }), $exists: fc.boolean(), $prefix: string }, { requiredKeys: [] }),
  );
  const member = fc.oneof(
    {
      weight: 6,
      arbitrary: field.chain(({ names, value: sample }) => fc.tuple(fc.constant(names.map(escapeKey).join('.')), conditionNear(sample))),
    },
    fc.tuple(fc.constantFrom('id', 'id.a'), idCondition),
  );
  const { filter } = fc.letrec<{ filter: JsonValue; nested: [string, JsonValue] }>((tie) => ({
    filter: fc.oneof(
      {
        weight: 20,
        arbitrary: fc.array(fc.oneof({ weight: 3, arbitrary: member }, tie('nested')), { minLength: 1, maxLength: 2 }).map(objectOf),
      },
      fc.constant({}),
    ),
    nested: fc.oneof(
      { depthSize: 'small', maxDepth: 2 },
      fc.tuple(fc.constantFrom('$and', '$or'), fc.array(tie('filter'), { minLength: 1, maxLength: 3 })),
      fc.tuple(fc.constant('$not'), tie('filter')),
    ),
  }));
  // The bounds of depth and conditions are filter.test.ts's: a filter past them is not one to run.
  return fc.array(
    filter.filter((candidate) => readFilter(candidate).errors === undefined),
    { minLength: FILTERS_PER_RUN, maxLength: FILTERS_PER_RUN },
  );
}

const cases = fc.array(rowData, { minLength: 8, maxLength: 30 }).chain((rows) => fc.tuple(fc.constant(rows), filtersOf(rows)));

const dialects = { sqlite: sqliteFilterSql, postgres: postgresFilterSql };

describeEachBackend('filters in SQL', (backend) => {
  let database: TestDatabase;
  let knex: Knex;
  const filterSql = dialects[backend];

  before(async () => {
    database = await createDatabase(backend);
    knex = knexFactory(
      backend === 'sqlite'
        ? { client: 'sqlite3', connection: { filename: database.url.slice('sqlite:'.length) }, useNullAsDefault: true }
        : { client: 'pg', connection: database.url },
    );
    // The columns of the service's own table (src/db/migrations.ts).
    await knex.raw(`create table rows (collection_id integer not null, id bigint not null, data text not null,
      primary key (collection_id, id))`);
  });

  after(async () => {
    await knex?.destroy();
    await database?.drop();
  });

  let collection = 0;

  /** A new collection of `rows`, stored as the service stores them; its id, and its rows as a subscriber sees them. */
  async function store(rows: JsonValue[]) {
    const collectionId = ++collection;
    const texts = rows.map((row) => JSON.stringify(row));
    const values = texts.map(() => '(?, ?, ?)').join(', ');
    await knex.raw(
      `insert into rows (collection_id, id, data) values ${values}`,
      texts.flatMap((text, index) => [collectionId, index + 1, text]),
    );
    return { collectionId, stored: texts.map((text, index): Row => ({ id: index + 1, ...JSON.parse(text) })) };
  }

  /** The ids of the rows that the filter's SQL selects, in the middle of a statement with bindings before and after it. */
  async function selected(filter: Filter, collectionId: number): Promise<number[]> {
    const { sql, params } = filterSql(filter, 'r');
    const query = `select id from rows r where r.collection_id = ? and (${sql}) and r.id < ? order by id`;
    const result = await knex.raw(query, [collectionId, ...params, 1_000_000]);
    return (backend === 'sqlite' ? result : result.rows).map((row: { id: number | string }) => Number(row.id));
  }

  it('selects the rows that matches() matches, for random rows and filters', async () => {
    let telling = 0;
    let filters = 0;
    await fc.assert(
      fc.asyncProperty(cases, async ([rows, filterValues]) => {
        const { collectionId, stored } = await store(rows);
        for (const value of filterValues) {
          const filter = readFilter(value).filter!;
          const expected = stored.filter((row) => matches(filter, row)).map((row) => row.id);
          expect(await selected(filter, collectionId), JSON.stringify(value)).to.deep.equal(expected);
          filters++;
          if (expected.length > 0 && expected.length < stored.length) telling++;
        }
      }),
      { numRuns: RUNS },
    );
    // A filter that selects every row or none tells little: most of them must not.
    expect(telling / filters).to.be.above(0.15);
  });

  it('puts nothing a filter holds in the text of its SQL', () => {
    fc.assert(
      fc.property(cases, ([, filterValues]) => {
        for (const value of filterValues) expect(filterSql(readFilter(value).filter!, 'r').sql).not.to.include(MARK);
      }),
      { numRuns: 20 },
    );
  });

  it('runs the largest filters the bounds allow', async () => {
    const many = (n: number, item: (index: number) => JsonValue) => Array.from({ length: n }, (_, index) => item(index));
    const { collectionId, stored } = await store([{ a: 1 }, { a: arrays(7, 1) }, { a: [{ b: { c: { d: { e: { f: 1 } } } } }] }]);
    const largest = {
      'a path of 2,000 keys': { [many(2000, () => 'a').join('.')]: 1 },
      'a path of 1,000 keys a path must escape': { [many(1000, () => 'q"').join('.')]: 1 },
      'an $in of 1,300 numbers': { a: { $in: many(1300, (index) => index % 10) } },
      'a $nin of 650 objects': { a: { $nin: many(650, () => ({})) } },
      'an operand nested 7 levels': { a: arrays(7, 1) },
      'a $contains nested 6 levels': { a: { $contains: { b: { c: { d: { e: { f: 1 } } } } } } },
      '32 conditions in $or': { $or: many(32, (index) => ({ [`f${index}`]: { a: [1, 2, { b: 'x' }] } })) },
    };
    for (const [name, value] of Object.entries(largest)) {
      const { filter, errors } = readFilter(value);
      expect(errors, name).to.equal(undefined);
      const expected = stored.filter((row) => matches(filter!, row)).map((row) => row.id);
      expect(await selected(filter!, collectionId), name).to.deep.equal(expected);
    }
  });
});

/** `value` nested `levels` times in an array. */
const arrays = (levels: number, value: JsonValue): JsonValue => (levels === 0 ? value : [arrays(levels - 1, value)]);
