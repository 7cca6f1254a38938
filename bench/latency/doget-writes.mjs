// Socket writes per DoGet (issue 10): a Flight SQL server (this tree's dist/, a backend answering one row
// like `SELECT 1 AS one`, no DuckDB) in a child process, DoGets from a grpc-js client in this one, and
// `strace -c` of the server's write system calls over N of them. Before ca6f141 a one-batch DoGet took
// three writes (headers and schema, batch, trailers), after it two, after e2cb09e1 one
// (the trailers in the batch's write). With --engine the backend runs the ticket through Orrery's DuckDB engine
// (its native exporter, as the server runs a statement): 2 writes before the exporter told a result's end with its
// first batch (the end was a second trip to libuv's pool, after the batch's write), 1 after it.
//
//   node bench/latency/doget-writes.mjs [N=1000] [--engine]     (needs `npm run build` and strace)
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { Field, Int32, RecordBatch, Schema, Struct, makeData } from 'apache-arrow';

const root = new URL('../..', import.meta.url).pathname;
const args = process.argv.slice(2);
const engineBacked = args.includes('--engine');
if (args[0] === 'server') {
  const { FlightSqlServer } = await import(join(root, 'dist/src/flight/index.js'));
  const { DuckDBEngine } = await import(join(root, 'dist/src/engine/index.js'));
  const engine = engineBacked ? await DuckDBEngine.create({ threads: 2 }) : undefined;
  const schema = new Schema([new Field('one', new Int32(), false)]);
  const column = () => makeData({ type: new Int32(), length: 1, nullCount: 0, data: Int32Array.of(1) });
  const batch = () =>
    new RecordBatch(
      schema,
      makeData({ type: new Struct(schema.fields), length: 1, nullCount: 0, children: [column()] }),
    );
  const backend = {
    authenticateBearer: async () => 'bench',
    executeQuery: async (_ctx, { query }) =>
      engine
        ? engine.query(query)
        : {
            schema,
            batches: (async function* () {
              yield batch();
            })(),
          },
  };
  const { port } = await new FlightSqlServer(backend, { address: '127.0.0.1:0' }).start();
  console.log(port);
} else {
  const n = Number(args.find((a) => !a.startsWith('--')) ?? 1000);
  const { serviceDefinition } = await import(join(root, 'dist/src/wire/index.js'));
  const server = spawn(
    process.execPath,
    [new URL(import.meta.url).pathname, 'server', ...(engineBacked ? ['--engine'] : [])],
    {
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  const [line] = await once(server.stdout, 'data');
  const Client = grpc.makeGenericClientConstructor(serviceDefinition, 'FlightService');
  const client = new Client(`127.0.0.1:${String(line).trim()}`, grpc.credentials.createInsecure());
  const metadata = new grpc.Metadata();
  metadata.set('authorization', 'Bearer x');
  const doGet = () =>
    new Promise((resolve, reject) => {
      const call = client.DoGet({ ticket: Buffer.from('SELECT 1 AS one') }, metadata);
      call.on('data', () => {});
      call.on('end', resolve);
      call.on('error', reject);
    });
  for (let i = 0; i < 200; i++) await doGet();
  const out = join(tmpdir(), `orrery-doget-writes-${process.pid}.txt`);
  // Every write system call, each with what its descriptor is (-yy): the TCP socket's are counted, not the
  // eventfd writes with which libuv's pool and N-API's thread-safe functions wake the event loop.
  const strace = spawn(
    'strace',
    ['-f', '-yy', '-e', 'trace=write,writev,sendmsg,sendto', '-p', String(server.pid), '-o', out],
    { stdio: 'ignore' },
  );
  await new Promise((resolve) => setTimeout(resolve, 1000));
  for (let i = 0; i < n; i++) await doGet();
  strace.kill('SIGINT');
  await once(strace, 'exit');
  client.close();
  server.kill();
  const counts = new Map();
  for (const line of readFileSync(out, 'utf8').split('\n')) {
    const call = /(write|writev|sendmsg|sendto)\(\d+<TCP:/.exec(line)?.[1];
    if (call) counts.set(call, (counts.get(call) ?? 0) + 1);
  }
  rmSync(out, { force: true });
  let total = 0;
  for (const [call, count] of counts) {
    total += count;
    console.log(`${call}: ${(count / n).toFixed(2)} per DoGet`);
  }
  const backend = engineBacked ? "DuckDB's SELECT 1 AS one" : 'one row, no DuckDB';
  console.log(`socket writes per DoGet of one row (${backend}): ${(total / n).toFixed(2)} (${n} DoGets)`);
}
