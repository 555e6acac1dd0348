// frames.ts writes frames it made itself to the socket under a `ws` WebSocket. These tests hold `ws` to
// what that relies on, with `ws` configured as feed.ts configures it, so that an upgrade of `ws` that
// changes any of it fails here rather than on a client.
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { connect, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { expect } from 'chai';
import WebSocket, { WebSocketServer } from 'ws';
import { textFrame, writeFrame } from '../../src/feed/frames.ts';

interface Accepted {
  websocket: WebSocket;
  socket: Duplex;
}

/** A `ws` server as the feed's, handing each accepted WebSocket with the socket it was upgraded from. */
async function startServer(): Promise<{ url: string; accepted: () => Promise<Accepted>; stop: () => Promise<void> }> {
  const server = new WebSocketServer({ noServer: true, clientTracking: false, perMessageDeflate: false });
  const waiting: ((accepted: Accepted) => void)[] = [];
  const sockets = new Set<Duplex>();
  const http = createServer();
  http.on('upgrade', (request, socket, head) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    server.handleUpgrade(request, socket, head, (websocket) => waiting.shift()?.({ websocket, socket }));
  });
  http.listen(0, '127.0.0.1');
  await once(http, 'listening');
  const { port } = http.address() as AddressInfo;
  return {
    url: `ws://127.0.0.1:${port}`,
    accepted: () => new Promise((resolve) => waiting.push(resolve)),
    stop: () => {
      for (const socket of sockets) socket.destroy();
      return new Promise((resolve) => http.close(() => resolve()));
    },
  };
}

/** A client that speaks the handshake by hand and keeps every byte after it, to compare frames byte for byte. */
async function rawClient(url: string): Promise<{ socket: Socket; received: (bytes: number) => Promise<Buffer> }> {
  const { hostname, port } = new URL(url);
  const socket = connect(Number(port), hostname);
  await once(socket, 'connect');
  socket.write(
    [
      'GET / HTTP/1.1',
      `Host: ${hostname}:${port}`,
      'Upgrade: websocket',
      'Connection: Upgrade',
      `Sec-WebSocket-Key: ${randomBytes(16).toString('base64')}`,
      'Sec-WebSocket-Version: 13',
      '',
      '',
    ].join('\r\n'),
  );
  let bytes = Buffer.alloc(0);
  let wanted: { count: number; resolve: (data: Buffer) => void } | undefined;
  const settle = () => {
    const start = bytes.indexOf('\r\n\r\n');
    if (!wanted || start < 0 || bytes.length - start - 4 < wanted.count) return;
    wanted.resolve(bytes.subarray(start + 4, start + 4 + wanted.count));
    wanted = undefined;
  };
  socket.on('data', (data: Buffer) => {
    bytes = Buffer.concat([bytes, data]);
    settle();
  });
  return {
    socket,
    received: (count) =>
      new Promise((resolve) => {
        wanted = { count, resolve };
        settle();
      }),
  };
}

describe('frames', () => {
  let server: Awaited<ReturnType<typeof startServer>>;
  before(async () => {
    server = await startServer();
  });
  after(() => server.stop());

  describe('textFrame', () => {
    it('makes the bytes that ws.send writes for the same text, at every length encoding', async () => {
      // 7-bit lengths up to 125, 16-bit from 126, 64-bit from 65,536 bytes; multi-byte characters count in bytes.
      const texts = ['', 'a', 'x'.repeat(125), 'é'.repeat(63), 'x'.repeat(126), '{"row":"ü✓😀"}', 'x'.repeat(65535), 'y'.repeat(65536)];
      const accepting = server.accepted();
      const client = await rawClient(server.url);
      const { websocket, socket } = await accepting;
      const frames = texts.map(textFrame);
      for (const [index, text] of texts.entries()) {
        websocket.send(text);
        expect(writeFrame(websocket, socket, frames[index])).to.equal(true);
      }
      let received = await client.received(frames.reduce((total, frame) => total + 2 * frame.length, 0));
      for (const [index, frame] of frames.entries()) {
        const fromWs = received.subarray(0, frame.length);
        const fromUs = received.subarray(frame.length, 2 * frame.length);
        expect(fromWs.equals(frame), `ws.send's frame of text ${index}`).to.equal(true);
        expect(fromUs.equals(frame), `our frame of text ${index}, as written`).to.equal(true);
        received = received.subarray(2 * frame.length);
      }
      client.socket.destroy();
    });
  });

  describe('writeFrame', () => {
    it("goes out whole and in order between ws's own frames, and nothing goes after the close", async () => {
      const accepting = server.accepted();
      const client = new WebSocket(server.url);
      const { websocket, socket } = await accepting;
      const heard: string[] = [];
      client.on('message', (data) => heard.push(`message ${data}`));
      client.on('ping', () => heard.push('ping'));
      const closed = once(client, 'close');

      expect(writeFrame(websocket, socket, textFrame('a'))).to.equal(true);
      websocket.ping();
      websocket.send('b');
      expect(writeFrame(websocket, socket, textFrame('c'))).to.equal(true);
      websocket.close(1000, 'done');
      expect(writeFrame(websocket, socket, textFrame('after the close'))).to.equal(false);

      const [code, reason] = await closed;
      expect(heard).to.deep.equal(['message a', 'ping', 'message b', 'message c']);
      expect([code, String(reason)]).to.deep.equal([1000, 'done']);
    });

    it('is counted in bufferedAmount while the socket holds it, and calls back once written', async () => {
      const accepting = server.accepted();
      const client = new WebSocket(server.url);
      const { websocket, socket } = await accepting;
      const text = 'x'.repeat(1000);
      const frame = textFrame(text);
      const message = once(client, 'message');
      socket.cork(); // holds the write in the socket, where bufferedAmount must see it
      const written = new Promise((resolve) => writeFrame(websocket, socket, frame, resolve));
      expect(websocket.bufferedAmount).to.equal(frame.length);
      socket.uncork();
      expect(await written, 'no error').to.not.exist;
      expect(String((await message)[0])).to.equal(text);
      client.close();
      await once(client, 'close');
    });
  });
});
