// Connections that Node's HTTP server lets go of while a response is under way, as it does on an upgrade:
// a changes stream's, taken over for the stream's whole life (its connection ends with it), and a waiting
// long poll's, lent while it waits and given back to the server for the connection's next request. Node's
// server otherwise keeps a connection's HTTP parser for the next request of the connection, and with it
// llhttp's state and the parser's header slots, native memory an idle stream or a waiting poll would hold
// where a feed socket, upgraded, holds none.
//
// Node has no API for this. What its server does on an upgrade (lib/_http_server.js,
// onParserExecuteCommon) is done here: the server's listeners that hand the socket's bytes to the
// parser ('data', 'end', and those that start and stop the parser's reads) are removed, and the parser
// given back (`_http_common`'s freeParser, as Node's own). Those listeners are found by their names,
// the same in Node 20 to 24; where one is missing, the connection stays Node's, as before. A lent
// connection goes back the way `net.Server`'s 'connection' event lets a caller inject one (as
// other-upgrades.ts hands back a request): with the bytes its client sent meanwhile in front, read by a
// new parser of the server's.
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

/** Node's HTTP parser of a connection, as `socket.parser` holds it; `incoming`: the request it read last. */
type Parser = { incoming?: IncomingMessage | null };
type FreeParser = (parser: Parser, request: IncomingMessage, socket: Socket) => void;
/** A connection's socket as Node's server holds it: its parser, its server, the response it is writing. */
type ServerSocket = Socket & { parser?: Parser | null; server?: Server; _httpMessage?: ServerResponse | null; [IDLE]?: true };

const { freeParser } = (process.getBuiltinModule('_http_common') ?? {}) as { freeParser?: FreeParser };

/** The server's listeners of a connection's socket that feed its parser, by event: the names Node gives them. */
const PARSER_LISTENERS = {
  data: 'bound socketOnData',
  end: 'bound socketOnEnd',
  resume: 'onSocketResume',
  pause: 'onSocketPause',
} as const;
/**
 * The server's other listeners of a connection, by event, bound to the state of the connection's requests:
 * a connection given back gets its own again ('connection'), so these go first.
 */
const STATE_LISTENERS = {
  close: 'bound socketOnClose',
  drain: 'bound socketOnDrain',
  error: 'socketOnError',
  timeout: 'socketOnTimeout',
} as const;

/** Marks a lent connection idle between its answer and its next request: Node's server does not list it then. */
const IDLE = Symbol('idle');

/** At most this much of what a client sends while its connection is lent is held for the server: more ends it. */
const MAX_HELD_BYTES = 64 * 1024;

/**
 * Takes `response`'s connection over from Node's HTTP server once its head is written and its request
 * read whole: the connection's parser goes back to Node, and the connection ends with the response. What
 * the client sends after its request is read and ignored, as a feed socket ignores what its client
 * sends, and its end (a half-close) drops the connection, as Node's server would end it. The response
 * has said `Connection: close`: once it ends, the connection closes, as no request can follow on it.
 * Answers whether it did; a connection it does not recognise stays Node's.
 */
export function takeOverConnection(response: ServerResponse): boolean {
  if (!response.headersSent || !letGo(response)) return false;
  const socket = response.socket as Socket;
  socket.on('data', ignore);
  socket.on('end', dropAtEnd);
  socket.resume();
  return true;
}

/**
 * Lends `response`'s connection while its answer waits (a long poll), its head not yet written: the
 * connection's parser goes back to Node. Once the answer is written, the connection waits for its
 * client's next request, then goes back to the server with it, unless the answer ended it. What the
 * client sends meanwhile is held (up to MAX_HELD_BYTES) and read then; its end (a half-close) drops the
 * connection. Answers whether it did: a connection it does not recognise, or whose parser has already
 * read a request after this one (pipelined), stays Node's.
 */
export function lendConnection(response: ServerResponse): boolean {
  if (response.headersSent || !letGo(response)) return false;
  const socket = response.socket as ServerSocket;
  const held: Buffer[] = [];
  let heldBytes = 0;
  const hold = (chunk: Buffer) => {
    heldBytes += chunk.length;
    if (heldBytes > MAX_HELD_BYTES) return void socket.destroy();
    held.push(chunk);
    // Answered and idle: the client's next request has begun.
    if (socket[IDLE]) giveBack(socket, held, hold);
  };
  socket.on('data', hold);
  socket.on('end', dropAtEnd);
  socket.resume();
  response.once('finish', () => {
    // After Node's own 'finish' listener: the response let go of the socket, which it ended if the
    // answer said `Connection: close`; otherwise it set the keep-alive timeout that ends an idle one.
    if (socket.destroyed || !socket.writable) return;
    if (held.length > 0) giveBack(socket, held, hold);
    else socket[IDLE] = true;
  });
  return true;
}

/** Whether `socket` is a lent connection waiting for its client's next request: nothing is under way on it. */
export const isIdleLent = (socket: Socket): boolean => (socket as ServerSocket)[IDLE] === true;

/** Hands a lent connection back to its server, with what its client has sent since it was lent. */
function giveBack(socket: ServerSocket, held: Buffer[], hold: (chunk: Buffer) => void): void {
  delete socket[IDLE];
  socket.removeListener('data', hold);
  socket.removeListener('end', dropAtEnd);
  for (const [event, name] of Object.entries(STATE_LISTENERS)) {
    const listener = socket.listeners(event).find((each) => each.name === name);
    if (listener) socket.removeListener(event, listener as () => void);
  }
  // Node's server set `server` on the connection when it first took it.
  handBack(socket.server as Server, socket, Buffer.concat(held));
}

/**
 * Hands `socket` to `server` as a new connection, the way `net.Server`'s 'connection' event lets a caller
 * inject one, with `bytes` (what its client sent that no parser read) read first by the server's new parser.
 */
export function handBack(server: Server, socket: Socket, bytes: Buffer): void {
  // What resetSocketTimeout does for each request: no keep-alive timeout left from the answer before.
  socket.setTimeout(server.timeout);
  // Paused until the server's listeners are on: the bytes put back wait for them.
  socket.pause();
  server.emit('connection', socket);
  socket.unshift(bytes);
  socket.resume();
}

/**
 * Lets go of `response`'s connection: the server's listeners that feed its parser removed, the parser
 * given back. Only once the request is read whole, is the last the parser read, and `response` is the
 * one the connection is writing.
 */
function letGo(response: ServerResponse): boolean {
  const { req: request } = response;
  const socket = response.socket as ServerSocket | null;
  const parser = socket?.parser;
  if (!freeParser || !socket || !parser || !request.complete || parser.incoming !== request || socket._httpMessage !== response) {
    return false;
  }
  const listeners = Object.entries(PARSER_LISTENERS).map(
    ([event, name]) => [event, socket.listeners(event).find((listener) => listener.name === name)] as const,
  );
  if (listeners.some(([, listener]) => listener === undefined)) return false;
  for (const [event, listener] of listeners) socket.removeListener(event, listener as () => void);
  freeParser(parser, request, socket);
  return true;
}

function ignore(): void {}

function dropAtEnd(this: Socket): void {
  this.destroy();
}
