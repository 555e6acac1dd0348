// The entries of `collections.sorted` (../collections/sort-indexes.ts; docs/development.md, "Sort
// indexes"): a slot's fields. A slot of one field keys each row by its value of the field; a slot of a
// pair [F, G] keys each row by its value of G within its value of F, held in the key's `prefix`, so that
// the rows whose F equals one value are one range of the pair's keys in the order of G.

/** The fields of one slot of `collections.sorted`: a field's name, or a pair [F, G]. */
export type SortedEntry = string | readonly [string, string];

/** Whether a slot is of a pair of fields. */
export const isPair = (entry: SortedEntry): entry is readonly [string, string] => typeof entry !== 'string';

/** The field a slot's keys are in the order of: its one field, or a pair's second. */
export const orderedField = (entry: SortedEntry): string => (isPair(entry) ? entry[1] : entry);

/** The fields a slot's keys are made of. */
export const fieldsOf = (entry: SortedEntry): readonly string[] => (isPair(entry) ? entry : [entry]);

/** The slot of the pair [first, then] in `sorted`, or -1. */
export const pairSlot = (sorted: readonly SortedEntry[], first: string, then: string): number =>
  sorted.findIndex((entry) => isPair(entry) && entry[0] === first && entry[1] === then);

/**
 * The slots a declared index of `fields` (createIndex) makes: each field's, and when it has two fields or
 * more, the pair of its first two, so that a page whose filter holds an equality on the first and whose
 * order is the second reads one range of keys from the start.
 */
export const slotsOfIndex = (fields: readonly string[]): SortedEntry[] =>
  fields.length >= 2 && fields[0] !== fields[1] ? [...fields, [fields[0], fields[1]] as const] : [...fields];

/** The slot of `entry` in `sorted`, or -1. */
export const slotOf = (sorted: readonly SortedEntry[], entry: SortedEntry): number =>
  isPair(entry) ? pairSlot(sorted, entry[0], entry[1]) : sorted.indexOf(entry);

/**
 * The largest integer a pair's prefix holds as the integer it is: a number's prefix is its integer
 * value's text below it, so that 1 and 1.0 are one prefix; any other number is PREFIX_OTHER_NUMBER, which
 * no page reads (pairPrefix()).
 */
export const PREFIX_SAFE = 9007199254740992;

/**
 * The prefix of a value of a pair's first field as a page reads it (a filter's equality's operand), or
 * undefined when no pair's range holds exactly the rows equal to it (a number that is not a safe
 * integer). A string's is the dialect's: `string` says how (escaped, or too long for a key).
 */
export function pairPrefix(operand: number | string | boolean, string: (text: string) => string | undefined): string | undefined {
  if (typeof operand === 'boolean') return operand ? '3:1' : '3:0';
  if (typeof operand === 'number') return Number.isSafeInteger(operand) ? `1:${operand === 0 ? 0 : operand}` : undefined;
  const text = string(operand);
  return text === undefined ? undefined : `2:${text}`;
}
