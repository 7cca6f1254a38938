import { once } from 'node:events';
import { connect, type Socket } from 'node:net';

// A minimal HTTP/2 client that writes its frames by hand, so that a test controls what goes on the wire and when:
// a stream reset (RST_STREAM) without the end of its request body (END_STREAM), as grpc-go and grpc-java cancel,
// or right behind it, as Node's client does; Node's own client offers neither choice. Only what a short gRPC request
// needs: headers as literals (HPACK, no table, no Huffman), frames within the peer's defaults (16 KiB, a 64 KiB
// window); the server's SETTINGS and PINGs are answered.

const frameTypes = { data: 0, headers: 1, rstStream: 3, settings: 4, ping: 6 } as const;
const endStream = 0x1;
const endHeaders = 0x4;
/** The ACK flag of SETTINGS and PING. */
const ack = 0x1;
/** RST_STREAM's CANCEL, as gRPC clients send when their call is cancelled or its deadline passes. */
export const cancelCode = 8;

export function frame(type: number, flags: number, stream: number, payload: Uint8Array = new Uint8Array(0)): Buffer {
  const header = Buffer.alloc(9);
  header.writeUIntBE(payload.byteLength, 0, 3);
  header[3] = type;
  header[4] = flags;
  header.writeUInt32BE(stream, 5);
  return Buffer.concat([header, payload]);
}

function literal(text: string): Buffer {
  const bytes = Buffer.from(text);
  if (bytes.length > 126) throw new Error(`raw-http2: header text longer than 126 bytes: ${text}`);
  return Buffer.concat([Buffer.from([bytes.length]), bytes]);
}

/** A HEADERS frame (END_HEADERS) opening `stream`. */
export function headersFrame(stream: number, headers: Record<string, string>): Buffer {
  const block = Buffer.concat(
    Object.entries(headers).map(([name, value]) => Buffer.concat([Buffer.from([0]), literal(name), literal(value)])),
  );
  return frame(frameTypes.headers, endHeaders, stream, block);
}

export const dataFrame = (stream: number, payload: Uint8Array, last = false): Buffer =>
  frame(frameTypes.data, last ? endStream : 0, stream, payload);

export function rstStreamFrame(stream: number, code = cancelCode): Buffer {
  const payload = Buffer.alloc(4);
  payload.writeUInt32BE(code);
  return frame(frameTypes.rstStream, 0, stream, payload);
}

/** gRPC's framing of one message: not compressed, its length (big-endian), the message. */
export function grpcMessage(message: Uint8Array): Buffer {
  const prefix = Buffer.alloc(5);
  prefix.writeUInt32BE(message.byteLength, 1);
  return Buffer.concat([prefix, message]);
}

/**
 * A connection with the preface and empty SETTINGS sent. The server's SETTINGS are acknowledged as they come, and
 * its PINGs answered, in one write behind the frames `beforePingAnswer` gives. `send` writes frames in one write.
 */
export async function rawHttp2(
  port: number,
  beforePingAnswer: () => Buffer[] = () => [],
): Promise<{ send(...frames: Buffer[]): void; close(): void }> {
  const socket: Socket = connect(port, '127.0.0.1');
  await once(socket, 'connect');
  let pending = Buffer.alloc(0);
  socket.on('data', (chunk: Buffer) => {
    pending = Buffer.concat([pending, chunk]);
    while (pending.length >= 9 && pending.length >= 9 + pending.readUIntBE(0, 3)) {
      const length = pending.readUIntBE(0, 3);
      const [type, flags] = [pending[3], pending[4]! & ack];
      if (type === frameTypes.settings && flags === 0) socket.write(frame(frameTypes.settings, ack, 0));
      if (type === frameTypes.ping && flags === 0)
        socket.write(Buffer.concat([...beforePingAnswer(), frame(frameTypes.ping, ack, 0, pending.subarray(9, 17))]));
      pending = pending.subarray(9 + length);
    }
  });
  socket.on('error', () => {});
  socket.write(Buffer.concat([Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'), frame(frameTypes.settings, 0, 0)]));
  return { send: (...frames) => socket.write(Buffer.concat(frames)), close: () => socket.destroy() };
}
