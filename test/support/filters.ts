// Random filters (openapi.yaml, Filter) for the property tests of lists and rules (test/http/filter.test.ts,
// test/http/rules-property.test.ts): each field's every operator, and the operators that combine them.
import fc from 'fast-check';

/** What a test draws its filters from: field paths, scalars, and composite operands (arrays, objects). */
export interface FilterParts {
  field: fc.Arbitrary<string>;
  scalar: fc.Arbitrary<unknown>;
  composites: unknown[];
  prefixes: string[];
}

/** Filters of `parts`: a field's condition, or up to three under `$or` or `$and`, or one or an `$or` under `$not`. */
export function filters({ field, scalar, composites, prefixes }: FilterParts): fc.Arbitrary<Record<string, unknown>> {
  const operand = fc.oneof({ weight: 4, arbitrary: scalar }, fc.constantFrom(...composites));
  const ordered = scalar.filter((value) => value !== null);
  const condition = fc.oneof(
    operand,
    fc.record({ $ne: operand }),
    fc.record({ $gt: ordered }),
    fc.record({ $lte: ordered }),
    fc.record({ $in: fc.array(operand, { maxLength: 3 }) }),
    fc.record({ $nin: fc.array(operand, { maxLength: 3 }) }),
    fc.record({ $exists: fc.boolean() }),
    fc.record({ $prefix: fc.constantFrom(...prefixes) }),
    fc.record({ $contains: operand }),
  );
  const leaf = fc.tuple(field, condition).map(([name, value]) => ({ [name]: value }));
  return fc.oneof(
    { weight: 3, arbitrary: leaf },
    fc.array(leaf, { minLength: 1, maxLength: 3 }).map(($or) => ({ $or })),
    fc.array(leaf, { minLength: 1, maxLength: 3 }).map(($and) => ({ $and })),
    leaf.map(($not) => ({ $not })),
    fc.array(leaf, { minLength: 1, maxLength: 2 }).map(($or) => ({ $not: { $or } })),
  );
}
