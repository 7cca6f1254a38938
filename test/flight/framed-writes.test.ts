// A DoGet's messages reach HTTP/2 as the server framed them (#10 item 3): grpc-js alone copied every
// message into a new buffer behind its 5-byte prefix, a second copy of every byte of a large result.
// Seen from the Http2Stream's writes (recorded, then passed on) of a real server answering Orrery's
// client over a socket, with batches from DuckDB's native exporter, which leave room for the framing.
import assert from 'node:assert/strict';
import http2 from 'node:http2';
import { after, before, describe, it } from 'node:test';
import type { RecordBatch } from 'apache-arrow';
import { DuckDBEngine } from '../../src/engine/index.js';
import { FlightSqlServer, type FlightSqlBackend, type QueryResult } from '../../src/flight/index.js';
import { TestFlightClient } from '../support/flight-client.js';

/** Every chunk written to a server-side HTTP/2 stream, recorded before it is written. */
const written: Buffer[] = [];
const createServer = http2.createServer;
http2.createServer = function (this: unknown, ...args: Parameters<typeof createServer>) {
  const server = createServer.apply(this, args);
  server.prependListener('stream', (stream: http2.ServerHttp2Stream) => {
    const write = stream.write.bind(stream) as (...a: unknown[]) => boolean;
    stream.write = ((chunk: unknown, ...rest: unknown[]) => {
      if (Buffer.isBuffer(chunk)) written.push(chunk);
      return write(chunk, ...rest);
    }) as typeof stream.write;
  });
  return server;
} as typeof createServer;

describe('DoGet messages framed by the server', () => {
  let engine: DuckDBEngine;
  let batches: RecordBatch[];
  let server: FlightSqlServer<string>;
  let client: TestFlightClient;

  before(async () => {
    engine = await DuckDBEngine.create({ threads: 1 });
    const result = await engine.query(
      "SELECT range AS i, CASE WHEN range % 3 = 0 THEN NULL ELSE 'v' || range END AS s FROM range(300000)",
    );
    batches = [];
    for await (const batch of result.batches) batches.push(batch);
    // Every query answers the batches DuckDB made above, as they are.
    const answer = async (): Promise<QueryResult> => ({
      schema: result.schema,
      batches: (async function* () {
        yield* batches;
      })(),
    });
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

  it('hands each batch to HTTP/2 in the batch’s own memory, behind a gRPC prefix written in its room', async () => {
    assert.ok(batches.length > 1, 'several batches');
    const { table } = await client.doGet(new TextEncoder().encode('q'));
    assert.equal(table.numRows, 300000);
    assert.equal(table.getChild('i')!.get(299999), 299999n);
    assert.equal(table.getChild('s')!.get(3), null);
    assert.equal(table.getChild('s')!.get(4), 'v4');

    const memory = new Set(batches.map((batch) => batch.data.children[0].values.buffer));
    const batchWrites = written.filter((chunk) => memory.has(chunk.buffer));
    assert.equal(batchWrites.length, batches.length, 'every batch written from its own memory, not from a copy');
    for (const chunk of batchWrites) {
      assert.equal(chunk[0], 0, 'uncompressed');
      assert.equal(chunk.readUInt32BE(1), chunk.length - 5, "gRPC's length prefix");
    }
  });
});
