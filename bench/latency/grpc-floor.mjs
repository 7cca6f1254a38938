// The floor under a Flight SQL statement on grpc-js: a server that answers GetFlightInfo with a
// FlightInfo encoded once and DoGet with a schema and a one-row batch encoded once (SELECT 1 AS one's
// answer), nothing read from the request, no auth, no planning, no DuckDB. What it costs per
// statement is what two grpc-js calls on Node's HTTP/2 cost the server at least. With "engine", the
// same two calls also go through Orrery's DuckDB engine as the server's do (GetFlightInfo prepares
// and holds the statement, DoGet runs it through the native exporter and frames its batches), still
// with no auth, planning, limits or lanes. Run by interleave.sh (refs "grpc-floor", "engine-floor");
// prints "Flight SQL listening on 127.0.0.1:<port>".
//
//   node bench/latency/grpc-floor.mjs [dist root, default the repository's] [grpc | engine] [DuckDB threads, default 2]
import * as grpc from '@grpc/grpc-js';
import { tableFromArrays } from 'apache-arrow';
import { pathToFileURL } from 'node:url';
import { join } from 'node:path';

const root = process.argv[2] ?? join(import.meta.dirname, '..', '..');
const wire = await import(pathToFileURL(join(root, 'dist', 'src', 'wire', 'index.js')).href);
const table = tableFromArrays({ one: Int32Array.of(1) });
const [batch] = table.batches;
const ticket = Buffer.from('SELECT 1 AS one');
const info = wire.encode(wire.Flight.FlightInfo, {
  schema: wire.encapsulateSchema(table.schema),
  // A CMD descriptor (pyarrow refuses a FlightInfo without one); Orrery's server echoes the request's.
  flightDescriptor: { type: 2, cmd: ticket },
  endpoint: [{ ticket: { ticket } }],
  totalRecords: -1,
  totalBytes: -1,
});
const schemaMessage = wire.encodeFlightData({ header: wire.schemaHeader(table.schema), body: [], bodyLength: 0 });
const batchMessages = wire.recordBatchMessages(batch, new Map()).map((m) => wire.encodeFlightData(m));
const server = new grpc.Server({ 'grpc.enable_channelz': 0 });
const unimplemented = (call, callback) =>
  callback ? callback({ code: grpc.status.UNIMPLEMENTED }) : call.emit('error', { code: grpc.status.UNIMPLEMENTED });
const handlers = Object.fromEntries(Object.keys(wire.serviceDefinition).map((name) => [name, unimplemented]));
handlers.GetFlightInfo = (_call, callback) => callback(null, Buffer.from(info));
handlers.DoGet = (call) => {
  call.write(schemaMessage);
  for (const message of batchMessages) call.write(message);
  call.end();
};
if (process.argv[3] === 'engine') {
  const { DuckDBEngine } = await import(pathToFileURL(join(root, 'dist', 'src', 'engine', 'index.js')).href);
  const engine = await DuckDBEngine.create({ threads: Number(process.argv[4] ?? 2) });
  const sql = 'SELECT 1 AS one';
  // The one statement in flight per client, as the server's plan cache keeps it for the DoGet.
  let kept;
  handlers.GetFlightInfo = (_call, callback) => {
    engine.describeAndHold(sql).then((described) => {
      kept = described;
      callback(null, Buffer.from(info));
    }, callback);
  };
  handlers.DoGet = async (call) => {
    const { description, held } = kept;
    const result = await engine.query(sql, { held }, description);
    call.write(wire.encodeFlightData({ header: wire.schemaHeader(result.schema), body: [], bodyLength: 0 }));
    const dictionaries = new Map();
    for await (const b of result.batches)
      for (const message of wire.recordBatchMessages(b, dictionaries)) call.write(wire.encodeFlightData(message));
    call.end();
  };
}
server.addService(wire.serviceDefinition, handlers);
server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (error, port) => {
  if (error) throw error;
  console.log(`Flight SQL listening on 127.0.0.1:${port}`);
});
process.on('SIGINT', () => server.tryShutdown(() => process.exit(0)));
