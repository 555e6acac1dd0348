// Where a subscriber's messages go (subscriber.ts): a feed socket, or the response of a changes stream
// over plain HTTP (handlers/feed.ts). Either way the server holds at most what the peer has not taken
// (bufferedAmount), which the subscriber bounds.
import { once } from 'node:events';
import type { ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { WebSocket } from 'ws';
import type { Logger } from '../log.ts';
import { chunked, type Encoding, websocketFrames } from './encodings.ts';
import { writeFrame } from './frames.ts';
import { type CloseCode, closeCodes } from './messages.ts';

export interface Sink {
  /** How messages are written to it. */
  readonly encoding: Encoding;
  /** Bytes written and not yet taken by the peer. */
  readonly bufferedAmount: number;
  /** Settles once it has closed. */
  readonly closed: Promise<unknown>;
  /** Writes `bytes` unless it is closing; `written` runs once the peer's connection has taken them, or failed to. Answers whether it wrote. */
  write(bytes: Buffer, written?: (error?: Error | null) => void): boolean;
  /** Holds writes back until uncork(), to send them in one system call. */
  cork(): void;
  uncork(): void;
  /** Called every ping interval: keeps the connection alive, and drops a peer gone silent where it can tell. */
  heartbeat(): void;
  /** Ends it, saying why where it can. */
  close(code: CloseCode): void;
  /** Drops the connection at once. */
  terminate(): void;
  /** `listener` runs once it has closed, whoever closed it. */
  onClose(listener: () => void): void;
}

/** A feed socket: `connection`, the socket `websocket` was upgraded from, takes the frames made once (frames.ts). */
export class WebSocketSink implements Sink {
  readonly encoding = websocketFrames;
  readonly closed: Promise<unknown>;
  private alive = true;

  constructor(
    readonly websocket: WebSocket,
    private readonly connection: Duplex,
    log: Logger,
  ) {
    this.closed = once(websocket, 'close').catch(() => {});
    websocket.on('pong', () => {
      this.alive = true;
    });
    // Clients send nothing (asyncapi.yaml): what they send anyway is ignored, and `ws` closes with 1009
    // on anything over its maxPayload.
    websocket.on('message', () => {});
    websocket.on('error', (error) => log.debug({ err: error }, 'feed socket error'));
  }

  get bufferedAmount(): number {
    return this.websocket.bufferedAmount;
  }

  write(bytes: Buffer, written?: (error?: Error | null) => void): boolean {
    return writeFrame(this.websocket, this.connection, bytes, written);
  }

  cork(): void {
    this.connection.cork();
  }

  uncork(): void {
    this.connection.uncork();
  }

  /** A client that did not answer the last ping is dropped. */
  heartbeat(): void {
    if (!this.alive) {
      this.websocket.terminate();
      return;
    }
    this.alive = false;
    this.websocket.ping();
  }

  close({ code, reason }: CloseCode): void {
    this.websocket.close(code, reason);
  }

  terminate(): void {
    this.websocket.terminate();
  }

  onClose(listener: () => void): void {
    this.websocket.on('close', listener);
  }
}

/** How long an EventSource waits before it reconnects (the `retry` field, in ms). */
const SSE_RETRY_MS = 1000;

/** The comments of a server-sent event stream: written by every stream alike, made once. */
const HEARTBEAT = Buffer.from(': heartbeat\n\n');
const RETRY = Buffer.from(`retry: ${SSE_RETRY_MS}\n\n`);

/**
 * The response of a changes stream, its head already written: server-sent events or JSON Lines. Its
 * heartbeat is a comment (server-sent events; JSON Lines has none, and relies on TCP keep-alive); a close
 * ends the response, after a comment naming why (server-sent events), but a slow consumer's, which
 * drops the connection with what it had yet to take. A chunked body (HTTP/1.1) takes its messages
 * framed as chunks once for every stream (encodings.ts, chunked), written to the response's socket as
 * they are, as a feed socket takes its frames; its comments the response frames.
 */
export class ResponseSink implements Sink {
  readonly closed: Promise<unknown>;
  readonly encoding: Encoding;
  /** What runs once the response has closed (onClose): all from one listener of its, each of which costs an idle stream a few hundred bytes. */
  private readonly closing: (() => void)[] = [];
  /** Where messages framed as chunks are written; undefined: the response frames them. */
  private readonly socket: Socket | undefined;

  constructor(
    private readonly response: ServerResponse,
    encoding: Encoding,
    keepAliveMs: number,
  ) {
    this.closed = new Promise<void>((resolve) => this.closing.push(resolve));
    response.once('close', () => {
      for (const listener of this.closing) listener();
    });
    const { socket } = response;
    socket?.setKeepAlive(true, keepAliveMs);
    // A response has its socket once its head is written, but a pipelined request's, which waits for the answers before it.
    const framed = response.chunkedEncoding && socket ? chunked.get(encoding) : undefined;
    this.socket = framed && (socket as Socket);
    this.encoding = framed ?? encoding;
    if (encoding.name === 'sse') response.write(RETRY);
  }

  get bufferedAmount(): number {
    // The response's, and its socket's.
    return this.response.writableLength;
  }

  write(bytes: Buffer, written?: (error?: Error | null) => void): boolean {
    if (this.response.writableEnded || this.response.destroyed) return false;
    (this.socket ?? this.response).write(bytes, written);
    return true;
  }

  cork(): void {
    this.response.cork();
  }

  uncork(): void {
    this.response.uncork();
  }

  heartbeat(): void {
    if (this.encoding.name === 'sse') this.comment(HEARTBEAT);
  }

  close({ code, reason }: CloseCode): void {
    if (code === closeCodes.slowConsumer.code) {
      this.response.destroy();
      return;
    }
    if (this.encoding.name === 'sse') this.comment(Buffer.from(`: closed ${code} ${reason}\n\n`));
    this.response.end();
  }

  terminate(): void {
    this.response.destroy();
  }

  onClose(listener: () => void): void {
    this.closing.push(listener);
  }

  /** A comment of a server-sent event stream, which the response frames. */
  private comment(bytes: Buffer): void {
    if (!this.response.writableEnded && !this.response.destroyed) this.response.write(bytes);
  }
}
