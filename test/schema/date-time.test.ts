// The `date-time` format of row schemas (src/schema/date-time.ts) against ajv-formats' full `date-time`,
// whose answers it keeps: on texts that are date-times and on their random edits.

import { fullFormats } from 'ajv-formats/dist/formats.js';
import { expect } from 'chai';
import { isDateTime } from '../../src/schema/date-time.ts';
import { checkRowSchema, compileRowSchema } from '../../src/schema/index.ts';
import { random } from '../support/random.ts';

const format = fullFormats['date-time'];
const ajvFormats = (typeof format === 'function' ? format : (format as { validate: (text: string) => boolean }).validate) as (
  text: string,
) => boolean;

/** Date-times and near misses of each part: days of months and leap years, fractions, offsets, leap seconds. */
const texts = [
  '2026-11-25T12:00:00.000Z',
  '2026-11-25t12:00:00z',
  '2026-11-25 12:00:00+01:30',
  '2026-11-25\u00a012:00:00+0130',
  '2026-11-25T12:00:00-05',
  '2024-02-29T00:00:00Z',
  '2023-02-29T00:00:00Z',
  '2000-02-29T00:00:00Z',
  '1900-02-29T00:00:00Z',
  '2026-04-31T00:00:00Z',
  '2026-13-01T00:00:00Z',
  '2026-00-10T00:00:00Z',
  '2026-01-00T00:00:00Z',
  '2016-12-31T23:59:60Z',
  '2016-12-31T23:59:60.5Z',
  '2016-12-31T15:59:60-08:00',
  '2016-12-31T22:59:60Z',
  '2016-12-31T23:59:61Z',
  '2026-01-01T24:00:00Z',
  '2026-01-01T12:60:00Z',
  '2026-01-01T12:00:00.Z',
  '2026-01-01T12:00:00',
  '2026-01-01T12:00:00+24:00',
  '2026-01-01T12:00:00+05:60',
  '2026-01-01T12:00:00+05:3',
  '2026-01-01T12:00:00Z ',
  '2026-01-01TT12:00:00Z',
  '२०२६-01-01T12:00:00Z',
];
const ALPHABET = '0123456789-:.TtZz+ \u00a0\u2028x';

describe('the date-time format', () => {
  it('answers as ajv-formats does, on date-times and near misses', () => {
    for (const text of texts) expect(isDateTime(text), JSON.stringify(text)).to.equal(ajvFormats(text));
    expect(texts.filter(isDateTime)).to.have.length.above(8);
  });

  it('answers as ajv-formats does on 200,000 random edits of them', () => {
    const below = random(20261202);
    let valid = 0;
    for (let run = 0; run < 200_000; run++) {
      let text = texts[below(texts.length)];
      for (let edits = below(4); edits > 0; edits--) {
        const at = below(text.length + 1);
        const character = ALPHABET[below(ALPHABET.length)];
        const kind = below(3);
        text = text.slice(0, at) + (kind === 2 ? '' : character) + text.slice(kind === 1 ? at : at + 1);
      }
      const expected = ajvFormats(text);
      if (isDateTime(text) !== expected) expect.fail(`${JSON.stringify(text)}: ajv-formats says ${expected}`);
      if (expected) valid++;
    }
    // Both answers are common among the edits, so each way of differing was tried.
    expect(valid).to.be.within(20_000, 180_000);
  });

  it('is the format a row schema checks', () => {
    const validator = compileRowSchema(checkRowSchema({ type: 'object', properties: { at: { type: 'string', format: 'date-time' } } }, ''));
    expect(validator({ at: '2024-02-29T00:00:00Z' })).to.deep.equal([]);
    expect(validator({ at: '2023-02-29T00:00:00Z' })).to.have.length(1);
  });
});
