// A slow client must not make the server buffer the whole result: the stream pauses the
// producer (the backend's batch iterator) through gRPC/HTTP2 flow control.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { Field, Float64, RecordBatch, Schema, Struct, makeData } from 'apache-arrow';
import { FlightSqlServer, type FlightSqlBackend, type QueryResult } from '../../src/flight/index.js';
import { serviceDefinition } from '../../src/wire/index.js';

const schema = new Schema([new Field('v', new Float64(), false)]);
const rowsPerBatch = 32 * 1024; // 256 KiB of float64 per batch
const totalBatches = 400; // 100 MiB in all

function batch(seed: number): RecordBatch {
  const values = new Float64Array(rowsPerBatch).fill(seed);
  const column = makeData({ type: new Float64(), length: rowsPerBatch, nullCount: 0, data: values });
  return new RecordBatch(
    schema,
    makeData({ type: new Struct(schema.fields), length: rowsPerBatch, nullCount: 0, children: [column] }),
  );
}

/** A backend whose one query produces batches on demand and counts them. */
class CountingBackend implements Partial<FlightSqlBackend<string>> {
  produced = 0;
  finished = false;
  async authenticateBasic(): Promise<never> {
    throw new Error('unused');
  }
  async authenticateBearer(): Promise<string> {
    return 'tester';
  }
  async executeQuery(): Promise<QueryResult> {
    const batches = async function* (this: CountingBackend) {
      try {
        for (let i = 0; i < totalBatches; i++) {
          this.produced++;
          yield batch(i);
        }
      } finally {
        this.finished = true;
      }
    };
    return { schema, batches: batches.call(this) };
  }
}

describe('backpressure', () => {
  const backend = new CountingBackend();
  const server = new FlightSqlServer(backend as unknown as FlightSqlBackend<string>, { address: '127.0.0.1:0' });
  let client: grpc.Client & Record<string, (...args: unknown[]) => grpc.ClientReadableStream<unknown>>;
  before(async () => {
    const { port } = await server.start();
    const Client = grpc.makeGenericClientConstructor(serviceDefinition, 'FlightService');
    client = new Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure()) as never;
  });
  after(async () => {
    client.close();
    await server.close();
  });

  it('stops producing while the client does not read, and resumes when it does', async () => {
    const metadata = new grpc.Metadata();
    metadata.set('authorization', 'Bearer x');
    const call = client.DoGet({ ticket: new TextEncoder().encode('SELECT anything') }, metadata);
    let received = 0;
    const firstMessages = new Promise<void>((resolve) =>
      call.on('data', () => {
        received++;
        if (received === 3) {
          call.pause();
          resolve();
        }
      }),
    );
    await firstMessages;
    await new Promise((r) => setTimeout(r, 1000));
    const producedWhilePaused = backend.produced;
    assert.ok(
      producedWhilePaused < 80,
      `the server produced ${producedWhilePaused} of ${totalBatches} batches for a paused client`,
    );
    const ended = new Promise<void>((resolve, reject) => {
      call.on('end', resolve);
      call.on('error', reject);
    });
    call.resume();
    await ended;
    assert.equal(received, totalBatches + 1);
    assert.equal(backend.produced, totalBatches);
  });

  it('stops the producer when the client cancels', async () => {
    backend.produced = 0;
    backend.finished = false;
    const metadata = new grpc.Metadata();
    metadata.set('authorization', 'Bearer x');
    const call = client.DoGet(
      { ticket: new TextEncoder().encode('SELECT anything') },
      metadata,
    ) as grpc.ClientReadableStream<unknown>;
    await new Promise<void>((resolve) => call.once('data', () => resolve()));
    call.on('error', () => {});
    call.cancel();
    // The cancel reaches the backend when the machine gets to it: a loaded one may take seconds.
    const deadline = Date.now() + 30_000;
    while (Date.now() < deadline && !backend.finished) await new Promise((r) => setTimeout(r, 20));
    assert.equal(backend.finished, true);
    assert.ok(backend.produced < totalBatches);
  });
});
