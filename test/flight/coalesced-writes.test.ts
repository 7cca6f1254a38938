// A small result's schema and batch are handed to HTTP/2 together and leave the server in one socket
// write (#10): grpc-js alone handed each message over once the previous one's socket write had called
// back (3 writes per DoGet of one batch: headers and schema, batch, trailers; now 2, counted with
// strace). Seen on the wire from a TCP relay between a grpc-js client and the server: messages handed
// over together travel in one HTTP/2 DATA frame, messages handed over one socket write apart in two.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createConnection, createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { Field, Int32, RecordBatch, Schema, Struct, makeData } from 'apache-arrow';
import { FlightSqlServer, type FlightSqlBackend, type QueryResult } from '../../src/flight/index.js';
import { serviceDefinition, tableFromFlightData, type FlightData } from '../../src/wire/index.js';

const schema = new Schema([new Field('one', new Int32(), false)]);

function oneRow(): RecordBatch {
  const column = makeData({ type: new Int32(), length: 1, nullCount: 0, data: Int32Array.of(1) });
  return new RecordBatch(
    schema,
    makeData({ type: new Struct(schema.fields), length: 1, nullCount: 0, children: [column] }),
  );
}

/** A backend whose every query answers one row, like `SELECT 1 AS one`. */
const backend: Partial<FlightSqlBackend<string>> = {
  async authenticateBearer() {
    return 'tester';
  },
  async executeQuery(): Promise<QueryResult> {
    return {
      schema,
      batches: (async function* () {
        yield oneRow();
      })(),
    };
  },
};

/** Relays one TCP connection to `port`, keeping each read of the server's side as a chunk. */
function relay(port: number): { server: Server; chunks: Buffer[]; sockets: Socket[] } {
  const chunks: Buffer[] = [];
  const sockets: Socket[] = [];
  const server = createServer((client) => {
    const upstream = createConnection({ host: '127.0.0.1', port, noDelay: true });
    client.setNoDelay(true);
    sockets.push(client, upstream);
    upstream.on('data', (chunk: Buffer) => {
      chunks.push(chunk);
      client.write(chunk);
    });
    client.on('data', (chunk: Buffer) => upstream.write(chunk));
    for (const [a, b] of [
      [client, upstream],
      [upstream, client],
    ]) {
      a.on('error', () => b.destroy());
      a.on('close', () => b.destroy());
    }
  });
  return { server, chunks, sockets };
}

interface Frame {
  readonly type: number;
  readonly flags: number;
  readonly stream: number;
  /** Which read of the relay the frame's last byte came in. */
  readonly chunk: number;
  readonly payload: Buffer;
}

const DATA = 0;
const HEADERS = 1;
const END_STREAM = 1;

/** How many whole gRPC messages (5-byte prefix, then that many bytes) a DATA frame's payload holds. */
function grpcMessages(payload: Buffer): number {
  let count = 0;
  for (let at = 0; at + 5 <= payload.length; at += 5 + payload.readUInt32BE(at + 1)) count++;
  return count;
}

/** The HTTP/2 frames in the server's bytes (a server sends no preface: frames from the first byte). */
function frames(chunks: readonly Buffer[]): Frame[] {
  const ends: number[] = [];
  let total = 0;
  for (const chunk of chunks) ends.push((total += chunk.length));
  const bytes = Buffer.concat(chunks);
  const out: Frame[] = [];
  for (let at = 0; at + 9 <= bytes.length;) {
    const length = bytes.readUIntBE(at, 3);
    const end = at + 9 + length;
    if (end > bytes.length) break;
    const chunk = ends.findIndex((e) => e >= end);
    const stream = bytes.readUInt32BE(at + 5) & 0x7fffffff;
    out.push({ type: bytes[at + 3], flags: bytes[at + 4], stream, chunk, payload: bytes.subarray(at + 9, end) });
    at = end;
  }
  return out;
}

describe('DoGet socket writes', () => {
  const server = new FlightSqlServer(backend as FlightSqlBackend<string>, { address: '127.0.0.1:0' });
  let proxy: ReturnType<typeof relay>;
  let client: grpc.Client & Record<string, (...args: unknown[]) => grpc.ClientReadableStream<FlightData>>;

  before(async () => {
    const { port } = await server.start();
    proxy = relay(port);
    proxy.server.listen(0, '127.0.0.1');
    await once(proxy.server, 'listening');
    const Client = grpc.makeGenericClientConstructor(serviceDefinition, 'FlightService');
    const { port: relayPort } = proxy.server.address() as AddressInfo;
    client = new Client(`127.0.0.1:${relayPort}`, grpc.credentials.createInsecure()) as never;
  });
  after(async () => {
    client.close();
    for (const socket of proxy.sockets) socket.destroy();
    proxy.server.close();
    await server.close();
  });

  async function doGet(): Promise<FlightData[]> {
    const metadata = new grpc.Metadata();
    metadata.set('authorization', 'Bearer x');
    const call = client.DoGet({ ticket: new TextEncoder().encode('SELECT 1 AS one') }, metadata);
    const messages: FlightData[] = [];
    call.on('data', (message: FlightData) => messages.push(message));
    await once(call, 'end');
    return messages;
  }

  it('hands the schema and the batch of a small result to HTTP/2 together', async () => {
    for (let i = 0; i < 3; i++) await doGet(); // the connection's settings and window updates out of the way
    for (let round = 0; round < 5; round++) {
      const from = proxy.chunks.length;
      const messages = await doGet();
      const table = tableFromFlightData(messages)!;
      assert.equal(messages.length, 2, 'schema and one batch');
      assert.deepEqual([...table.getChild('one')!], [1]);
      // The frames of the newest stream (the highest id): this call's.
      const sent = frames(proxy.chunks).filter((f) => f.chunk >= from);
      const stream = Math.max(...sent.map((f) => f.stream));
      const call = sent.filter((f) => f.stream === stream);
      const data = call.filter((f) => f.type === DATA);
      assert.deepEqual(
        data.map((f) => grpcMessages(f.payload)),
        [2],
        `one DATA frame with both messages (frames: ${call.map((f) => `type ${f.type} flags ${f.flags}`).join(', ')})`,
      );
      assert.equal(call.at(-1)?.type, HEADERS, 'the trailers last');
      assert.ok(call.at(-1)!.flags & END_STREAM);
    }
  });
});
