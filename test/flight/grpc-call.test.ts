// grpc-js's own call under each kind of server call (src/flight/grpc-call.ts), on the installed grpc-js: prompt-end,
// coalesced-writes, framed-writes and upload-fate each fall back to grpc-js's ways, silently, when it is not there, so
// a grpc-js that moved it fails here instead (update grpc-call.ts then).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { baseCallOf, type BaseCall } from '../../src/flight/grpc-call.js';

const bytes = {
  serialize: (value: Buffer) => value,
  deserialize: (value: Buffer) => value,
};
const method = (path: string, requestStream: boolean, responseStream: boolean) => ({
  path: `/orrery.test.Calls/${path}`,
  requestStream,
  responseStream,
  requestSerialize: bytes.serialize,
  requestDeserialize: bytes.deserialize,
  responseSerialize: bytes.serialize,
  responseDeserialize: bytes.deserialize,
});
const service = {
  Unary: method('Unary', false, false),
  ServerStream: method('ServerStream', false, true),
  Bidi: method('Bidi', true, true),
};

describe("grpc-js's own call, as grpc-call.ts reaches it", () => {
  const found = new Map<string, BaseCall | undefined>();
  const server = new grpc.Server();
  let client: grpc.Client & Record<string, (...args: unknown[]) => unknown>;

  before(async () => {
    server.addService(service, {
      Unary: (call: grpc.ServerUnaryCall<Buffer, Buffer>, callback: grpc.sendUnaryData<Buffer>) => {
        found.set('unary', baseCallOf(call));
        callback(null, Buffer.from('ok'));
      },
      ServerStream: (call: grpc.ServerWritableStream<Buffer, Buffer>) => {
        found.set('server stream', baseCallOf(call));
        call.end();
      },
      Bidi: (call: grpc.ServerDuplexStream<Buffer, Buffer>) => {
        found.set('bidi', baseCallOf(call));
        call.on('data', () => {});
        call.on('end', () => call.end());
      },
    });
    const port = await new Promise<number>((resolve, reject) =>
      server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (error, bound) =>
        error ? reject(error) : resolve(bound),
      ),
    );
    const Client = grpc.makeGenericClientConstructor(service, 'Calls');
    client = new Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure()) as typeof client;
  });

  after(() => {
    client.close();
    server.forceShutdown();
  });

  it('is there for a unary, a server-streaming and a bidirectional call, with its Http2Stream', async () => {
    await new Promise<void>((resolve, reject) =>
      client.Unary(Buffer.from('x'), (error: Error | null) => (error ? reject(error) : resolve())),
    );
    await new Promise<void>((resolve, reject) => {
      const call = client.ServerStream(Buffer.from('x')) as grpc.ClientReadableStream<Buffer>;
      call.on('data', () => {});
      call.on('error', reject);
      call.on('end', resolve);
    });
    await new Promise<void>((resolve, reject) => {
      const call = client.Bidi() as grpc.ClientDuplexStream<Buffer, Buffer>;
      call.on('data', () => {});
      call.on('error', reject);
      call.on('end', resolve);
      call.write(Buffer.from('x'));
      call.end();
    });
    for (const kind of ['unary', 'server stream', 'bidi']) {
      const inner = found.get(kind);
      assert.ok(inner, `no grpc-js call found under a ${kind} call`);
      assert.equal(inner.stream.constructor.name, 'ServerHttp2Stream', kind);
    }
  });
});
