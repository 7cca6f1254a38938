// Transport ceiling: a bare grpc-js Flight DoGet that streams the same pre-encoded FlightData
// (one ~1 MiB record batch of the benchmark's columns, made once by Orrery's own converter and
// encoder) until the requested row count is reached. No DuckDB and no conversion per request,
// so what a client measures against it is what grpc-js + HTTP/2 + the client cost on this machine.
//   node bench/flight-throughput/grpc-ceiling.mjs [orrery root]   prints "ceiling listening on 127.0.0.1:<port>"
// The root (default: this repository) is the tree whose dist/ provides the converter and encoder.
// The ticket is the row count as ASCII digits. Stop with SIGINT/SIGTERM.
import { once } from 'node:events';
import { pathToFileURL } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import { DuckDBInstance } from '@duckdb/node-api';
import { Field, Schema } from 'apache-arrow';

const root = process.argv[2] ? pathToFileURL(`${process.argv[2]}/`) : new URL('../../', import.meta.url);
const { ChunkConverter } = await import(new URL('dist/src/engine/chunk-converter.js', root));
const { arrowType } = await import(new URL('dist/src/engine/arrow-types.js', root));
const { encodeFlightData, recordBatchMessages, schemaHeader } = await import(new URL('dist/src/wire/index.js', root));

const batchBytes = 1024 * 1024; // DuckDBEngine's default batch target
const sql = `SELECT range AS i, range::DOUBLE * 0.5 AS d, (TIMESTAMP_NS '2024-01-01' + to_microseconds(range))::TIMESTAMP_NS AS ts, 'str' || (range % 1000) AS s FROM range(200000)`;

// One batch the size the server makes, from the real converter.
const instance = await DuckDBInstance.create(':memory:', { threads: '1' });
const connection = await instance.connect();
const result = await (await connection.prepare(sql)).stream();
const types = Array.from({ length: result.columnCount }, (_, i) => result.columnType(i));
const schema = new Schema(types.map((t, i) => new Field(result.columnName(i), arrowType(t), true)));
const converter = new ChunkConverter(schema, types, batchBytes);
let batch = null;
while (!batch) {
  const chunk = await result.fetchChunk();
  if (!chunk || chunk.rowCount === 0) break;
  batch = converter.add(chunk.chunk, chunk.rowCount);
}
batch ??= converter.flush();
connection.closeSync();
instance.closeSync();

const schemaMessage = encodeFlightData({ header: schemaHeader(schema), body: [], bodyLength: 0 });
const encode = (b) => recordBatchMessages(b, new Map()).map(encodeFlightData);
const full = encode(batch);

function ticketRows(bytes) {
  // Ticket { bytes ticket = 1; }: tag 0x0a, varint length, payload.
  let offset = 1;
  let length = 0;
  for (let shift = 0; ; shift += 7) {
    const byte = bytes[offset++];
    length |= (byte & 0x7f) << shift;
    if (byte < 0x80) break;
  }
  return Number(Buffer.from(bytes.subarray(offset, offset + length)).toString('ascii')) || 10_000_000;
}

async function write(call, message) {
  if (call.cancelled || call.destroyed) return false;
  if (call.write(message)) return true;
  await Promise.race([once(call, 'drain'), once(call, 'close'), once(call, 'cancelled')]);
  return !call.cancelled && !call.destroyed;
}

const identity = (value) => value;
const server = new grpc.Server({ 'grpc.max_send_message_length': -1 });
server.addService(
  {
    DoGet: {
      path: '/arrow.flight.protocol.FlightService/DoGet',
      requestStream: false,
      responseStream: true,
      requestSerialize: identity,
      requestDeserialize: identity,
      responseSerialize: identity,
      responseDeserialize: identity,
    },
  },
  {
    DoGet: async (call) => {
      let remaining = ticketRows(call.request);
      if (!(await write(call, schemaMessage))) return;
      while (remaining > 0) {
        const messages = remaining >= batch.numRows ? full : encode(batch.slice(0, remaining));
        remaining -= Math.min(remaining, batch.numRows);
        for (const message of messages) if (!(await write(call, message))) return;
      }
      call.end();
    },
  },
);
const port = await new Promise((resolve, reject) =>
  server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (error, bound) =>
    error ? reject(error) : resolve(bound),
  ),
);
console.log(
  `ceiling listening on 127.0.0.1:${port} (batch of ${batch.numRows} rows, ${full.reduce((s, m) => s + m.byteLength, 0)} bytes of FlightData)`,
);
const stop = () => server.tryShutdown(() => process.exit(0));
process.once('SIGINT', stop);
process.once('SIGTERM', stop);
