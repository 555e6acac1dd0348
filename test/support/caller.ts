// The collections of the tests of the contract that follows the caller (src/contract/caller.ts;
// docs/access.md, "The contract follows the caller"): `notes`, typed, whose rules hide fields, and
// `scratch`, without a schema; what their rules grant an end user with a token, and an anonymous caller.
import type { CollectionContract } from '../../src/contract/account.ts';
import type { CollectionView } from '../../src/contract/caller.ts';

/** `notes`: no caller sees `salary`, only one with a token sees `phone`, and none sets `owner`. */
export const notesSchema = {
  type: 'object',
  required: ['title'],
  properties: {
    title: { type: 'string' },
    owner: { type: 'string' },
    salary: { type: 'number' },
    phone: { type: 'string' },
  },
  examples: [{ title: 'a', owner: 'ada', salary: 1, phone: '555' }],
};
export const notesRules = {
  read: { owner: { $auth: 'sub' } },
  create: 'authenticated',
  update: { owner: { $auth: 'sub' } },
  delete: false,
  fields: { salary: { read: false }, phone: { read: 'authenticated' }, owner: { write: false } },
};
/** `scratch`, without a schema: anyone holding the key reads it. */
export const scratchRules = { read: true };

/** What the rules of `notes` and `scratch` grant an end user with a token, and an anonymous caller. */
export const callerViews = {
  user: {
    notes: { operations: ['read', 'create', 'update'], hidden: ['salary'], unwritable: ['owner'] },
    scratch: { operations: ['read'], hidden: [], unwritable: [] },
  },
  anonymous: { scratch: { operations: ['read'], hidden: [], unwritable: [] } },
} as const satisfies Record<string, Record<string, CollectionView>>;

/** The collections as the documents of a caller take them, with the views of `who`. */
export const viewedCollections = (who: keyof typeof callerViews): CollectionContract[] =>
  Object.entries(callerViews[who]).map(([name, view]) => ({ name, schema: name === 'notes' ? notesSchema : null, view }));
