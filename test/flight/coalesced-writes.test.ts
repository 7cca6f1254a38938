// A small result's schema and batch are handed to HTTP/2 together and leave the server in one socket
// write (#10): grpc-js alone handed each message over once the previous one's socket write had called
// back (3 writes per DoGet of one batch: headers and schema, batch, trailers; now 2, counted with
// strace). Seen on the wire from a TCP relay between a grpc-js client and the server: messages handed
// over together travel in one HTTP/2 DATA frame, messages handed over one socket write apart in two.
// A call's trailers (its status) also leave with its last message (src/flight/prompt-end): before, they
// went in a write of their own one event-loop turn or more later, for every call (DoGet, GetFlightInfo,
// DoAction), and the client waited for them to finish the call.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import * as http2 from 'node:http2';
import { createConnection, createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { Field, Int32, RecordBatch, Schema, Struct, makeData } from 'apache-arrow';
import { FlightSqlServer, type FlightSqlBackend, type QueryResult } from '../../src/flight/index.js';
import { packAny, serviceDefinition, tableFromFlightData, type FlightData } from '../../src/wire/index.js';

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
  async describeQuery() {
    return schema;
  },
  async prepare() {
    return { datasetSchema: schema, parameterSchema: new Schema([]), isUpdate: false };
  },
  async executeQuery(_ctx, statement): Promise<QueryResult> {
    const rows = statement.query.endsWith('WHERE false') ? 0 : 1;
    return {
      schema,
      batches: (async function* () {
        if (rows) yield oneRow();
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

  function bearer(): grpc.Metadata {
    const metadata = new grpc.Metadata();
    metadata.set('authorization', 'Bearer x');
    return metadata;
  }

  async function doGet(sql = 'SELECT 1 AS one'): Promise<FlightData[]> {
    const call = client.DoGet({ ticket: new TextEncoder().encode(sql) }, bearer());
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

  /** The newest call's frames (the highest stream id) among the server's bytes from chunk `from` on. */
  function lastCall(from: number): Frame[] {
    const sent = frames(proxy.chunks).filter((f) => f.chunk >= from && f.stream > 0);
    const stream = Math.max(...sent.map((f) => f.stream));
    return sent.filter((f) => f.stream === stream);
  }

  /** Asserts the call answered headers, one or more DATA frames and its trailers, all in one socket write. */
  function assertOneWrite(call: Frame[], what: string): void {
    const shape = call.map((f) => `type ${f.type} flags ${f.flags} read ${f.chunk}`).join(', ');
    assert.equal(call[0]?.type, HEADERS, `${what}: headers first (${shape})`);
    assert.ok(
      call.some((f) => f.type === DATA && f.payload.length > 0),
      `${what}: a message (${shape})`,
    );
    const trailers = call.at(-1)!;
    assert.ok(trailers.type === HEADERS && trailers.flags & END_STREAM, `${what}: trailers last (${shape})`);
    assert.equal(new Set(call.map((f) => f.chunk)).size, 1, `${what}: one socket write (${shape})`);
  }

  const unary = (method: string, request: unknown): Promise<unknown> =>
    new Promise((resolve, reject) => {
      const call = client as unknown as Record<
        string,
        (r: unknown, m: grpc.Metadata, cb: (e: Error | null, v: unknown) => void) => void
      >;
      call[method](request, bearer(), (error, value) => (error ? reject(error) : resolve(value)));
    });

  it("sends a DoGet's trailers in the socket write of its last message", async () => {
    for (let i = 0; i < 3; i++) await doGet();
    for (let round = 0; round < 5; round++) {
      const from = proxy.chunks.length;
      assert.equal((await doGet()).length, 2);
      assertOneWrite(lastCall(from), `DoGet, round ${round}`);
    }
    for (let round = 0; round < 3; round++) {
      const from = proxy.chunks.length;
      assert.equal((await doGet('SELECT 1 AS one WHERE false')).length, 1, 'the schema alone');
      assertOneWrite(lastCall(from), `DoGet of no rows, round ${round}`);
    }
  });

  it("sends a GetFlightInfo's FlightInfo and trailers in one socket write", async () => {
    const descriptor = { type: 2, cmd: packAny('CommandStatementQuery', { query: 'SELECT 1 AS one' }) };
    for (let i = 0; i < 3; i++) await unary('GetFlightInfo', descriptor);
    for (let round = 0; round < 5; round++) {
      const from = proxy.chunks.length;
      const info = (await unary('GetFlightInfo', descriptor)) as { endpoint: unknown[] };
      assert.equal(info.endpoint.length, 1);
      assertOneWrite(lastCall(from), `GetFlightInfo, round ${round}`);
    }
  });

  /** Asserts that (nearly) all `calls` were destroyed, each with nothing of a write in flight (`inFlight`: what was). */
  async function assertNoneInFlight(inFlight: readonly number[], calls: number, what: string): Promise<void> {
    await new Promise((resolve) => setImmediate(resolve));
    assert.ok(inFlight.length >= calls - 2, `the calls' ${what}s destroyed (${inFlight.length} of ${calls})`);
    assert.deepEqual(
      inFlight.filter((length) => length > 0),
      [],
      `no ${what} destroyed while a write was in flight`,
    );
  }

  it('destroys a call ended promptly only once its last write has called back', async () => {
    // Node's server-side Http2Stream class, from a stream of a throwaway server.
    const plain = http2.createServer();
    const streamClass = new Promise<http2.ServerHttp2Stream>((resolve) =>
      plain.once('stream', (stream) => {
        stream.respond();
        stream.end();
        resolve(Object.getPrototypeOf(stream) as http2.ServerHttp2Stream);
      }),
    );
    plain.listen(0, '127.0.0.1');
    await once(plain, 'listening');
    const session = http2.connect(`http://127.0.0.1:${(plain.address() as AddressInfo).port}`);
    session.request({ ':path': '/' }).resume();
    const proto = await streamClass;
    session.close();
    plain.close();
    // A stream destroyed with bytes of a write in flight: that write calls back on a destroyed Writable, which
    // builds an ERR_STREAM_DESTROYED (its stack trace captured) for nobody, once per call.
    const inFlight: number[] = [];
    const destroy = Object.getOwnPropertyDescriptor(proto, 'destroy');
    const inherited = Reflect.get(proto, 'destroy') as (
      this: http2.ServerHttp2Stream,
      error?: Error,
    ) => http2.ServerHttp2Stream;
    proto.destroy = function (this: http2.ServerHttp2Stream, error?: Error) {
      if (!error) inFlight.push(this.writableLength);
      return inherited.call(this, error);
    };
    try {
      const descriptor = { type: 2, cmd: packAny('CommandStatementQuery', { query: 'SELECT 1 AS one' }) };
      for (let round = 0; round < 5; round++) {
        assert.equal((await doGet()).length, 2);
        await unary('GetFlightInfo', descriptor);
      }
      // The last calls' streams are destroyed once their writes called back.
      await assertNoneInFlight(inFlight, 10, 'stream');
    } finally {
      if (destroy) Object.defineProperty(proto, 'destroy', destroy);
      else delete (proto as { destroy?: unknown }).destroy;
    }
  });

  it("destroys a streaming call's Writable ended promptly only once its last write has called back", async () => {
    // grpc-js destroys a call's Writable when the call's Http2Stream closes; with the trailers in the last message's
    // write that can come before the write calls back, which on a destroyed Writable builds an ERR_STREAM_DESTROYED
    // (its stack trace captured) for nobody, once per call: a DoAction's one result did so nearly every time.
    const inFlight: number[] = [];
    const proto = Writable.prototype as Writable & { getPath?: unknown };
    const destroy = Object.getOwnPropertyDescriptor(proto, 'destroy')!;
    proto.destroy = function (this: Writable & { getPath?: unknown }, error?: Error) {
      // Server calls' Writables only (grpc-js's have getPath).
      if (!error && typeof this.getPath === 'function') inFlight.push(this.writableLength);
      return (destroy.value as (this: Writable, error?: Error) => Writable).call(this, error);
    };
    try {
      const action = {
        type: 'CreatePreparedStatement',
        body: packAny('ActionCreatePreparedStatementRequest', { query: 'SELECT 1 AS one' }),
      };
      for (let round = 0; round < 10; round++) {
        const call = client.DoAction(action, bearer());
        call.on('data', () => {});
        await once(call, 'end');
        assert.equal((await doGet()).length, 2);
      }
      await assertNoneInFlight(inFlight, 20, "call's Writable");
    } finally {
      Object.defineProperty(proto, 'destroy', destroy);
    }
  });

  it("sends a DoAction's result and trailers in one socket write (JDBC's CreatePreparedStatement)", async () => {
    const action = {
      type: 'CreatePreparedStatement',
      body: packAny('ActionCreatePreparedStatementRequest', { query: 'SELECT 1 AS one' }),
    };
    const doAction = async (): Promise<unknown[]> => {
      const call = client.DoAction(action, bearer());
      const results: unknown[] = [];
      call.on('data', (result: unknown) => results.push(result));
      await once(call, 'end');
      return results;
    };
    for (let i = 0; i < 3; i++) await doAction();
    for (let round = 0; round < 5; round++) {
      const from = proxy.chunks.length;
      assert.equal((await doAction()).length, 1);
      assertOneWrite(lastCall(from), `DoAction, round ${round}`);
    }
  });
});
