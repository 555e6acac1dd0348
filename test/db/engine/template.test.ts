// Statements written once with holes (src/db/engine/sql/template.ts, template()): one text for every use,
// each hole's binding set anew, every other binding as written, and no value in the text.
import { expect } from 'chai';
import { raw, sql, template } from '../../../src/db/engine/sql/template.ts';

describe('a statement written once with holes', () => {
  it('keeps its text and binds each use’s values in the holes’ places, the others as written', () => {
    const fixed = sql`owner = ${"ada' or 1=1 --"}`;
    const made = template(
      ['id', 'limit'] as const,
      (hole) => sql`select * from t where id = ${hole.id} and ${fixed} limit ${hole.limit} offset ${3}`,
    );
    expect(made.sql).to.equal('select * from t where id = ? and owner = ? limit ? offset ?');
    expect(made.bind({ id: 7, limit: 50 })).to.deep.equal([7, "ada' or 1=1 --", 50, 3]);
    expect(made.bind({ id: 8, limit: 10 })).to.deep.equal([8, "ada' or 1=1 --", 10, 3]);
  });

  it('fills a hole placed twice in both places, and a hole not placed in none', () => {
    const made = template(['a', 'b'] as const, (hole) => sql`${hole.a} < ${raw('x')} and ${hole.a} > 0`);
    expect(made.sql).to.equal('? < x and ? > 0');
    expect(made.bind({ a: 'v', b: 1 })).to.deep.equal(['v', 'v']);
  });
});
