// A response that lasts as long as its client stays (a changes stream) takes its connection over from
// Node's HTTP server, as an upgrade does: Node's server otherwise keeps the connection's HTTP parser for
// the next request of the connection, and with it llhttp's state and the parser's header slots, native
// memory an idle stream would hold for its whole life where a feed socket, upgraded, holds none.
//
// Node has no API for this. What its server does on an upgrade (lib/_http_server.js,
// onParserExecuteCommon) is done here: the server's listeners that hand the socket's bytes to the
// parser ('data', 'end', and those that start and stop the parser's reads) are removed, and the parser
// given back (`_http_common`'s freeParser, as Node's own). Those listeners are found by their names,
// the same in Node 20 to 24; where one is missing, the connection stays Node's, as before. What the
// client sends after its request is read and ignored, as a feed socket ignores what its client sends,
// and its end (a half-close) drops the connection, as Node's server would end it. The response has said
// `Connection: close`: once it ends, the connection closes, as no request can follow on it.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

/** Node's HTTP parser of a connection, as `socket.parser` holds it. */
type Parser = object;
type FreeParser = (parser: Parser, request: IncomingMessage, socket: Socket) => void;

const { freeParser } = (process.getBuiltinModule('_http_common') ?? {}) as { freeParser?: FreeParser };

/** The server's listeners of a connection's socket that feed its parser, by event: the names Node gives them. */
const PARSER_LISTENERS = {
  data: 'bound socketOnData',
  end: 'bound socketOnEnd',
  resume: 'onSocketResume',
  pause: 'onSocketPause',
} as const;

/**
 * Takes `response`'s connection over from Node's HTTP server once its head is written and its request
 * read whole: the connection's parser goes back to Node, and the connection ends with the response.
 * Answers whether it did; a connection it does not recognise stays Node's.
 */
export function takeOverConnection(response: ServerResponse): boolean {
  const { req: request } = response;
  const socket = response.socket as (Socket & { parser?: Parser | null }) | null;
  const parser = socket?.parser;
  if (!freeParser || !socket || !parser || !request.complete || !response.headersSent) return false;
  const listeners = Object.entries(PARSER_LISTENERS).map(
    ([event, name]) => [event, socket.listeners(event).find((listener) => listener.name === name)] as const,
  );
  if (listeners.some(([, listener]) => listener === undefined)) return false;
  for (const [event, listener] of listeners) socket.removeListener(event, listener as () => void);
  freeParser(parser, request, socket);
  socket.on('data', ignore);
  socket.on('end', dropAtEnd);
  socket.resume();
  return true;
}

function ignore(): void {}

function dropAtEnd(this: Socket): void {
  this.destroy();
}
