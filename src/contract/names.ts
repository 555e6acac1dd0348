// The names a collection's types and operations take in the account's documents (docs/contract.md,
// "Names"). A name depends on the collection's name alone, never on which other collections exist, so
// that adding a collection never renames another's types; and no two collections' names meet, in the
// documents nor in the clients generated from them.
// The rule, exactly: docs/contract.md, "The prefix, exactly"; why not plain PascalCase: "Names".

/** What a collection's row types are called: `<prefix><suffix>`. No suffix ends another. */
export const rowTypeSuffixes = {
  /** The row as stored, with its `id`. */
  row: 'Row',
  /** A row to insert: the collection's schema. */
  insert: 'Insert',
  /** The fields of a patch, none required. */
  patch: 'Patch',
  /** The request body of a PATCH of rows (`RowPatchRequest`): a patch in any of its formats. */
  patchRequest: 'PatchRequest',
  /** A row with its version (`VersionedRow`). */
  rowVersion: 'RowVersion',
  /** What a change by filter answers (`ChangedRows`). */
  changedRows: 'ChangedRows',
  /** A page of a query (`RowQueryPage`). */
  queryPage: 'QueryPage',
  /** The rows related to a row, its member `_expand` (`Expanded`): by relation, as the collection's relations say. */
  expand: 'Expand',
  /** The feed's messages (asyncapi.yaml). */
  insertMessage: 'InsertMessage',
  updateMessage: 'UpdateMessage',
  deleteMessage: 'DeleteMessage',
  /** Of the changes over HTTP, in the OpenAPI 3.2 document: a change (`ChangeMessage`), any message of a stream (`FeedMessage`), a page (`ChangesPage`). */
  changeMessage: 'ChangeMessage',
  feedMessage: 'FeedMessage',
  changesPage: 'ChangesPage',
} as const;

/** A schema of `$defs`, relocated: `<prefix>Alt<number><Def name>Def` (see `defName`). */
export const defSuffix = 'Def';

/**
 * The operations of a collection's paths: `<verb><prefix><noun>`. No verb begins another, and no two
 * nouns of one verb end one another, so no two collections' operations meet.
 */
export const rowOperations = {
  listRows: ['list', 'Rows'],
  headRows: ['head', 'Rows'],
  insertRows: ['insert', 'Rows'],
  updateRows: ['update', 'Rows'],
  deleteRows: ['delete', 'Rows'],
  listVersionedRows: ['list', 'RowVersions'],
  headVersionedRows: ['head', 'RowVersions'],
  queryRows: ['query', 'Rows'],
  getRow: ['get', 'Row'],
  headRow: ['head', 'Row'],
  updateRow: ['update', 'Row'],
  deleteRow: ['delete', 'Row'],
  /** Of the OpenAPI 3.2 document only (account.ts): a collection's changes over HTTP. */
  getChanges: ['get', 'Changes'],
  headChanges: ['head', 'Changes'],
} as const satisfies Record<string, readonly [string, string]>;

/** The feed's operation of a collection's row changes (asyncapi.yaml's `sendRowChanges`). */
export const feedOperation = ['send', 'RowChanges'] as const;

/**
 * The plain prefixes whose names openapi.yaml or asyncapi.yaml already gives to something, whatever kind
 * of component it is: `BatchInsert` and `BatchPatch`, `ExpandedRow` (a related row), `HeadOkRow` (a response), `NewRow`, `PreviousRow`,
 * `RowPatch` and `RowQueryPage`, `Rules` and `RulesCheck`, `VersionedRow` and `listVersionedRows`, `MergePatch` and `JsonPatch` (the
 * other formats of a patch), and the header `Accept-Patch`. test/contract/account.test.ts checks this list
 * against both documents.
 */
export const reservedPrefixes: ReadonlySet<string> = new Set([
  'Accept-',
  'Batch',
  'Expanded',
  'HeadOk',
  'Json',
  'Merge',
  'New',
  'Previous',
  'Row',
  'Rule',
  'Versioned',
  'Webhook',
]);

const ESCAPED = /^(.*)Alt(0|[1-9][0-9]*)$/;

interface Word {
  /** The word as the name spells it. */
  text: string;
  /** The separators before it (`''` for the first word). */
  before: string;
}

/** The words of a name and the separators after the last one. */
function wordsOf(name: string): { words: Word[]; trailing: string } {
  const words: Word[] = [];
  let before = '';
  let current = '';
  const flush = () => {
    if (!current) return;
    words.push({ text: current, before });
    before = '';
    current = '';
  };
  for (const character of name) {
    if (character === '_' || character === '-') {
      flush();
      before += character;
      continue;
    }
    const previous = current.at(-1);
    if (
      previous !== undefined &&
      ((/[a-z]/.test(previous) && /[A-Z]/.test(character)) || (/[0-9]/.test(previous) && /[A-Za-z]/.test(character)))
    ) {
      flush();
    }
    current += character;
  }
  flush();
  return { words, trailing: before };
}

/**
 * The words in PascalCase. A word of one letter (`a` of `a_b`) joins a neighbour, as two capitals in a
 * row, or a small letter after a digit, are read otherwise by the generators (`AB` → `Ab`, `1a` → `1A`):
 * first, it takes the next word in small letters; after a digit, the same, or last, it is a small letter;
 * elsewhere it is a small letter at the end of the word before.
 */
function pascal(words: readonly Word[]): string {
  const parts = words.map(({ text }) => text.charAt(0).toUpperCase() + text.slice(1).toLowerCase());
  let out = '';
  for (let index = 0; index < parts.length; index++) {
    const part = parts[index]!;
    if (!/^[A-Z]$/.test(part)) out += part;
    else if ((index === 0 || /[0-9]$/.test(out)) && index + 1 < parts.length) out += part + parts[++index]!.toLowerCase();
    else out += index === 0 ? part : part.toLowerCase();
  }
  return out;
}

/** Which spelling of its words a name of the odd numbers is, or undefined for one that is not. */
function spellingOf(words: readonly Word[], trailing: string): bigint | undefined {
  if (trailing) return undefined;
  let number = 0n;
  let weight = 1n;
  for (const [index, { text, before }] of words.entries()) {
    if (!/^[A-Za-z]([a-z]*[0-9]*)$/.test(text)) return undefined;
    if (words.length > 1 && text.length < 2) return undefined;
    const capital = /^[A-Z]/.test(text) ? 1n : 0n;
    if (index === 0) {
      number += capital * weight;
      weight *= 2n;
      continue;
    }
    const joint = before === '_' ? 0n : before === '-' ? 1n : before === '' ? 2n : undefined;
    if (joint === undefined) return undefined;
    number += (joint * 2n + capital) * weight;
    weight *= 6n;
  }
  return number;
}

/** The name's characters read as digits in base 4, least significant first. */
function charactersOf(name: string): bigint {
  let number = 0n;
  let weight = 1n;
  for (const character of name) {
    const digit = character === '_' ? 2n : character === '-' ? 3n : /[A-Z]/.test(character) ? 1n : 0n;
    number += digit * weight;
    weight *= 4n;
  }
  return number;
}

/**
 * The prefixes found lately, by collection name, at most MAX_PREFIXES (the first found forgotten first):
 * a collection's part of a document names it some thirty times (its types, its operations), and a plan's
 * diff builds the documents four times.
 */
const prefixes = new Map<string, string>();
const MAX_PREFIXES = 10_000;

/**
 * A collection's prefix: `notes` → `Notes`, `my_notes` → `MyNotes`, `my-notes` → `MyNotesAlt7` (the
 * rule is this file's first comment). Deterministic, a function of the name alone; distinct for
 * distinct names. `name` must be a collection name (`^[A-Za-z][A-Za-z0-9_-]{0,62}$`).
 */
export function collectionPrefix(name: string): string {
  let prefix = prefixes.get(name);
  if (prefix === undefined) {
    prefix = prefixOf(name);
    if (prefixes.size >= MAX_PREFIXES) prefixes.delete(prefixes.keys().next().value as string);
    prefixes.set(name, prefix);
  }
  return prefix;
}

/** collectionPrefix(), found anew. */
function prefixOf(name: string): string {
  const { words, trailing } = wordsOf(name);
  const prefix = pascal(words);
  const spelling = spellingOf(words, trailing);
  if (spelling === 0n) {
    return ESCAPED.test(prefix) || reservedPrefixes.has(prefix) ? `${prefix}Alt0` : prefix;
  }
  const number = spelling !== undefined && spelling > 0n ? 2n * spelling - 1n : 2n * charactersOf(name) + 2n;
  return `${prefix}Alt${number}`;
}

/** The collection name a prefix stands for, or undefined when no name has it. */
export function decodePrefix(prefix: string): string | undefined {
  const escaped = ESCAPED.exec(prefix);
  const readable = escaped ? escaped[1]! : prefix;
  const number = escaped ? BigInt(escaped[2]!) : 0n;
  const words = readable.match(/[A-Z][a-z]*[0-9]*|[0-9]+/g) ?? [];
  let name: string | undefined;
  if (number === 0n) name = words.map((word) => word.toLowerCase()).join('_');
  else if (number % 2n === 1n) {
    let rest = (number + 1n) / 2n;
    name = '';
    for (const [index, word] of words.entries()) {
      let capital: bigint;
      if (index === 0) {
        capital = rest % 2n;
        rest /= 2n;
      } else {
        const digit = rest % 6n;
        rest /= 6n;
        capital = digit % 2n;
        name += ['_', '-', ''][Number(digit / 2n)];
      }
      const lower = word.toLowerCase();
      name += capital ? lower.charAt(0).toUpperCase() + lower.slice(1) : lower;
    }
  } else {
    let rest = number / 2n - 1n;
    const characters = [...readable.toLowerCase()];
    name = '';
    while (characters.length > 0 || rest > 0n) {
      const digit = rest % 4n;
      rest /= 4n;
      if (digit === 2n) name += '_';
      else if (digit === 3n) name += '-';
      else {
        const character = characters.shift();
        if (character === undefined) return undefined;
        name += digit === 1n ? character.toUpperCase() : character;
      }
    }
  }
  return name && /^[A-Za-z][A-Za-z0-9_-]{0,62}$/.test(name) && collectionPrefix(name) === prefix ? name : undefined;
}

/** The name of a collection's row type of `kind`: `collectionPrefix(name)` and the kind's suffix. */
export function rowTypeName(collection: string, kind: keyof typeof rowTypeSuffixes): string {
  return collectionPrefix(collection) + rowTypeSuffixes[kind];
}

/** The operationId of a collection's copy of the generic operation `operationId` (`insertRows` → `insertNotesRows`). */
export function rowOperationId(collection: string, operationId: keyof typeof rowOperations): string {
  const [verb, noun] = rowOperations[operationId];
  return verb + collectionPrefix(collection) + noun;
}
