// The first stage of the HTTP API (app.ts, `responses.track`): the responses under way, whose
// connections a closing server ends (server.ts, close).
import type { ServerResponse } from 'node:http';
import type { Middleware } from 'koa';

/**
 * The responses under way, for a server that closes (server.ts, close): once it closes, every response
 * says `Connection: close` and ends its connection. Otherwise a keep-alive client holds the shutdown
 * open for keepAliveTimeout (5 s), or until its grace ends if it keeps sending. `track` is the first
 * stage of the HTTP API.
 *
 * Each response holds a slot of an array until it closes, and its slot is taken again by a later one:
 * not a Set, whose table V8 makes anew as responses come and go. A table made anew keeps a link to its
 * successor, so once one of them has reached the old generation each later table, and every response
 * it held, outlives the young generation's collections: the server then promotes whole requests and
 * runs full collections over and over (docs/performance.md, "A Set of the responses under way").
 */
export class Responses {
  private closing = false;
  /** Each response under way in its slot; a slot whose response has closed is free. */
  private readonly unfinished: (ServerResponse | undefined)[] = [];
  private readonly free: number[] = [];

  /** The stage that notes each response until it closes. */
  readonly track: Middleware = (ctx, next) => {
    const response = ctx.res;
    if (this.closing) response.shouldKeepAlive = false;
    const slot = this.free.pop() ?? this.unfinished.length;
    this.unfinished[slot] = response;
    response.once('close', () => {
      this.unfinished[slot] = undefined;
      this.free.push(slot);
    });
    return next();
  };

  /** From now on every response, those under way included, ends its connection. */
  endConnections(): void {
    this.closing = true;
    for (const response of this.unfinished) {
      if (response === undefined) continue;
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
