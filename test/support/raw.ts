// HTTP/1.1 exchanges written byte for byte on a socket of their own: for requests no HTTP client will
// send (a target no URL parser reads, two Authorization lines, broken framing).
import { once } from 'node:events';
import { connect } from 'node:net';
import { checkProblem } from './contract.ts';

export interface RawResponse {
  status: number;
  /** Header names in lower case; a repeated header keeps its last value. */
  headers: Record<string, string>;
  body: string;
}

/**
 * Writes `request` (lines joined with CRLF, then a blank line, then `body`) to `url`'s host and port,
 * and reads one response: to its Content-Length, or to the connection's end.
 */
export async function rawRequest(url: string, lines: string[], body = ''): Promise<RawResponse> {
  const { hostname, port } = new URL(url);
  const socket = connect(Number(port), hostname);
  await once(socket, 'connect');
  socket.write(`${lines.join('\r\n')}\r\n\r\n${body}`);
  let received = Buffer.alloc(0);
  for await (const chunk of socket) {
    received = Buffer.concat([received, chunk as Buffer]);
    const parsed = parse(received);
    if (parsed && Buffer.byteLength(parsed.body) >= Number(parsed.headers['content-length'] ?? Number.POSITIVE_INFINITY)) {
      socket.destroy();
      return parsed;
    }
  }
  const parsed = parse(received);
  if (!parsed) throw new Error(`no HTTP response: ${JSON.stringify(received.toString('latin1').slice(0, 200))}`);
  return parsed;
}

/** Throws unless `response` is a problem of `status` and `code`, as openapi.yaml's Problem says. */
export function expectProblem(response: RawResponse, status: number, code: string): void {
  const where = `raw request → ${response.status}`;
  if (response.status !== status) throw new Error(`${where}: expected ${status}: ${response.body.slice(0, 300)}`);
  checkProblem(where, status, response.headers['content-type'] ?? '', response.body);
  const problem = JSON.parse(response.body) as { code: string };
  if (problem.code !== code) throw new Error(`${where}: code ${problem.code}, expected ${code}`);
}

function parse(received: Buffer): RawResponse | undefined {
  const text = received.toString('utf8');
  const end = text.indexOf('\r\n\r\n');
  if (end < 0) return undefined;
  const [statusLine, ...headerLines] = text.slice(0, end).split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of headerLines) {
    const colon = line.indexOf(':');
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  return { status: Number(statusLine.split(' ')[1]), headers, body: text.slice(end + 4) };
}
