// The typed row form's rules, without a browser (src/console/fields.ts): which input each property of a
// schema gets, what an input's content makes of its field, and where a refused write's errors go.
// What a person sees of them in a page is typed.test.ts.
import { expect } from 'chai';
import type { Problem } from '../../src/console/api.ts';
import {
  type FormField,
  formFields,
  type InputState,
  inputKind,
  inputText,
  labelFieldOf,
  pickerFilter,
  placeErrors,
  readInput,
  rowLabel,
  withRelations,
} from '../../src/console/fields.ts';
import { parseRoute, routeHash } from '../../src/console/route.ts';

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

  describe('a relation’s field', () => {
    const relations = [
      { name: 'author', kind: 'to_one', collection: 'people', field: 'author_id', on_delete: 'restrict', reverse: 'posts' },
      { name: 'editor', kind: 'to_one', collection: 'people', field: 'editor_id', on_delete: 'set_null', reverse: null },
      { name: 'comments', kind: 'to_many', collection: 'comments', field: 'post_id', on_delete: 'cascade', reverse: 'post' },
    ] as const;

    it('is picked from a list of the related rows: in its place when the schema declares it, after the others when not', () => {
      const fields = withRelations(
        formFields({ type: 'object', required: ['author_id'], properties: { title: { type: 'string' }, author_id: { type: 'integer' } } }),
        [...relations],
      );
      expect(fields.map(({ name, kind, required, relation }) => ({ name, kind, required, relation }))).to.deep.equal([
        { name: 'title', kind: 'text', required: false, relation: undefined },
        { name: 'author_id', kind: 'relation', required: true, relation: { name: 'author', collection: 'people' } },
        { name: 'editor_id', kind: 'relation', required: false, relation: { name: 'editor', collection: 'people' } },
      ]);
      expect(fields[1].hint).to.equal('the id of a row of people (relation author), or none');
      // A collection without a schema or relations has no form.
      expect(withRelations([], [relations[2]])).to.deep.equal([]);
    });

    it('reads the list’s value as a row id, or none: null of a field that named a row, nothing of one that named none', () => {
      const [field] = withRelations([], [relations[0]]);
      expect(inputKind(field, 7)).to.equal('relation');
      expect(inputKind(field, 'seven')).to.equal('json');
      expect(inputText(field, 7)).to.equal('7');
      expect(inputText(field, null)).to.equal('');
      expect(readInput(field, input({ value: '12' }), 7, false)).to.deep.equal({ value: 12 });
      expect(readInput(field, input({ value: '' }), 7, false)).to.deep.equal({ value: null });
      expect(readInput(field, input({ value: '' }), undefined, true)).to.deep.equal({ keep: true });
      expect(readInput(field, input({ value: '' }), null, false)).to.deep.equal({ keep: true });
    });

    it('names each related row by the field its schema or its rows name it by, and finds rows by an id, words or a filter', () => {
      expect(
        labelFieldOf({ type: 'object', properties: { n: { type: 'integer' }, email: { type: 'string' }, name: { type: 'string' } } }, []),
      ).to.equal('name');
      expect(labelFieldOf({ type: 'object', properties: { code: { type: ['string', 'null'] } } }, [])).to.equal('code');
      expect(labelFieldOf(null, [{ id: 1, n: 2, title: 'A title' }])).to.equal('title');
      expect(labelFieldOf(null, [{ id: 1, sku: 'X-1' }])).to.equal('sku');
      expect(labelFieldOf(null, [{ id: 1, n: 2 }])).to.equal(undefined);
      expect(rowLabel({ id: 3, name: 'Ada' }, 'name')).to.equal('3 · Ada');
      expect(rowLabel({ id: 3 }, 'name')).to.equal('row 3');
      expect(rowLabel({ id: 3, name: 'x'.repeat(80) }, 'name')).to.equal(`3 · ${'x'.repeat(59)}…`);

      const how = { searchable: false, labelField: 'name' };
      expect(pickerFilter('  ', how)).to.deep.equal({});
      expect(pickerFilter('12', how)).to.deep.equal({ filter: '{"id":12}' });
      expect(pickerFilter('Gra', how)).to.deep.equal({ filter: '{"name":{"$prefix":"Gra"}}' });
      expect(pickerFilter('grace hopper', { ...how, searchable: true })).to.deep.equal({ filter: '{"$search":"grace hopper"}' });
      expect(pickerFilter('{"team": 3}', how)).to.deep.equal({ filter: '{"team": 3}' });
      expect(pickerFilter('Gra', { searchable: false, labelField: undefined })).to.have.property('error');
    });
  });
});

describe('console: where it is (the address’s fragment)', () => {
  it('reads and writes a collection, its filter and the row open, the webhooks, the issuers and the keys', () => {
    const routes = [
      { collection: 'posts' },
      { collection: 'people', open: 7 },
      { collection: 'comments', filter: '{"post_id":1}' },
      { collection: 'a b/c', filter: '{"x":"#&?"}', open: 2 },
      'webhooks',
      'issuers',
      'keys',
    ] as const;
    for (const route of routes) expect(parseRoute(routeHash(route)), routeHash(route)).to.deep.equal(route);
    expect(routeHash({ collection: 'people', open: 7 })).to.equal('#/collections/people/rows/7');
    expect(decodeURIComponent(routeHash({ collection: 'comments', filter: '{"post_id":1}' }))).to.equal(
      '#/collections/comments?filter={"post_id":1}',
    );
    for (const unknown of ['', '#', '#/nothing', '#/collections/', '#/collections/posts/rows/0', '#/collections/%E0%A4%A']) {
      expect(parseRoute(unknown), unknown).to.equal(undefined);
    }
  });
});
