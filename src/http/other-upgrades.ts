// Upgrades to anything but WebSocket are ignored, as RFC 9110 §7.8 lets a server do: the request is
// answered by the HTTP API exactly as if it had no Upgrade header. `curl --http2` offers h2c this way on
// every request it makes over plain HTTP.
//
// Node 20's server gives every request with an Upgrade header (and `Connection: Upgrade`) to its
// 'upgrade' listener, whatever the protocol, and lets go of the connection first: its parser has stopped
// after the headers, so the body, if any, is still on the socket. (Node 24's `shouldUpgradeCallback`
// decides this inside the server.) So the request head is written again without its Upgrade header,
// put back in front of what the client sent after it, and the socket handed to the server as a new
// connection, the way `net.Server`'s 'connection' event lets a caller inject one: the server's own
// parser then reads an ordinary request, its body (sized or chunked) and anything pipelined after it.
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { handBack } from './connections.ts';

/** Whether `request` asks for a WebSocket: `websocket` is among the protocols its Upgrade header lists (RFC 9110 §7.8). */
export function wantsWebSocket(request: IncomingMessage): boolean {
  return (request.headers.upgrade ?? '').split(',').some((protocol) => protocol.trim().toLowerCase() === 'websocket');
}

/** Has `server` answer `request`, which came to its 'upgrade' listener with `socket` and `head`, as if it had no Upgrade header. */
export function serveWithoutUpgrade(server: Server, request: IncomingMessage, socket: Duplex, head: Buffer): void {
  // Header names and values as Node's parser read them, one byte a character: nothing it let through can
  // break the head it reads again, and with no space after the colon the head is never longer than it was.
  const lines = [`${request.method} ${request.url} HTTP/${request.httpVersion}`];
  const { rawHeaders } = request;
  for (let index = 0; index < rawHeaders.length; index += 2) {
    if (rawHeaders[index].toLowerCase() !== 'upgrade') lines.push(`${rawHeaders[index]}:${rawHeaders[index + 1]}`);
  }
  const again = Buffer.concat([Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1'), head]);
  whenIdle(socket, () => {
    // The connection ended with the response before it (`Connection: close`), or the client went away.
    if (socket.destroyed || !socket.writable) return;
    handBack(server, socket as Socket, again);
  });
}

/**
 * Runs `then` once no response of the connection's previous requests is still being written: with
 * pipelining, the upgrade request can come in while the one before it is still being answered, by the
 * server's handling of the connection that this one replaces. (`_httpMessage` is the response a
 * connection is writing, Node's own field.)
 */
function whenIdle(socket: Duplex, then: () => void): void {
  const writing = (socket as Duplex & { _httpMessage?: ServerResponse | null })._httpMessage;
  if (writing) writing.once('finish', () => whenIdle(socket, then));
  else then();
}
