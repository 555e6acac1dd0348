// The typed row form's rules, without a browser (src/console/fields.ts): which input each property of a
// schema gets, what an input's content makes of its field, and where a refused write's errors go.
// What a person sees of them in a page is typed.test.ts.
import { expect } from 'chai';
import type { Problem } from '../../src/console/api.ts';
import { type FormField, formFields, type InputState, placeErrors, readInput } from '../../src/console/fields.ts';

const problem = (members: Partial<Problem>): Problem => ({
  type: 'urn:rowbase:problem:x',
  title: 'x',
  status: 422,
  detail: 'refused',
  code: 'row_invalid',
  instance: 'urn:rowbase:request:test',
  ...members,
});

const input = (state: Partial<InputState>): InputState => ({ value: '', checked: false, badInput: false, ...state });

describe('console: the typed row form', () => {
  describe('formFields', () => {
    it('gives each top-level property an input of its type, in the schema’s order, but the id', () => {
      const fields = formFields({
        type: 'object',
        required: ['title'],
        $defs: { stage: { enum: ['todo', 'done', null] } },
        properties: {
          id: { type: 'integer' },
          title: { type: 'string', maxLength: 1 },
          due: { type: 'string', format: 'date' },
          at: { type: 'string', format: 'date-time' },
          mail: { type: 'string', format: 'email' },
          home: { type: 'string', format: 'uri' },
          score: { type: ['number', 'null'], minimum: 0 },
          count: { type: 'integer' },
          done: { type: 'boolean' },
          stage: { $ref: '#/$defs/stage' },
          kind: { const: 'task' },
          tags: { type: 'array' },
          either: { type: ['string', 'integer'] },
          anything: true,
          shaped: { enum: [{ a: 1 }] },
        },
      });
      expect(fields.map(({ name, kind, required }) => [name, kind, required])).to.deep.equal([
        ['title', 'text', true],
        ['due', 'date', false],
        ['at', 'text', false],
        ['mail', 'email', false],
        ['home', 'url', false],
        ['score', 'number', false],
        ['count', 'integer', false],
        ['done', 'boolean', false],
        ['stage', 'choice', false],
        ['kind', 'choice', false],
        ['tags', 'json', false],
        ['either', 'json', false],
        ['anything', 'json', false],
        ['shaped', 'json', false],
      ]);
      const hints = Object.fromEntries(fields.map((field) => [field.name, field.hint]));
      expect(hints).to.include({
        title: 'string, at most 1 character',
        at: 'string (date-time, as 2024-05-01T12:00:00Z)',
        score: 'number or null, at least 0',
        stage: 'one of todo, done, null',
      });
      expect(fields.find((field) => field.name === 'stage')?.choices).to.deep.equal(['todo', 'done', null]);
    });

    it('has no fields without a schema, or for one that declares no properties', () => {
      expect(formFields(null)).to.deep.equal([]);
      expect(formFields({ type: 'object' })).to.deep.equal([]);
    });
  });

  describe('readInput', () => {
    const [text, date, number, flag, choice, json] = formFields({
      properties: {
        text: { type: 'string' },
        date: { type: 'string', format: 'date' },
        number: { type: 'number' },
        flag: { type: 'boolean' },
        choice: { enum: ['a', 'b'] },
        json: { type: 'object' },
      },
    }) as FormField[];

    const scenarios: {
      name: string;
      field: FormField;
      state: Partial<InputState>;
      before: unknown;
      inserting?: boolean;
      reading: unknown;
    }[] = [
      { name: 'an empty text keeps a field the row lacks', field: text, state: {}, before: undefined, reading: { keep: true } },
      { name: 'an empty text keeps a null', field: text, state: {}, before: null, reading: { keep: true } },
      { name: 'an emptied text is the empty string', field: text, state: {}, before: 'x', reading: { value: '' } },
      {
        name: 'a date input is its full-date',
        field: date,
        state: { value: '2024-02-29' },
        before: undefined,
        reading: { value: '2024-02-29' },
      },
      { name: 'a number is read as one', field: number, state: { value: '2.5' }, before: 1, reading: { value: 2.5 } },
      { name: 'an emptied number is null', field: number, state: {}, before: 1, reading: { value: null } },
      {
        name: 'a number input holding no number says so',
        field: number,
        state: { badInput: true },
        before: 1,
        reading: { error: 'is not a number' },
      },
      { name: 'an unchecked box keeps a field that held no boolean', field: flag, state: {}, before: null, reading: { keep: true } },
      {
        name: 'an unchecked box is false in a new row',
        field: flag,
        state: {},
        before: undefined,
        inserting: true,
        reading: { value: false },
      },
      { name: 'an unchecked box makes false of true', field: flag, state: {}, before: true, reading: { value: false } },
      { name: 'a checked box is true', field: flag, state: { checked: true }, before: undefined, reading: { value: true } },
      { name: 'a choice is its value', field: choice, state: { value: '1' }, before: 'a', reading: { value: 'b' } },
      { name: 'the keeping option keeps', field: choice, state: { value: '' }, before: undefined, reading: { keep: true } },
      { name: 'JSON is parsed', field: json, state: { value: '{"a": [1]}' }, before: undefined, reading: { value: { a: [1] } } },
      {
        name: 'JSON emptied cannot remove the field',
        field: json,
        state: { value: ' ' },
        before: {},
        reading: { error: 'cannot be removed, only set (to null, say)' },
      },
      // A value the field's own input cannot show (here, as the JSON view left it) is edited as JSON.
      { name: 'a number held by a text field is edited as JSON', field: text, state: { value: '7' }, before: 3, reading: { value: 7 } },
    ];
    for (const { name, field, state, before, inserting = false, reading } of scenarios) {
      it(name, () => {
        expect(readInput(field, input(state), before, inserting)).to.deep.equal(reading);
      });
    }

    it('says why text that is no JSON holds no value', () => {
      expect(readInput(json, input({ value: '{' }), undefined, false))
        .to.have.property('error')
        .that.matches(/^is not JSON: /);
    });
  });

  describe('placeErrors', () => {
    const fields = ['email', 'tags', 'a/b'];

    it('puts a row’s errors at the field of their pointer’s first segment, deeper ones with their pointer', () => {
      const placed = placeErrors(
        problem({
          errors: [
            { row: 0, pointer: '/email', keyword: 'format', message: 'must be an email address' },
            { row: 0, pointer: '/tags/1', keyword: 'type', message: 'must be a string' },
            { row: 0, pointer: '/a~1b', keyword: 'type', message: 'must be a number' },
            { row: 0, pointer: '', keyword: 'type', message: 'must be an object' },
            { row: 0, pointer: '/nickname', keyword: 'additionalProperties', message: 'is not allowed by the schema' },
          ],
        }),
        fields,
      );
      expect(Object.fromEntries(placed.atFields)).to.deep.equal({
        email: ['must be an email address'],
        tags: ['/tags/1: must be a string'],
        'a/b': ['must be a number'],
      });
      expect(placed.elsewhere).to.deep.equal(['must be an object', '/nickname: is not allowed by the schema']);
    });

    it('puts a unique violation at the index’s fields, naming the row that holds the values', () => {
      const placed = placeErrors(problem({ status: 409, code: 'unique_violation', fields: ['email', 'team'], existing_id: 4 }), fields);
      expect(Object.fromEntries(placed.atFields)).to.deep.equal({ email: ['row 4 holds this value already (unique index email, team)'] });
      expect(placed.elsewhere).to.deep.equal(['team: row 4 holds this value already (unique index email, team)']);
      const within = placeErrors(problem({ status: 409, code: 'unique_violation', fields: ['email'] }), fields);
      expect(within.atFields.get('email')).to.deep.equal(['two rows of this write share this value of the unique index email']);
    });
  });
});
