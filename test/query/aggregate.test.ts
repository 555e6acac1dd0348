// The rules of aggregates in memory (src/query/aggregate.ts): exact sums, whatever the order; JSON
// equality of groups; min and max in a page's order; the order and limit of groups; and a query read, or
// refused naming each place.
import { expect } from 'chai';
import fc from 'fast-check';
import { aggregateInMemory, decimalOf, decimalOfText, exactSum, parseAggregateQuery } from '../../src/query/aggregate.ts';
import type { Row } from '../../src/query/evaluate.ts';

const query = (body: object) => parseAggregateQuery(body, 'body', 1000);
const rows = (...fields: object[]): Row[] => fields.map((row, index) => ({ id: index + 1, ...row }));

describe('aggregates in memory', () => {
  describe('exact sums', () => {
    it('adds the numbers as their JSON text writes them, rounded once', () => {
      expect(exactSum([0.1, 0.2, 0.3].map(decimalOf))).to.equal(0.6);
      expect(exactSum(Array.from({ length: 10 }, () => decimalOf(0.1)))).to.equal(1);
      expect(exactSum([1e16, 1, -1e16].map(decimalOf))).to.equal(1);
      expect(exactSum([2 ** 53, 1, 1].map(decimalOf))).to.equal(2 ** 53 + 2);
      expect(exactSum([5e-324, 1e308, -1e308].map(decimalOf))).to.equal(5e-324);
      expect(exactSum([])).to.equal(0);
    });

    it('reads PostgreSQL numeric text and JSON text alike', () => {
      expect(decimalOfText('-0.000125')).to.deep.equal({ digits: -125n, exponent: -6 });
      expect(decimalOfText('1e+21')).to.deep.equal({ digits: 1n, exponent: 21 });
      expect(decimalOfText('-1.5E-7')).to.deep.equal({ digits: -15n, exponent: -8 });
    });

    it('gives one double whatever the order of the numbers', () => {
      fc.assert(
        fc.property(fc.array(fc.double({ noNaN: true, noDefaultInfinity: true }), { maxLength: 30 }), fc.integer(), (numbers, seed) => {
          const shuffled = [...numbers].sort((a, b) => ((a * 31 + seed) % 7) - ((b * 31 + seed) % 7) || a - b);
          expect(Object.is(exactSum(numbers.map(decimalOf)), exactSum(shuffled.map(decimalOf))) || numbers.length === 0).to.equal(true);
        }),
      );
    });

    it('adds integers exactly up to 2^53', () => {
      fc.assert(
        fc.property(fc.array(fc.integer({ min: -(2 ** 40), max: 2 ** 40 }), { maxLength: 100 }), (integers) => {
          expect(exactSum(integers.map(decimalOf))).to.equal(Number(integers.reduce((sum, n) => sum + BigInt(n), 0n)));
        }),
      );
    });
  });

  it('groups by JSON equality, missing and null together, answering objects with sorted members', () => {
    const answer = aggregateInMemory(
      rows({ g: { b: 1, a: [1, { d: 1, c: 2 }] } }, { g: { a: [1, { c: 2, d: 1 }], b: 1 } }, { g: null }, {}, { g: 1 }),
      query({ group_by: ['g'] }),
    );
    expect(answer.groups).to.deep.equal([
      { g: 1, count: 1 },
      { g: { a: [1, { c: 2, d: 1 }], b: 1 }, count: 2 },
      { g: null, count: 2 },
    ]);
    expect(JSON.stringify(answer.groups[1].g)).to.equal('{"a":[1,{"c":2,"d":1}],"b":1}');
  });

  it('takes min and max in a page order: numbers, strings, booleans, then objects and arrays by id', () => {
    const some = rows({ v: [2] }, { v: true }, { v: 'b' }, { v: { x: 1 } }, { v: null }, { v: 'a' });
    const answer = aggregateInMemory(some, query({ aggregates: { lo: { min: 'v' }, hi: { max: 'v' } } }));
    expect(answer.groups).to.deep.equal([{ lo: 'a', hi: { x: 1 } }]);
    const objects = aggregateInMemory(rows({ v: [2] }, { v: { x: 1 } }), query({ aggregates: { lo: { min: 'v' }, hi: { max: 'v' } } }));
    expect(objects.groups).to.deep.equal([{ lo: [2], hi: { x: 1 } }]);
  });

  it('orders groups with null last in both directions, then by the group fields, and cuts at the limit', () => {
    const some = rows({ g: 'a' }, { g: 'b' }, { g: 'b' }, {}, { g: 2 });
    const desc = aggregateInMemory(some, query({ group_by: ['g'], order: [{ field: 'g', direction: 'desc' }] }));
    expect(desc.groups.map(({ g }) => g)).to.deep.equal(['b', 'a', 2, null]);
    const top = aggregateInMemory(some, query({ group_by: ['g'], order: [{ field: 'count', direction: 'desc' }], limit: 2 }));
    expect(top).to.deep.equal({
      groups: [
        { g: 'b', count: 2 },
        { g: 2, count: 1 },
      ],
      truncated: true,
    });
  });

  it('refuses a query naming every place that is wrong', () => {
    let errors: { name: string }[] = [];
    try {
      query({ group_by: ['ok', 'a b'], aggregates: { ok: { count: {} }, m: { median: 'x' } }, order: [{ field: 'zz' }], limit: 1001 });
    } catch (error) {
      errors = (error as { options: { errors: { name: string }[] } }).options.errors;
    }
    expect(errors.map(({ name }) => name)).to.deep.equal([
      '/group_by/1',
      '/aggregates/ok',
      '/aggregates/m/median',
      '/order/0/field',
      '/limit',
    ]);
  });
});
