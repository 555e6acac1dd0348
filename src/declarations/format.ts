// The declaration file (`rowbase.yaml`, JSON accepted too; docs/declarations.md): its types, and its reading
// within bounds, every refusal a 400 (a 413 for its size) whose errors name each place wrong by a JSON
// Pointer into it. What it means is checked next (checks.ts); its JSON Schema is
// schemas/declaration.schema.json, which editors complete and check the file with, and which
// `npm run generate` compiles into the validator read here (generated/declaration-validator.js).
import type { ErrorObject } from 'ajv';
import { Composer, type CST, type Document, isAlias, isMap, isPair, isScalar, isSeq, type Node, stringify, YAMLParseError } from 'yaml';
import { validate } from '../../generated/declaration-validator.js';
import { ApiError, type FieldError, validationFailed } from '../errors.ts';
import { isObject, pointerToken } from '../query/filter.ts';
import { aside } from './aside.ts';
import { boundedCst, objectTooDeep } from './nesting.ts';

/** A declaration's file is this many bytes at most. */
const MAX_DECLARATION_BYTES = 1024 * 1024;

/**
 * Aliases a file may resolve in all, counted as the yaml package counts them (each alias weighs the nodes it
 * stands for): a file of aliases of aliases (the "billion laughs") stops here, before it grows.
 */
const MAX_ALIAS_COUNT = 1000;

/** Where a secret is: the environment variable that holds it, never the secret itself. */
export interface SecretRef {
  env: string;
}

export type OnDelete = 'restrict' | 'cascade' | 'set_null';

interface DeclaredRelation {
  field: string;
  collection: string;
  on_delete?: OnDelete;
  reverse?: string | null;
}

export interface DeclaredCollection {
  schema?: Record<string, unknown>;
  indexes?: { fields: string[]; unique?: boolean }[];
  search?: { fields: string[] };
  relations?: Record<string, DeclaredRelation>;
  rules?: Record<string, unknown>;
  /** Its time to live (docs/expiry.md): the field that says when each row expires. */
  ttl?: { field: string };
}

export interface DeclaredIssuer {
  issuer: string;
  audiences: string[];
  jwks_uri?: string;
  discovery_url?: string;
  secret?: SecretRef;
}

export interface DeclaredWebhook {
  url: string;
  collections?: string[] | null;
  events?: ('insert' | 'update' | 'delete')[];
  filter?: Record<string, unknown> | null;
  description?: string | null;
  enabled?: boolean;
  secret?: SecretRef;
}

/** A declaration as its file holds it (schemas/declaration.schema.json). A section left out is left as it is. */
export interface Declaration {
  $schema?: string;
  version?: 1;
  collections?: Record<string, DeclaredCollection>;
  issuers?: Record<string, DeclaredIssuer>;
  webhooks?: DeclaredWebhook[];
}

export const place = (pointer: string, message: string): FieldError => ({ in: 'body', name: pointer, message });

/** Where editors find the declaration's JSON Schema (schemas/declaration.schema.json). */
export const SCHEMA_URL = 'https://rowbase.dev/schemas/declaration.schema.json';

/** `declaration` as the text of a rowbase.yaml (`rowbase pull`), its first line naming its JSON Schema for editors. */
export function declarationYaml(declaration: Declaration): string {
  return `# yaml-language-server: $schema=${SCHEMA_URL}\n${stringify(declaration, { aliasDuplicateObjects: false, lineWidth: 0 })}`;
}

/**
 * The declaration `text` holds, as YAML 1.2 (of which JSON is part), its shape checked against the
 * declaration's JSON Schema: 413 past MAX_DECLARATION_BYTES; 400 for text that is no YAML, a key given
 * twice in one mapping, nesting past nesting.ts's bounds, aliases that expand past MAX_ALIAS_COUNT, a secret written in it, or a member
 * the schema does not know, each named by its place.
 */
export function parseDeclaration(text: string): Declaration {
  withinBytes(text);
  const parsed = boundedCst(text);
  if ('problem' in parsed) {
    const [line, column] = lineAndColumn(text, parsed.offset);
    throw validationFailed(`The declaration nests too deep: what is at line ${line}, column ${column} ${parsed.problem}.`, [
      place('', parsed.problem),
    ]);
  }
  const document = composed(parsed.cst, text.length);
  const [error] = [...document.errors, ...document.warnings];
  if (error) {
    const pointer = pointerAt(document.contents, error.pos[0]);
    const what = error.code === 'DUPLICATE_KEY' ? 'is given twice in one mapping' : error.message.split('\n')[0].replace(/ at line.*/, '');
    const [line, column] = lineAndColumn(text, error.pos[0]);
    throw validationFailed(`The declaration is not valid YAML: line ${line}, column ${column}: ${what}.`, [place(pointer, what)]);
  }
  let value: unknown;
  try {
    value = document.toJS({ maxAliasCount: MAX_ALIAS_COUNT });
  } catch (error) {
    if (!(error instanceof ReferenceError)) throw error;
    throw validationFailed(`The declaration's aliases expand past ${MAX_ALIAS_COUNT} nodes, the most it may resolve.`, [
      place('', 'holds aliases that expand too far'),
    ]);
  }
  return checked(value);
}

/**
 * The declaration sent as a JSON object (a request's `declaration`, a stored plan's), read as
 * parseDeclaration() reads the same JSON as text, but by JSON.parse, not yaml: a JSON text holds no alias
 * and no comment; its nesting is held to the bound its text's reading would be (nesting.ts). A new value:
 * `sent` is not changed.
 */
export function declarationOfObject(sent: object): Declaration {
  // Its depth first: made text, an object a body of some thousand levels may hold would be walked to its end.
  const deep = objectTooDeep(sent);
  if (deep)
    throw validationFailed(`The declaration nests too deep: what is at ${deep.pointer} ${deep.problem}.`, [
      place(deep.pointer, deep.problem),
    ]);
  const text = JSON.stringify(sent);
  withinBytes(text);
  return checked(JSON.parse(text));
}

/** 413 for a declaration's text past MAX_DECLARATION_BYTES. */
function withinBytes(text: string): void {
  const bytes = Buffer.byteLength(text);
  if (bytes > MAX_DECLARATION_BYTES)
    throw new ApiError(
      'payload_too_large',
      `The declaration is ${bytes} bytes, more than the ${MAX_DECLARATION_BYTES} (1 MiB) it may have.`,
    );
}

/** `value`, a declaration's file read, as a declaration: 400 for a secret written in it or a member the schema does not know. */
function checked(value: unknown): Declaration {
  const inline = inlineSecrets(value);
  if (inline.length > 0)
    throw validationFailed('A secret is never written in the declaration: name the environment variable that holds it, as {env: NAME}.', [
      ...inline.map((pointer) => place(pointer, 'is a secret written inline: write {env: NAME} instead')),
    ]);
  if (!validate(value)) {
    // The errors of each branch of a oneOf say less than the oneOf's own.
    const errors = (validate.errors ?? []).filter((error) => !error.schemaPath.includes('/oneOf/')).map(placeOf);
    throw validationFailed(`The declaration is not valid: ${errors[0].name || 'the file'} ${errors[0].message}.`, errors);
  }
  return value as Declaration;
}

/**
 * The document of the CST `cst` (nesting.ts) of a text `length` long, as the yaml package's
 * `parseDocument()` composes the CST its parser makes: a second document in the text is its error.
 */
function composed(cst: Iterable<CST.Token>, length: number): Document.Parsed {
  const composer = new Composer({ uniqueKeys: true, prettyErrors: false, keepSourceTokens: false });
  let document: Document.Parsed | undefined;
  for (const each of composer.compose(cst, true, length)) {
    if (document === undefined) document = each;
    else {
      document.errors.push(
        new YAMLParseError(
          each.range.slice(0, 2) as [number, number],
          'MULTIPLE_DOCS',
          'Source contains multiple documents; please use YAML.parseAllDocuments()',
        ),
      );
      break;
    }
  }
  return document as Document.Parsed;
}

/** A declaration this many bytes long or longer is read in a worker (readDeclaration); a shorter one takes milliseconds. */
const READ_ASIDE_BYTES = 16 * 1024;

/** What the worker answers: the declaration, its refusal, or what else failed. */
type ReadAnswer = { declaration: Declaration } | { refused: Pick<ApiError, 'code' | 'detail' | 'options'> } | { failed: string };

/**
 * The declaration sent: a JSON object, read here (declarationOfObject, milliseconds for a hundred
 * collections); a text, by parseDeclaration(), off the thread that answers requests when it is long: the
 * yaml package reads 160 KB (a hundred collections) in half a second to a second and more, every
 * account's requests waiting meanwhile. In the declarations' worker (aside.ts), which runs readAnswer();
 * its refusal is the same.
 */
export async function readDeclaration(sent: string | object): Promise<Declaration> {
  if (typeof sent !== 'string') return declarationOfObject(sent);
  if (sent.length < READ_ASIDE_BYTES) return parseDeclaration(sent);
  const answer = await aside<ReadAnswer>({ readDeclaration: sent });
  if ('declaration' in answer) return answer.declaration;
  if ('refused' in answer) throw new ApiError(answer.refused.code, answer.refused.detail, answer.refused.options);
  throw new Error(`the reading of the declaration failed: ${answer.failed}`);
}

/** parseDeclaration() of `text` as the worker answers it (readDeclaration). */
export function readAnswer(text: string): ReadAnswer {
  try {
    return { declaration: parseDeclaration(text) };
  } catch (error) {
    if (error instanceof ApiError) return { refused: { code: error.code, detail: error.detail, options: error.options } };
    return { failed: String((error as Error)?.stack ?? error) };
  }
}

/** An error of Ajv as the place it names, the member it is about included. */
function placeOf(error: ErrorObject): FieldError {
  const params = error.params as Record<string, string>;
  if (error.keyword === 'additionalProperties')
    return place(`${error.instancePath}/${pointerToken(params.additionalProperty)}`, 'is no member the declaration knows');
  if (error.keyword === 'required') return place(`${error.instancePath}/${pointerToken(params.missingProperty)}`, 'is required');
  const { propertyName } = error as { propertyName?: string };
  if (propertyName !== undefined) return place(`${error.instancePath}/${pointerToken(propertyName)}`, 'is no valid name');
  if (error.keyword === 'oneOf') return place(error.instancePath, 'must have exactly one of jwks_uri, discovery_url and secret');
  return place(error.instancePath, error.message ?? 'is not valid');
}

/** The places of the secrets written inline: an issuer's or a webhook's `secret` that is no {env} object. */
function inlineSecrets(value: unknown): string[] {
  if (!isObject(value)) return [];
  const found: string[] = [];
  const holders: [string, unknown][] = [
    ...(isObject(value.issuers)
      ? Object.entries(value.issuers).map(([name, held]): [string, unknown] => [`/issuers/${pointerToken(name)}`, held])
      : []),
    ...(Array.isArray(value.webhooks) ? value.webhooks.map((held, index): [string, unknown] => [`/webhooks/${index}`, held]) : []),
  ];
  for (const [pointer, holder] of holders) {
    if (isObject(holder) && holder.secret !== undefined && !isObject(holder.secret)) found.push(`${pointer}/secret`);
  }
  return found;
}

/** The JSON Pointer of the deepest node of `node` whose range holds the offset `at`, keys of mappings included. */
function pointerAt(node: Node | null | undefined, at: number, pointer = ''): string {
  if (isMap(node)) {
    for (const pair of node.items) {
      if (!isPair(pair)) continue;
      const key = isScalar(pair.key) ? String(pair.key.value) : '';
      const keyRange = isScalar(pair.key) ? pair.key.range : undefined;
      const inside = (held: unknown) => {
        const range = (held as Node | undefined)?.range;
        return range !== undefined && range !== null && at >= range[0] && at < range[2];
      };
      if (inside(pair.key) || (keyRange && at === keyRange[0])) return `${pointer}/${pointerToken(key)}`;
      if (inside(pair.value)) return pointerAt(pair.value as Node, at, `${pointer}/${pointerToken(key)}`);
    }
  }
  if (isSeq(node)) {
    for (const [index, item] of node.items.entries()) {
      const range = (item as Node | undefined)?.range;
      if (range && at >= range[0] && at < range[2] && !isAlias(item)) return pointerAt(item as Node, at, `${pointer}/${index}`);
    }
  }
  return pointer;
}

function lineAndColumn(text: string, offset: number): [number, number] {
  const before = text.slice(0, offset);
  const line = before.split('\n').length;
  return [line, offset - before.lastIndexOf('\n')];
}
