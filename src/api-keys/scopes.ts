// The scopes of API keys (openapi.yaml, KeyScope): what each grants.

/** What a key may do (openapi.yaml, KeyScope), narrowest first: each scope grants what the ones before it grant. */
export const scopes = ['read', 'write', 'admin'] as const;
export type Scope = (typeof scopes)[number];

/** The scopes that grant what `scope` grants: `scope` and the wider ones. */
export const scopesGranting = (scope: Scope): ReadonlySet<Scope> => new Set(scopes.slice(scopes.indexOf(scope)));
