// The first stage of the HTTP API (app.ts, `responses.track`): the responses under way, whose
// connections a closing server ends (server.ts, close).
import type { ServerResponse } from 'node:http';
import type { Middleware } from 'koa';

/**
 * The responses under way, for a server that closes (server.ts, close): once it closes, every response
 * says `Connection: close` and ends its connection. Otherwise a keep-alive client holds the shutdown
 * open for keepAliveTimeout (5 s), or until its grace ends if it keeps sending. `track` is the first
 * stage of the HTTP API.
 */
export class Responses {
  private closing = false;
  private readonly unfinished = new Set<ServerResponse>();

  /** The stage that notes each response until it closes. */
  readonly track: Middleware = (ctx, next) => {
    const response = ctx.res;
    if (this.closing) response.shouldKeepAlive = false;
    this.unfinished.add(response);
    response.once('close', () => this.unfinished.delete(response));
    return next();
  };

  /** From now on every response, those under way included, ends its connection. */
  endConnections(): void {
    this.closing = true;
    for (const response of this.unfinished) {
      response.shouldKeepAlive = false;
      // A response whose head is sent (a stream of changes) promised keep-alive, which Node holds to:
      // its connection is ended once it is written, or a client's next request on it (an EventSource
      // reconnecting) would be answered 503 while the server drains, which an EventSource takes as final.
      // (Node has let go of the socket by then: it is taken now.)
      const { socket } = response;
      if (response.headersSent && socket) response.once('finish', () => socket.end());
    }
  }
}
