// A plain HTTP client for tests that checks every response it sees against openapi.yaml.
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { checkResponse } from './contract.ts';

export interface Response<T = unknown> {
  status: number;
  headers: Headers;
  text: string;
  /** The parsed JSON body, or undefined when the body is empty or not JSON. */
  body: T;
}

export interface RequestOptions {
  /** Sent as JSON with Content-Type application/json. */
  json?: unknown;
  /** Sent as it is; set the content type in `headers`. */
  raw?: string | Buffer;
  headers?: Record<string, string>;
}

export class Client {
  constructor(
    readonly url: string,
    readonly key?: string,
  ) {}

  async request<T = unknown>(method: string, path: string, options: RequestOptions = {}): Promise<Response<T>> {
    const headers: Record<string, string> = {};
    if (this.key) headers.authorization = `Bearer ${this.key}`;
    let body: string | Buffer | undefined = options.raw;
    if (options.json !== undefined) {
      headers['content-type'] = 'application/json';
      body = JSON.stringify(options.json);
    }
    Object.assign(headers, options.headers);
    const started = Date.now();
    const response = await fetch(this.url + path, { method, headers, body: body as BodyInit | undefined }).catch((error: Error) => {
      // fetch names neither the request nor when it failed: a connection reset says more with both.
      const cause = error.cause as NodeJS.ErrnoException | undefined;
      const why = `${error.message}${cause ? ` (${cause.code ?? cause.message})` : ''}`;
      throw new Error(`${method} ${path} failed after ${Date.now() - started} ms: ${why}`, { cause: error });
    });
    const text = await response.text();
    checkResponse({ method, path: path.split('?')[0], status: response.status, headers: response.headers, text });
    let parsed: unknown;
    try {
      parsed = text === '' ? undefined : JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    return { status: response.status, headers: response.headers, text, body: parsed as T };
  }

  get = <T = unknown>(path: string, options?: RequestOptions) => this.request<T>('GET', path, options);
  post = <T = unknown>(path: string, json?: unknown, options?: RequestOptions) => this.request<T>('POST', path, { json, ...options });
  put = <T = unknown>(path: string, json?: unknown, options?: RequestOptions) => this.request<T>('PUT', path, { json, ...options });
  patch = <T = unknown>(path: string, json?: unknown, options?: RequestOptions) => this.request<T>('PATCH', path, { json, ...options });
  delete = <T = unknown>(path: string, options?: RequestOptions) => this.request<T>('DELETE', path, options);
}

/**
 * A response read through node:http (for requests fetch will not send as they are: a path it would
 * normalise, `Expect: 100-continue`), read whole and checked against openapi.yaml as Client's are.
 */
export async function readResponse<T = unknown>(method: string, path: string, response: IncomingMessage): Promise<Response<T>> {
  let text = '';
  response.setEncoding('utf8');
  for await (const chunk of response) text += chunk;
  const headers = new Headers();
  for (const [name, value] of Object.entries(response.headers)) {
    if (value !== undefined) headers.set(name, Array.isArray(value) ? value.join(', ') : value);
  }
  const status = response.statusCode ?? 0;
  checkResponse({ method, path, status, headers, text });
  return { status, headers, text, body: JSON.parse(text || 'null') as T };
}

/**
 * GETs `path` of the server at `url` exactly as written, through node:http (fetch, like any WHATWG URL
 * parser, resolves `..` and `%2e%2e` segments before sending), checked against openapi.yaml.
 */
export async function getExactly(url: string, path: string): Promise<Response> {
  const { hostname, port } = new URL(url);
  const request = httpRequest({ host: hostname, port, path, method: 'GET' });
  request.end();
  const response = await new Promise<IncomingMessage>((resolve, reject) => {
    request.once('response', resolve);
    request.once('error', reject);
  });
  return readResponse('GET', path, response);
}
