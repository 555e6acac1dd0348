// openapi.yaml and asyncapi.yaml parsed, which the account's documents are built of (served.ts): from
// generated/contract-documents.json (`npm run generate`) when a text is the one it was made of, which
// JSON reads in milliseconds where yaml takes a second and more; any other text by yaml.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { root } from '../root.ts';

/** What generated/contract-documents.json holds of each document: the digest of its text, and the text parsed. */
type Generated = Record<string, { sha256: string; document: object } | undefined>;

/** The digest generated/contract-documents.json keys a document's text by. */
export const textDigest = (text: string) => createHash('sha256').update(text).digest('hex');

/**
 * Each of `texts` (YAML documents: openapi.yaml's, asyncapi.yaml's) parsed: the generated parse of one
 * made of that very text, else yaml's. The generated file is read each time, not kept.
 */
export function parseBases<K extends string>(texts: Record<K, string>): Record<K, object> {
  const made = new Map(Object.values(generated()).flatMap((entry) => (entry ? [[entry.sha256, entry.document] as const] : [])));
  const parsed = {} as Record<K, object>;
  for (const [kind, text] of Object.entries(texts) as [K, string][]) parsed[kind] = made.get(textDigest(text)) ?? (parse(text) as object);
  return parsed;
}

function generated(): Generated {
  try {
    return JSON.parse(readFileSync(new URL('generated/contract-documents.json', root), 'utf8')) as Generated;
  } catch {
    // A tree without it (generate not run yet): every text parsed by yaml.
    return {};
  }
}
