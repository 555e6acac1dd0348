// `rowbase plan` and `rowbase apply` against a running server (--url and --key, or ROWBASE_URL and
// ROWBASE_KEY; docs/declarations.md): the declaration, and the values of the variables it names for its
// secrets, sent to POST /v1/declaration/plan and /apply (openapi.yaml) through undici. A problem answered
// is the command's one error, its places named as a plan made here names them.
import { request } from 'undici';
import type { Declaration } from '../declarations/format.ts';
import type { Plan } from '../declarations/plan.ts';
import { UsageError, type Values } from './command.ts';

/** A running server and an admin key of the account to plan and apply for. */
export interface Server {
  url: string;
  key: string;
}

/** The options that name a server, for the commands that take one. */
export const serverOptions = {
  url: { type: 'string', description: 'plan or apply through the server at this URL (default ROWBASE_URL), not the database' },
  key: { type: 'string', description: 'with --url: an admin key of the account, of every collection (default ROWBASE_KEY)' },
} as const;

/** The server the command is to go through (--url, or ROWBASE_URL), or undefined for the database of DATABASE_URL. */
export function serverOf(values: Values): Server | undefined {
  const url = (values.url as string | undefined) || process.env.ROWBASE_URL;
  if (!url) return undefined;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new UsageError(`--url must be an http or https URL, not ${JSON.stringify(url)}`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')
    throw new UsageError(`--url must be an http or https URL, not ${JSON.stringify(url)}`);
  const key = (values.key as string | undefined) || process.env.ROWBASE_KEY;
  if (!key) throw new UsageError('--url needs --key (or ROWBASE_KEY): an admin key of the account');
  return { url: parsed.href.replace(/\/+$/, ''), key };
}

/**
 * The values of the environment variables `declaration` names for its secrets, those set here: the only
 * variables sent to the server.
 */
function secretsNamed(declaration: Declaration): Record<string, string> {
  const named = [
    ...Object.values(declaration.issuers ?? {}).map((issuer) => issuer.secret?.env),
    ...(declaration.webhooks ?? []).map((webhook) => webhook.secret?.env),
  ];
  const secrets: Record<string, string> = {};
  for (const env of named) {
    const value = env === undefined ? undefined : process.env[env];
    if (env !== undefined && value !== undefined && value !== '') secrets[env] = value;
  }
  return secrets;
}

/** The plan of the declaration `text` (a file's, as it was read), from the server. */
export function planThrough(server: Server, text: string, declaration: Declaration): Promise<Plan> {
  return post<Plan>(server, '/v1/declaration/plan', { declaration: text, secrets: secretsNamed(declaration) });
}

/** Applies a plan, or the declaration `text` planned and applied at once, through the server: the changes made. */
export async function applyThrough(
  server: Server,
  what: { plan: Plan } | { text: string },
  declaration: Declaration,
  allowDestructive: boolean,
): Promise<Plan['changes']> {
  const sent = 'plan' in what ? { plan: what.plan } : { declaration: what.text };
  const body = { ...sent, secrets: secretsNamed(declaration), allow_destructive: allowDestructive };
  return (await post<{ changes: Plan['changes'] }>(server, '/v1/declaration/apply', body)).changes;
}

interface Problem {
  status?: number;
  detail?: string;
  errors?: { name?: string; message?: string }[];
}

/** POSTs `body` as JSON with the key, and answers the JSON of a 200; any other answer is the command's error. */
async function post<T>(server: Server, path: string, body: unknown): Promise<T> {
  let response: Awaited<ReturnType<typeof request>>;
  try {
    response = await request(`${server.url}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${server.key}`, 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify(body),
    });
  } catch (error) {
    const { code, message } = error as NodeJS.ErrnoException;
    throw new Error(`cannot reach ${server.url}: ${code ?? message}`);
  }
  const text = await response.body.text();
  if (response.statusCode === 200) return JSON.parse(text) as T;
  let problem: Problem = {};
  try {
    problem = JSON.parse(text) as Problem;
  } catch {
    // Not a problem of rowbase's: said by its status alone.
  }
  // The places of the declaration sent, named as a plan made here names them: from its root.
  const places = (problem.errors ?? []).map(
    ({ name = '', message = '' }) => `  ${name.replace(/^\/(plan\/)?declaration(?=\/|$)/, '') || '/'} ${message}`,
  );
  throw new Error([`${server.url} answered ${response.statusCode}: ${problem.detail ?? text.slice(0, 200)}`, ...places].join('\n'));
}
