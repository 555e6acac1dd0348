// What one caller holding a publishable key may do with one collection's rows (docs/access.md, "Rules on
// requests"): the collection's rules (compile.ts) for the caller's claims, each rule's access worked out
// once per request (or once per subscription of the feed). A read takes the rows' rule ANDed into its own
// filter; an answer loses the fields hidden from the caller; a write is checked inside its transaction, on
// the row before and after it, as the data layer's RowGuard.
import { ApiError, type FieldError, forbidden, rowNotFound } from '../errors.ts';
import { type Patch, topField } from '../patches/index.ts';
import { compareCodePoints, matches, type Row } from '../query/evaluate.ts';
import type { Filter } from '../query/filter.ts';
import type { Json } from '../rows.ts';
import { type Decision, decide, filledRow, isDefault } from './check.ts';
import { type Access, type Claims, type CompiledField, type CompiledRule, type CompiledRules, claimOf } from './compile.ts';
import { OPERATIONS, type Operation } from './rules.ts';

/** A row's fields, without its id, as the data layer hands them to a guard. */
type Fields = { readonly [field: string]: unknown };

/** A filter no row matches: ids start at 1. */
const NOTHING: Filter = { kind: 'field', path: ['id'], op: '$lt', operand: 0 };

/** A rule and its access for the caller's claims. */
interface Granted {
  rule: CompiledRule;
  access: Access;
}

/** Where a request names a field: the field and the place of the request that names it (for the 403). */
export interface FieldUse {
  field: string;
  at: Omit<FieldError, 'message'>;
}

export class Grant {
  private readonly operations: Record<Operation, Granted>;
  /** The fields whose read rule may hide them from this caller: a rule that is not `all` for the claims. */
  private readonly hidden: [string, Granted][] = [];
  private readonly writes = new Map<string, Granted>();
  /** The fields `fields` names, with their defaults. */
  private readonly fields: ReadonlyMap<string, CompiledField>;

  constructor(
    rules: CompiledRules,
    readonly claims: Claims,
    readonly collection: string,
  ) {
    this.fields = rules.fields;
    const granted = (rule: CompiledRule): Granted => ({ rule, access: rule.access(claims) });
    this.operations = Object.fromEntries(OPERATIONS.map((operation) => [operation, granted(rules.operations[operation])])) as Record<
      Operation,
      Granted
    >;
    for (const [name, field] of rules.fields) {
      if (field.read) {
        const read = granted(field.read);
        if (read.access.kind !== 'all') this.hidden.push([name, read]);
      }
      if (field.write) this.writes.set(name, granted(field.write));
    }
  }

  /**
   * `filter` narrowed to the rows the caller may reach by `operation`: those its `read` rule grants, and
   * for an update or a delete those its own rule grants too. 403 when a rule denies the operation to
   * every row (`false`, or `"authenticated"` to an anonymous caller); a rule that names a claim the
   * token lacks matches no row.
   */
  scope(filter: Filter, operation: 'read' | 'update' | 'delete'): Filter;
  scope(filter: Filter | undefined, operation: 'read' | 'update' | 'delete'): Filter | undefined;
  scope(filter: Filter | undefined, operation: 'read' | 'update' | 'delete'): Filter | undefined {
    // The caller's own conditions stay at the top level, beside the rule's, where a page's plan looks for
    // an index (src/db/reads/pages.ts): nested in an `$and` of their own, they would choose none.
    const filters = !filter ? [] : filter.kind === 'and' ? [...filter.filters] : [filter];
    for (const each of operation === 'read' ? (['read'] as const) : (['read', operation] as const)) {
      const { access } = this.operations[each];
      if (access.kind === 'filter') filters.push(access.filter);
      else if (access.kind === 'deny') {
        if (access.why.kind === 'claim') return NOTHING;
        throw this.refused(decide(each, this.operations[each].rule, access, []));
      }
    }
    return filters.length === 0 ? undefined : filters.length === 1 ? filters[0] : { kind: 'and', filters };
  }

  /** 403 naming the first of `uses` that names a field the caller may not read (a filter on it would be an oracle). */
  checkReadable(uses: readonly FieldUse[]): void {
    for (const { field, at } of uses) {
      if (field === SEARCHED && this.hidden.length > 0) {
        throw new ApiError(
          'forbidden',
          `The rules of collection ${this.collection} hide fields from this caller, whose words a search index may hold: it may not search.`,
          { errors: [{ ...at, message: 'holds $search, which the rules refuse a caller they hide fields from' }] },
        );
      }
      if (!this.hidden.some(([name]) => name === field)) continue;
      throw new ApiError(
        'forbidden',
        `The rules of collection ${this.collection} hide field ${field} from this caller (fields.${field}.read): it may not be filtered, ordered, grouped, aggregated or selected.`,
        { errors: [{ ...at, message: `names field ${field}, which the rules hide` }] },
      );
    }
  }

  /** The fields whose read rule may hide them from this caller. */
  get hideable(): string[] {
    return this.hidden.map(([name]) => name);
  }

  /** The operations whose rule grants the caller some rows at least (an access other than `deny`), in the order of OPERATIONS. */
  get granted(): Operation[] {
    return OPERATIONS.filter((operation) => this.operations[operation].access.kind !== 'deny');
  }

  /** The fields the caller sees (none of hideable) but may not set: their write access is `deny`. */
  get unwritable(): string[] {
    const hidden = new Set(this.hideable);
    return [...this.writes].filter(([name, { access }]) => access.kind === 'deny' && !hidden.has(name)).map(([name]) => name);
  }

  /** The fields whose `default` this caller's token fills in a row it inserts: it holds their claims. */
  get fillable(): string[] {
    return [...this.fields].filter(([, field]) => field.default && claimOf(this.claims, field.default) !== undefined).map(([name]) => name);
  }

  /** Whether an answer may lose fields for this caller: when not, rows pass as they are. */
  get hides(): boolean {
    return this.hidden.length > 0;
  }

  /** `row` without the fields hidden from the caller: a field's read rule is tested on the whole row. */
  mask<R extends { [field: string]: unknown }>(row: R): R {
    let masked: R | undefined;
    for (const [name, { access }] of this.hidden) {
      if (!Object.hasOwn(row, name)) continue;
      if (access.kind === 'filter' && matches(access.filter, row as unknown as Row)) continue;
      masked ??= { ...row };
      delete masked[name];
    }
    return masked ?? row;
  }

  /** A row as JSON text, masked; the text as it is when nothing can be hidden. */
  maskRow<T>(json: Json<T>): Json<T> {
    return this.hides ? JSON.stringify(this.mask(JSON.parse(json))) : json;
  }

  /** Rows as JSON text (an array), each masked; the text as it is when nothing can be hidden. */
  maskRows<T>(json: Json<T>): Json<T> {
    if (!this.hides) return json;
    return JSON.stringify((JSON.parse(json) as { [field: string]: unknown }[]).map((row) => this.mask(row)));
  }

  /** Rows with their ETags as JSON text (listVersionedRows), each row masked. */
  maskVersionedRows<T>(json: Json<T>): Json<T> {
    if (!this.hides) return json;
    const rows = JSON.parse(json) as { etag: string; row: { [field: string]: unknown } }[];
    return JSON.stringify(rows.map(({ etag, row }) => ({ etag, row: this.mask(row) })));
  }

  /**
   * Whether the caller may read `row` (with its id): a row it may not is, for it, no row. 403 when the
   * read rule denies every row to the caller (`false`, or `"authenticated"` to an anonymous one), as a
   * page would be.
   */
  reads(row: Row): boolean {
    const { access, rule } = this.operations.read;
    if (access.kind === 'deny' && access.why.kind !== 'claim') throw this.refused(decide('read', rule, access, []));
    return access.kind === 'all' || (access.kind === 'filter' && matches(access.filter, row));
  }

  /** 404 for a row the caller may not read; else the row, masked. */
  readable<R extends Row>(row: R): R {
    if (!this.reads(row)) throw rowNotFound(this.collection, row.id);
    return this.mask(row);
  }

  /**
   * What a read of one row by id holds the row to in its own statement (Store.getRow), a row that fails
   * it being none: the read rule's filter; undefined when the rule grants every row, or none.
   */
  get rowCondition(): Filter | undefined {
    const { access } = this.operations.read;
    return access.kind === 'filter' ? access.filter : undefined;
  }

  /**
   * A row read by id held to rowCondition, as JSON text, as the caller sees it: masked, and refused as
   * readable() refuses it when the rule grants no row. The text as it is, unparsed, when neither can be.
   */
  readableRow<T>(json: Json<T>): Json<T> {
    if (this.operations.read.access.kind !== 'deny' && !this.hides) return json;
    const row = JSON.parse(json) as Row;
    const visible = this.readable(row);
    return visible === row ? json : JSON.stringify(visible);
  }

  // The data layer's RowGuard (src/db/rows/rows.ts): each check throws the write's refusal, inside its
  // transaction, so that nothing of a refused write is stored.

  /** 404 for a row the caller may not read, as a write finds it before anything else is checked. */
  reading(id: number, fields: Fields): void {
    if (!this.reads({ ...fields, id })) throw rowNotFound(this.collection, id);
  }

  /**
   * `fields`, a row the caller sends to be inserted (or upserted), as the service writes it: each field
   * with a `default` that the row leaves out set to the caller's claim (docs/access.md, "Fields the token
   * fills"); 403 naming `fields.<name>.default` when the caller has no such claim.
   */
  filled<F extends Fields>(fields: F): F {
    const filled = filledRow(this.fields, this.claims, fields);
    if ('refusal' in filled) throw this.refused(filled.refusal);
    return filled.row;
  }

  /**
   * A new row: it must match `create`, and each field it sets its field's write rule, but a field that
   * holds the claim its `default` names: the value the service would have set.
   */
  creating(fields: Fields): void {
    const row = fields as Row;
    this.require(decide('create', this.operations.create.rule, this.operations.create.access, [row]));
    const written = Object.keys(fields).filter((name) => !isDefault(this.fields.get(name), this.claims, fields[name]));
    this.requireFieldWrites(written, [row]);
  }

  /**
   * A row about to be patched: 404 when the caller may not read it as it was; else it must match
   * `update` before and after, and each field the change sets or removes its field's write rule.
   */
  updating(id: number, before: Fields, after: Fields): void {
    const rows = [
      { ...before, id },
      { ...after, id },
    ];
    if (!this.reads(rows[0])) throw rowNotFound(this.collection, id);
    this.require(decide('update', this.operations.update.rule, this.operations.update.access, rows));
    const changed = new Set([...Object.keys(before), ...Object.keys(after)]);
    for (const name of changed) if (JSON.stringify(before[name]) === JSON.stringify(after[name])) changed.delete(name);
    this.requireFieldWrites([...changed], rows);
  }

  /** A row about to be deleted: 404 when the caller may not read it; else it must match `delete`. */
  deleting(id: number, before: Fields): void {
    const row = { ...before, id };
    if (!this.reads(row)) throw rowNotFound(this.collection, id);
    this.require(decide('delete', this.operations.delete.rule, this.operations.delete.access, [row]));
  }

  /** 403 for the first of `names` (in code point order) whose field's write rule does not hold for `rows`. */
  private requireFieldWrites(names: string[], rows: readonly Row[]): void {
    for (const name of names.sort(compareCodePoints)) {
      const write = this.writes.get(name);
      if (write) this.require(decide(`fields.${name}.write`, write.rule, write.access, rows));
    }
  }

  private require(decision: Decision): void {
    if (!decision.allowed) throw this.refused(decision);
  }

  private refused({ reason }: Decision): ApiError {
    return forbidden(`The rules of collection ${this.collection} refuse this: ${reason}.`);
  }
}

/**
 * Where a JSON Patch reads a row (RFC 6902: every operation's `path`, and `from`): a `test`, a `copy` or a
 * `move` of a hidden field, or an operation that fails on it, would tell its value. A pointer to the whole
 * row names every field. Other formats read nothing.
 */
export function patchUses(patch: Patch, at: Omit<FieldError, 'message'>, everyField: readonly string[]): FieldUse[] {
  if (patch.format !== 'json-patch') return [];
  return patch.operations.flatMap((operation, index) =>
    (['path', 'from'] as const).flatMap((member) => {
      const pointer = (operation as { path: string; from?: string })[member];
      if (pointer === undefined) return [];
      const place = { ...at, name: `${at.name}/${index}/${member}` };
      return pointer === '' ? everyField.map((field) => ({ field, at: place })) : [{ field: topField(pointer), at: place }];
    }),
  );
}

/**
 * What filterFields() names for a `$search`, which reads the fields of the collection's search index: a
 * caller with any field hidden may not search (checkReadable), as the index may hold that field's words.
 */
const SEARCHED = '$search';

/** The top-level fields a filter names (its paths' first keys), but the row's id and its relations'; SEARCHED for a search. */
export function filterFields(filter: Filter | undefined): string[] {
  if (!filter) return [];
  switch (filter.kind) {
    case 'and':
    case 'or':
      return filter.filters.flatMap(filterFields);
    case 'not':
      return filterFields(filter.filter);
    case 'search':
      return [SEARCHED];
    case 'related':
      // Its filter names fields of the related collection, held to that collection's rules where the
      // condition is resolved (src/handlers/related.ts), with the relation's field.
      return [];
    default:
      return filter.path[0] === 'id' && filter.path.length === 1 ? [] : [filter.path[0]];
  }
}
