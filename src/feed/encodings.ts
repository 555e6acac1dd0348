// How a feed message travels: as a WebSocket text frame on the feed's sockets, or, on the changes
// streams over plain HTTP (handlers/feed.ts), as a server-sent event or a line of JSON Lines. Each
// message is encoded once for every client it goes to in the same encoding (delivery.ts).
import { textFrame } from './frames.ts';

export interface Encoding {
  /** What the client reads: a feed socket's frames, server-sent events, or JSON Lines. */
  readonly name: 'websocket' | 'sse' | 'jsonl';
  /**
   * The bytes of the message whose JSON is `text` and whose type is `type`; `id`: the seq a client
   * resumes after once it has handled the message (a server-sent event's `id`), when it has one.
   */
  encode(text: string, type: string, id?: number): Buffer;
}

export const websocketFrames: Encoding = { name: 'websocket', encode: (text) => textFrame(text) };

/**
 * A server-sent event (WHATWG HTML, "Server-sent events"): `id` the seq, so that `Last-Event-ID` resumes
 * where the client stopped; `event` the message's type; `data` its JSON, one line (JSON.stringify
 * escapes every line break).
 */
export const serverSentEvents: Encoding = {
  name: 'sse',
  encode: (text, type, id) => Buffer.from(`${id === undefined ? '' : `id: ${id}\n`}event: ${type}\ndata: ${text}\n\n`),
};

/** One message a line (JSON Lines). */
export const jsonLines: Encoding = { name: 'jsonl', encode: (text) => Buffer.from(`${text}\n`) };

/**
 * `encoding`, each message also framed as one chunk of a chunked HTTP/1.1 body (RFC 9112 §7.1): the
 * bytes a changes stream writes to its response's socket as they are (sinks.ts), one Buffer for every
 * stream it goes to, where the response would frame it per stream, in three writes.
 */
function chunkedOf(encoding: Encoding): Encoding {
  return {
    name: encoding.name,
    encode(text, type, id) {
      const bytes = encoding.encode(text, type, id);
      return Buffer.concat([Buffer.from(`${bytes.length.toString(16)}\r\n`), bytes, CRLF]);
    },
  };
}

const CRLF = Buffer.from('\r\n');

/** Each encoding of the changes streams, framed as chunks (chunkedOf): made once, as messages are kept encoded by their encoding (delivery.ts). */
export const chunked = new Map<Encoding, Encoding>([serverSentEvents, jsonLines].map((encoding) => [encoding, chunkedOf(encoding)]));
