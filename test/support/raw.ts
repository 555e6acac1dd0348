// HTTP/1.1 exchanges written byte for byte on a socket of their own: for requests no HTTP client will
// send (a target no URL parser reads, two Authorization lines, broken framing, Upgrade headers of other
// protocols, pipelined requests).
import { once } from 'node:events';
import { connect, type Socket } from 'node:net';
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

/** A response as rawExchange reads it: headers as fetch gives them, for checkResponse (contract.ts). */
export interface ExchangedResponse {
  status: number;
  headers: Headers;
  text: string;
}

const DEADLINE_MS = 10_000;

/**
 * Writes `request` (a whole request head, and any body after it, as given; several for pipelining) to
 * the server at `base`, then reads `count` responses (default 1), each to its Content-Length or its last
 * chunk. Rejects if the connection closes before they are all in.
 */
export function rawExchange(base: string, request: string | Buffer, count = 1): Promise<ExchangedResponse[]> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    const responses: ExchangedResponse[] = [];
    let buffered = Buffer.alloc(0);
    const timer = setTimeout(() => fail(new Error(`${responses.length} of ${count} responses within ${DEADLINE_MS} ms`)), DEADLINE_MS);
    const fail = (error: Error) => {
      clearTimeout(timer);
      socket.destroy();
      reject(error);
    };
    socket.on('data', (chunk) => {
      buffered = Buffer.concat([buffered, chunk]);
      for (let parsed = parseExchanged(buffered); parsed; parsed = parseExchanged(buffered)) {
        responses.push(parsed.response);
        buffered = buffered.subarray(parsed.length);
      }
      if (responses.length >= count) {
        clearTimeout(timer);
        socket.destroy();
        resolve(responses);
      }
    });
    socket.on('error', fail);
    socket.on('close', () => fail(new Error(`the server closed the connection after ${responses.length} of ${count} responses`)));
    socket.write(request);
  });
}

/**
 * One connection held open: requests written when the test says, responses read in order as they come
 * (each to its Content-Length or its last chunk), as a keep-alive client that may pipeline sees them.
 */
export class RawConnection {
  private buffered = Buffer.alloc(0);
  private readonly responses: ExchangedResponse[] = [];
  private waiting?: () => void;
  private ended = false;
  /** Settles once the server has closed the connection (or it failed). */
  readonly closed: Promise<void>;

  private constructor(private readonly socket: Socket) {
    socket.on('data', (chunk: Buffer) => {
      this.buffered = Buffer.concat([this.buffered, chunk]);
      for (let parsed = parseExchanged(this.buffered); parsed; parsed = parseExchanged(this.buffered)) {
        this.responses.push(parsed.response);
        this.buffered = this.buffered.subarray(parsed.length);
      }
      this.waiting?.();
    });
    this.closed = new Promise((resolve) => {
      socket.once('close', () => {
        this.ended = true;
        this.waiting?.();
        resolve();
      });
    });
    socket.on('error', () => {});
  }

  static async open(base: string): Promise<RawConnection> {
    const { hostname, port } = new URL(base);
    const socket = connect(Number(port), hostname);
    await once(socket, 'connect');
    return new RawConnection(socket);
  }

  /** The port this end of the connection has: the server's socket has it as its remote port. */
  get localPort(): number {
    return this.socket.localPort as number;
  }

  send(bytes: string): void {
    this.socket.write(bytes);
  }

  /** The next response not yet read; rejects if none whole comes within DEADLINE_MS or the connection closes first. */
  async next(): Promise<ExchangedResponse> {
    const deadline = Date.now() + DEADLINE_MS;
    while (this.responses.length === 0) {
      if (this.ended) throw new Error('the server closed the connection before the response');
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no response within ${DEADLINE_MS} ms`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiting = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
    return this.responses.shift() as ExchangedResponse;
  }

  close(): void {
    this.socket.destroy();
  }
}

/** The first whole response in `data` and how many bytes it takes, or undefined while it is incomplete. */
function parseExchanged(data: Buffer): { response: ExchangedResponse; length: number } | undefined {
  const end = data.indexOf('\r\n\r\n');
  if (end < 0) return undefined;
  const [statusLine, ...lines] = data.subarray(0, end).toString('latin1').split('\r\n');
  const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine)?.[1]);
  if (!status) throw new Error(`not an HTTP/1.1 status line: ${statusLine}`);
  const headers = new Headers();
  for (const line of lines) headers.append(line.slice(0, line.indexOf(':')), line.slice(line.indexOf(':') + 1).trim());
  const start = end + 4;
  if (headers.get('transfer-encoding')?.toLowerCase() === 'chunked') {
    const chunks: Buffer[] = [];
    let at = start;
    for (;;) {
      const lineEnd = data.indexOf('\r\n', at);
      if (lineEnd < 0) return undefined;
      const size = Number.parseInt(data.subarray(at, lineEnd).toString('latin1'), 16);
      if (data.length < lineEnd + 2 + size + 2) return undefined;
      if (size === 0) return { response: { status, headers, text: Buffer.concat(chunks).toString('utf8') }, length: lineEnd + 4 };
      chunks.push(data.subarray(lineEnd + 2, lineEnd + 2 + size));
      at = lineEnd + 2 + size + 2;
    }
  }
  const length = Number(headers.get('content-length') ?? 0);
  if (data.length < start + length) return undefined;
  return { response: { status, headers, text: data.subarray(start, start + length).toString('utf8') }, length: start + length };
}

/** A request head: the request line, then each header, then the blank line. */
export const head = (requestLine: string, headers: Record<string, string>) =>
  `${requestLine}\r\n${Object.entries(headers)
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('')}\r\n`;

/** The headers of a WebSocket handshake (RFC 6455 §4.1), with a fixed key. */
export const websocketHeaders = {
  Host: 'localhost',
  Connection: 'Upgrade',
  Upgrade: 'websocket',
  'Sec-WebSocket-Key': 'dGhlIHNhbXBsZSBub25jZQ==',
  'Sec-WebSocket-Version': '13',
};
