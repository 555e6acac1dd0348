// Rules compiled for a caller's claims (src/rules/compile.ts) and checked on rows (src/rules/check.ts):
// a claim is a value, never an operator; a missing claim matches nothing.
import { expect } from 'chai';
import { ApiError } from '../../src/errors.ts';
import { matches, type Row } from '../../src/query/evaluate.ts';
import { checkAccess } from '../../src/rules/check.ts';
import { type Access, type Claims, compileRules } from '../../src/rules/compile.ts';
import { checkRules, MAX_RULE_FIELDS, MAX_RULES_BYTES } from '../../src/rules/rules.ts';

const compile = (body: object) => compileRules(checkRules(body));
const readAccess = (body: object, claims: Claims): Access => compile(body).operations.read.access(claims);
/** Whether the read rule lets `claims` see `row`. */
function sees(body: object, claims: Claims, row: object): boolean {
  const access = readAccess(body, claims);
  if (access.kind !== 'filter') return access.kind === 'all';
  return matches(access.filter, { id: 1, ...row } as Row);
}
/** The places of a 400's errors for `body`. */
function refusedAt(body: unknown): string[] {
  try {
    checkRules(body);
  } catch (error) {
    expect(error).to.be.instanceOf(ApiError);
    return ((error as ApiError).options.errors ?? []).map((each) => (each as { name: string }).name);
  }
  throw new Error('not refused');
}

const own = { read: { owner: { $auth: 'sub' } } };

describe('rules', () => {
  describe('compileRules', () => {
    it('answers false as deny, true as all, and "authenticated" as all but to anonymous callers', () => {
      const rules = compile({ read: true, create: 'authenticated' });
      expect(rules.operations.read.access(null).kind).to.equal('all');
      expect(rules.operations.create.access(null).kind).to.equal('deny');
      expect(rules.operations.create.access({ sub: 'u' }).kind).to.equal('all');
      expect(rules.operations.update.access({ sub: 'u' }).kind).to.equal('deny');
      expect(rules.operations.delete.access(null).kind).to.equal('deny');
    });

    it('puts the claim in the filter as a value', () => {
      expect(sees(own, { sub: 'u1' }, { owner: 'u1' })).to.equal(true);
      expect(sees(own, { sub: 'u1' }, { owner: 'u2' })).to.equal(false);
    });

    it('compares a claim holding operators as that object, never as operators', () => {
      const claims = { sub: { $ne: null } };
      expect(sees(own, claims, { owner: 'u2' })).to.equal(false);
      expect(sees(own, claims, {})).to.equal(false);
      expect(sees(own, claims, { owner: { $ne: null } })).to.equal(true);
      const filter = readAccess(own, claims);
      expect(filter).to.deep.equal({ kind: 'filter', filter: { kind: 'field', path: ['owner'], op: '$eq', operand: { $ne: null } } });
    });

    it('compares an array claim as an array', () => {
      expect(sees(own, { sub: ['u1', 'u2'] }, { owner: 'u1' })).to.equal(false);
      expect(sees(own, { sub: ['u1', 'u2'] }, { owner: ['u1', 'u2'] })).to.equal(true);
    });

    it('denies when the token lacks the claim, or the caller is anonymous, even under $not', () => {
      expect(readAccess(own, {})).to.deep.equal({ kind: 'deny', why: { kind: 'claim', claim: 'sub' } });
      // Anonymous: refused as "authenticated" is (403), never an empty answer that hides the missing token.
      expect(readAccess(own, null)).to.deep.equal({ kind: 'deny', why: { kind: 'anonymous', claim: 'sub' } });
      expect(readAccess({ read: { $not: { owner: { $auth: 'sub' } } } }, { other: 1 })).to.deep.include({ kind: 'deny' });
    });

    it('reads only own members of the claims: __proto__ and constructor name nothing inherited', () => {
      const claims = JSON.parse('{"__proto__": {"sub": "evil"}}') as Claims;
      expect(readAccess(own, claims).kind).to.equal('deny');
      expect(readAccess({ read: { owner: { $auth: 'constructor' } } }, { sub: 'u' }).kind).to.equal('deny');
      const proto = { read: { owner: { $auth: '__proto__' } } };
      expect(sees(proto, JSON.parse('{"__proto__": "u1"}') as Claims, { owner: 'u1' })).to.equal(true);
    });

    it('follows a dotted path into the claims', () => {
      const rule = { read: { org: { $auth: 'app_metadata.org' } } };
      expect(sees(rule, { app_metadata: { org: 'o1' } }, { org: 'o1' })).to.equal(true);
      expect(sees(rule, { app_metadata: { org: 'o1' } }, { org: 'o2' })).to.equal(false);
      expect(readAccess(rule, { app_metadata: 'o1' }).kind).to.equal('deny');
      expect(readAccess(rule, { app_metadata: ['o1'] }).kind).to.equal('deny');
    });

    it('takes $in of an array claim, and denies $in of a claim that is no array', () => {
      const rule = { read: { org: { $in: { $auth: 'orgs' } } } };
      expect(sees(rule, { orgs: ['a', 'b'] }, { org: 'b' })).to.equal(true);
      expect(sees(rule, { orgs: ['a', 'b'] }, { org: 'c' })).to.equal(false);
      expect(sees(rule, { orgs: [{ $ne: null }] }, { org: 'c' })).to.equal(false);
      expect(readAccess(rule, { orgs: 'a' }).kind).to.equal('deny');
      const items = { read: { org: { $in: ['public', { $auth: 'org' }] } } };
      expect(sees(items, { org: 'a' }, { org: 'a' })).to.equal(true);
      expect(sees(items, { org: 'a' }, { org: 'public' })).to.equal(true);
      expect(sees(items, { org: 'a' }, { org: 'b' })).to.equal(false);
    });

    it('answers a filter without claims alike for every caller', () => {
      expect(sees({ read: { public: true } }, null, { public: true })).to.equal(true);
      expect(sees({ read: { public: true } }, null, { public: false })).to.equal(false);
    });

    it("compiles each field's rules", () => {
      const rules = compile({ read: true, fields: { email: { read: { owner: { $auth: 'sub' } }, write: false } } });
      expect(rules.fields.get('email')?.read?.access(null).kind).to.equal('deny');
      expect(rules.fields.get('email')?.write?.access({ sub: 'u' }).kind).to.equal('deny');
      expect(rules.fields.get('name')).to.equal(undefined);
    });
  });

  describe('checkRules', () => {
    it('fills in the members left out', () => {
      expect(checkRules({ read: true })).to.deep.equal({ read: true, create: false, update: false, delete: false, fields: {} });
    });

    it('names every place refused by a JSON Pointer', () => {
      expect(refusedAt({ reed: true })).to.deep.equal(['/reed']);
      expect(refusedAt({ read: 'anyone' })).to.deep.equal(['/read']);
      expect(refusedAt({ read: { owner: { $auth: '' } } })).to.deep.equal(['/read/owner/$auth']);
      expect(refusedAt({ read: { owner: { $auth: 'a..b' } } })).to.deep.equal(['/read/owner/$auth']);
      expect(refusedAt({ read: { owner: { $auth: 7 } } })).to.deep.equal(['/read/owner/$auth']);
      expect(refusedAt({ read: { $auth: 'sub' } })).to.deep.equal(['/read/$auth']);
      expect(refusedAt({ read: { 'a.$auth': 1 } })).to.deep.equal(['/read/a.$auth']);
      expect(refusedAt({ read: { owner: { $auth: 'sub', $ne: 1 } } })).to.deep.equal(['/read/owner/$auth']);
      expect(refusedAt({ read: { n: { $gt: { $auth: 'n' } } } })).to.deep.equal(['/read/n/$gt/$auth']);
      expect(refusedAt({ read: { o: { a: { $auth: 'sub' } } } })).to.deep.equal(['/read/o/a/$auth']);
      expect(refusedAt({ read: { owner: { $near: 1 } } })).to.deep.equal(['/read/owner/$near']);
      expect(refusedAt({ update: { $or: [] } })).to.deep.equal(['/update/$or']);
      expect(refusedAt({ fields: { email: { read: 'x' } } })).to.deep.equal(['/fields/email/read']);
      expect(refusedAt({ fields: { email: { see: true } } })).to.deep.equal(['/fields/email/see']);
      expect(refusedAt({ fields: { id: { read: false } } })).to.deep.equal(['/fields/id']);
      expect(refusedAt({ fields: { 'a/b': 1 } })).to.deep.equal(['/fields/a~1b']);
      expect(refusedAt([])).to.deep.equal(['']);
    });

    it('takes a field default that is a claim, and names the place of one that is none', () => {
      const owner = { default: { $auth: 'sub' }, write: false };
      expect(checkRules({ fields: { owner } }).fields).to.deep.equal({ owner });
      expect(refusedAt({ fields: { owner: { default: 'sub' } } })).to.deep.equal(['/fields/owner/default']);
      expect(refusedAt({ fields: { owner: { default: { $auth: 'sub', x: 1 } } } })).to.deep.equal(['/fields/owner/default']);
      expect(refusedAt({ fields: { owner: { default: { $auth: '' } } } })).to.deep.equal(['/fields/owner/default/$auth']);
      expect(refusedAt({ fields: { owner: { default: { $auth: 'a..b' } } } })).to.deep.equal(['/fields/owner/default/$auth']);
      expect(refusedAt({ fields: { id: { default: { $auth: 'sub' } } } })).to.deep.equal(['/fields/id']);
    });

    it('checks a create with each default filled from the claims, its own claim sent as if filled', () => {
      const rules = compile({ create: { owner: { $auth: 'sub' } }, fields: { owner: { default: { $auth: 'sub' }, write: false } } });
      const create = (claims: Claims, row: object) => checkAccess(rules, { operation: 'create', claims, row: row as never });
      expect(create({ sub: 'ada' }, {}).allowed).to.equal(true);
      expect(create({ sub: 'ada' }, { owner: 'ada' }).allowed).to.equal(true);
      expect(create({ sub: 'ada' }, { owner: 'bob' }).reason).to.equal(
        'create: the row does not match {"owner":{"$auth":"sub"}} for these claims',
      );
      expect(create({}, {}).reason).to.equal('fields.owner.default: the token has no claim sub, so the field cannot be filled');
    });

    it('bounds the fields and the size', () => {
      const fields = Object.fromEntries(Array.from({ length: MAX_RULE_FIELDS + 1 }, (_, i) => [`f${i}`, { read: true }]));
      expect(refusedAt({ fields })).to.deep.equal(['/fields']);
      expect(refusedAt({ read: { s: 'x'.repeat(MAX_RULES_BYTES) } })).to.deep.equal(['']);
    });
  });

  describe('checkAccess', () => {
    const rules = compile({
      read: { owner: { $auth: 'sub' } },
      create: { owner: { $auth: 'sub' } },
      update: { owner: { $auth: 'sub' } },
      delete: 'authenticated',
      fields: { email: { read: { owner: { $auth: 'sub' } } }, role: { write: false } },
    });

    it('names the rule that decided, and the fields a read hides', () => {
      expect(checkAccess(rules, { operation: 'read', claims: { sub: 'a' }, row: { id: 1, owner: 'a' } })).to.deep.equal({
        allowed: true,
        reason: 'read: the row matches {"owner":{"$auth":"sub"}} for these claims',
        hidden: [],
      });
      expect(checkAccess(rules, { operation: 'read', claims: { sub: 'b' }, row: { id: 1, owner: 'a' } })).to.deep.equal({
        allowed: false,
        reason: 'read: the row does not match {"owner":{"$auth":"sub"}} for these claims',
      });
      expect(checkAccess(rules, { operation: 'delete', claims: null, row: { id: 1 } })).to.deep.equal({
        allowed: false,
        reason: 'delete: denied to anonymous callers',
      });
    });

    it('checks an update before and after, and the write rule of each field it sets', () => {
      const row = { id: 1, owner: 'a' };
      expect(checkAccess(rules, { operation: 'update', claims: { sub: 'a' }, row, change: { owner: 'b' } })).to.deep.include({
        allowed: false,
        reason: 'update: the row after the change does not match {"owner":{"$auth":"sub"}} for these claims',
      });
      expect(checkAccess(rules, { operation: 'update', claims: { sub: 'a' }, row, change: { role: 'x' } })).to.deep.include({
        allowed: false,
        reason: 'fields.role.write: false denies every caller',
      });
      expect(checkAccess(rules, { operation: 'update', claims: { sub: 'a' }, row, change: { text: 'x' } }).allowed).to.equal(true);
      expect(checkAccess(rules, { operation: 'create', claims: { sub: 'a' }, row: { owner: 'a', role: 'x' } }).reason).to.equal(
        'fields.role.write: false denies every caller',
      );
    });
  });
});
