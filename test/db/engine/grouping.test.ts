// The one batching of the data layer (src/db/engine/grouping.ts), as PostgreSQL's inserts into one collection
// use it: inserts that wait their turn go as one statement, each request keeping its rows together and
// in order, and a batch that fails runs each of its items alone.
import { expect } from 'chai';
import { Groups } from '../../../src/db/engine/grouping.ts';

/** Runs one statement of `texts`, answers its first id. */
type InsertStatement = (texts: string[]) => Promise<number>;

describe('the data layer', () => {
  describe('groups', () => {
    /** A statement that takes a turn of the event loop, answers ids from 1 on, and records what it was given. */
    const fakeStatement = (refuse = '') => {
      const statements: string[][] = [];
      let next = 1;
      const statement: InsertStatement = async (texts) => {
        statements.push(texts);
        await new Promise((resolve) => setImmediate(resolve));
        if (texts.includes(refuse)) throw new Error('refused');
        const first = next;
        next += texts.length;
        return first;
      };
      return { statements, statement };
    };
    /** Groups as PostgreSQL's inserts make them (src/db/postgres/rows.ts): two under way, each request's rows in order. */
    const inserts = (statement: InsertStatement) =>
      new Groups<string[], number>({
        maxRunning: 2,
        maxWeight: 5000,
        async run(_key, batch) {
          let next = await statement(batch.flat());
          return batch.map((texts) => {
            const first = next;
            next += texts.length;
            return first;
          });
        },
      });

    it('runs two statements at once, and merges the inserts that wait meanwhile, in order', async () => {
      const { statements, statement } = fakeStatement();
      const batches = inserts(statement);
      const requests = Array.from({ length: 6 }, (_, n) => [`${n}a`, `${n}b`]);
      const firsts = await Promise.all(requests.map((texts) => batches.add('c', texts, texts.length)));
      expect(statements).to.deep.equal([
        ['0a', '0b'],
        ['1a', '1b'],
        ['2a', '2b', '3a', '3b', '4a', '4b', '5a', '5b'],
      ]);
      expect(firsts).to.deep.equal([1, 3, 5, 7, 9, 11]);
    });

    it('runs each insert of a failed merged statement alone, so that only the failing one fails', async () => {
      const { statements, statement } = fakeStatement('bad');
      const batches = inserts(statement);
      const settled = await Promise.allSettled([['0'], ['1'], ['2'], ['bad'], ['4']].map((texts) => batches.add('c', texts, texts.length)));
      expect(settled.map((each) => (each.status === 'fulfilled' ? each.value : 'failed'))).to.deep.equal([1, 2, 3, 'failed', 4]);
      expect(statements).to.deep.equal([['0'], ['1'], ['2', 'bad', '4'], ['2'], ['bad'], ['4']]);
    });

    it('keeps the inserts of different collections apart', async () => {
      const { statements, statement } = fakeStatement();
      const batches = inserts(statement);
      await Promise.all(['a', 'b', 'a', 'b', 'a', 'b'].map((key, n) => batches.add(key, [`${key}${n}`])));
      for (const texts of statements) expect(new Set(texts.map((text) => text[0])).size).to.equal(1);
    });

    it('puts no more than its weight in a batch, and never splits an item heavier alone', async () => {
      const seen: number[][] = [];
      const batches = new Groups<number, number>({
        maxWeight: 5,
        async run(_key, batch) {
          seen.push(batch);
          await new Promise((resolve) => setImmediate(resolve));
          return batch;
        },
      });
      const answers = await Promise.all([1, 3, 2, 2, 9, 1].map((weight) => batches.add('c', weight, weight)));
      expect(answers).to.deep.equal([1, 3, 2, 2, 9, 1]);
      expect(seen).to.deep.equal([[1], [3, 2], [2], [9], [1]]);
    });
  });
});
