// A DoGet's messages reach HTTP/2 as the server framed them (#10 item 3): grpc-js alone copied every
// message into a new buffer behind its 5-byte prefix, and a message built in one buffer had its body
// copied into it first. Seen from the Http2Stream's writes (recorded, then passed on) of a real server
// answering Orrery's client over a socket, with batches from DuckDB's native exporter and batches built
// in JavaScript: each message is written as its framing, then its body's buffers as they lie.
import assert from 'node:assert/strict';
import http2 from 'node:http2';
import { after, before, describe, it } from 'node:test';
import { tableFromArrays, type RecordBatch, type Table } from 'apache-arrow';
import { DuckDBEngine } from '../../src/engine/index.js';
import { FlightSqlServer, type FlightSqlBackend, type QueryResult } from '../../src/flight/index.js';
import { TestFlightClient } from '../support/flight-client.js';

/** Every chunk written to a server-side HTTP/2 stream, recorded before it is written. */
const written: Uint8Array[] = [];
const createServer = http2.createServer;
http2.createServer = function (this: unknown, ...args: Parameters<typeof createServer>) {
  const server = createServer.apply(this, args);
  server.prependListener('stream', (stream: http2.ServerHttp2Stream) => {
    const write = stream.write.bind(stream) as (...a: unknown[]) => boolean;
    stream.write = ((chunk: unknown, ...rest: unknown[]) => {
      if (chunk instanceof Uint8Array) written.push(chunk);
      return write(chunk, ...rest);
    }) as typeof stream.write;
  });
  return server;
} as typeof createServer;

/** The memory views (buffer, offset, length) of every value, offset and bitmap buffer of a batch's columns. */
function columnBuffers(batch: RecordBatch): Uint8Array[] {
  return batch.data.children.flatMap((column) =>
    [column.nullBitmap, column.valueOffsets, column.values]
      .filter((b): b is NonNullable<typeof b> => b !== undefined && b !== null && b.byteLength > 0)
      .map((b) => new Uint8Array(b.buffer, b.byteOffset, b.byteLength)),
  );
}

/** Whether `view` was written to HTTP/2 as it lies (the same memory), not a copy of it. */
const writtenInPlace = (view: Uint8Array): boolean =>
  written.some(
    (chunk) =>
      chunk.buffer === view.buffer && chunk.byteOffset === view.byteOffset && chunk.byteLength === view.byteLength,
  );

/**
 * The FlightData messages in the order written: each gRPC message's prefix, read from the concatenated
 * writes, holds as many bytes as the protobuf fields and the body's parts written after it.
 */
function grpcMessageLengths(): number[] {
  const bytes = Buffer.concat(written);
  const lengths: number[] = [];
  for (let at = 0; at < bytes.length;) {
    assert.equal(bytes[at], 0, 'uncompressed');
    const length = bytes.readUInt32BE(at + 1);
    lengths.push(length);
    at += 5 + length;
    assert.ok(at <= bytes.length, 'a message runs past the bytes written');
  }
  return lengths;
}

describe('DoGet messages framed by the server', () => {
  let engine: DuckDBEngine;
  let batches: RecordBatch[];
  let javascript: Table;
  let server: FlightSqlServer<string>;
  let client: TestFlightClient;

  before(async () => {
    engine = await DuckDBEngine.create({ threads: 1 });
    const result = await engine.query(
      "SELECT range AS i, CASE WHEN range % 3 = 0 THEN NULL ELSE 'v' || range END AS s FROM range(300000)",
    );
    batches = [];
    for await (const batch of result.batches) batches.push(batch);
    javascript = tableFromArrays({ x: Float64Array.from({ length: 100000 }, (_, i) => i / 2) });
    // Ticket 'q' answers the batches DuckDB made above, 'js' a table built in JavaScript, as they are.
    const answer = async (_: unknown, { query }: { query: string }): Promise<QueryResult> => {
      const sent = query === 'js' ? javascript : { schema: result.schema, batches };
      return {
        schema: sent.schema,
        batches: (async function* () {
          yield* sent.batches;
        })(),
      };
    };
    const backend = { authenticateBearer: async () => 'tester', executeQuery: answer };
    server = new FlightSqlServer(backend as unknown as FlightSqlBackend<string>, { address: '127.0.0.1:0' });
    const { port } = await server.start();
    client = new TestFlightClient(`127.0.0.1:${port}`);
    client.headers.authorization = 'Bearer x';
  });
  after(async () => {
    client.close();
    await server.close();
    await engine.close();
    http2.createServer = createServer;
  });

  it('hands each native batch to HTTP/2 as its framing, then its columns’ buffers as they lie', async () => {
    assert.ok(batches.length > 1, 'several batches');
    written.length = 0;
    const { table } = await client.doGet(new TextEncoder().encode('q'));
    assert.equal(table.numRows, 300000);
    assert.equal(table.getChild('i')!.get(299999), 299999n);
    assert.equal(table.getChild('s')!.get(3), null);
    assert.equal(table.getChild('s')!.get(4), 'v4');

    for (const batch of batches) {
      for (const buffer of columnBuffers(batch))
        assert.ok(writtenInPlace(buffer), 'a column buffer written from a copy');
    }
    assert.equal(grpcMessageLengths().length, 1 + batches.length, 'the schema, then one message per batch');
  });

  it('hands a batch built in JavaScript to HTTP/2 without copying its body either', async () => {
    written.length = 0;
    const { table } = await client.doGet(new TextEncoder().encode('js'));
    assert.equal(table.numRows, 100000);
    assert.equal(table.getChild('x')!.get(99999), 99999 / 2);
    for (const batch of javascript.batches) {
      for (const buffer of columnBuffers(batch))
        assert.ok(writtenInPlace(buffer), 'a column buffer written from a copy');
    }
    assert.equal(grpcMessageLengths().length, 1 + javascript.batches.length);
  });
});
