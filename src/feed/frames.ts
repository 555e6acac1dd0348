// A feed message is framed once and the one frame written to every socket it goes to. `ws` frames
// on each send(): per socket, the text turned into bytes, a header of its own and a two-buffer writev,
// work a fan-out would repeat for every socket.
import type { Duplex } from 'node:stream';
import WebSocket from 'ws';

/**
 * `text` as one unfragmented, unmasked text frame, as a server sends it (RFC 6455 §5.2): FIN and
 * opcode 1, then the payload length in 7 bits, or 126 and 16 bits, or 127 and 64 bits.
 */
export function textFrame(text: string): Buffer {
  const length = Buffer.byteLength(text);
  const headerLength = length < 126 ? 2 : length < 65536 ? 4 : 10;
  const frame = Buffer.allocUnsafe(headerLength + length);
  frame[0] = 0x81;
  if (length < 126) {
    frame[1] = length;
  } else if (length < 65536) {
    frame[1] = 126;
    frame.writeUInt16BE(length, 2);
  } else {
    frame[1] = 127;
    frame.writeBigUInt64BE(BigInt(length), 2);
  }
  frame.write(text, headerLength);
  return frame;
}

/**
 * Writes `frame` to `socket`, the connection under `websocket`, beside `ws`'s own writes (pings, close);
 * `written` runs once the socket has taken it, or failed to. Nothing is written once `websocket` is no
 * longer open: after a close frame, data frames would break the protocol. Answers whether it wrote.
 *
 * This relies on two things `ws` does not document (test/feed/frames.test.ts checks both, so that an
 * upgrade of `ws` that changes them fails there): `ws` writes each frame of its own to the socket whole
 * and at once, holding none back, as long as it compresses nothing (the feed turns perMessageDeflate
 * off) and is given no Blob; and its `bufferedAmount` counts what waits in the socket, so the feed's
 * slow-consumer bound sees these writes.
 */
export function writeFrame(websocket: WebSocket, socket: Duplex, frame: Buffer, written?: (error?: Error | null) => void): boolean {
  if (websocket.readyState !== WebSocket.OPEN) return false;
  socket.write(frame, written);
  return true;
}
