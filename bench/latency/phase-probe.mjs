// Where a statement's server time goes, phase by phase (issue 10): preloaded into `orrery serve`
// (`node --import <this file> dist/src/orrery.cjs serve`; phases.sh does it), it wraps the methods
// each phase runs in (the classes' prototypes, so nothing in src/ changes) and records, per RPC, when
// Node's HTTP/2 session saw the stream, when grpc-js handed it to the handler, how long each phase
// took, when the handler gave grpc-js its answer and when the stream closed. Times are
// process.hrtime (CLOCK_MONOTONIC, as Python's time.monotonic_ns), so the client's own timestamps
// line up with them. SIGUSR1 forgets what was recorded (after the warm-up), SIGUSR2 writes it as
// JSON to $PHASES_OUT. Bench only: the wrapping costs a few microseconds per phase.
import http2 from 'node:http2';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { createRequire } from 'node:module';

const root = process.env.PHASES_ROOT ?? join(import.meta.dirname, '..', '..');
const load = (path) => import(pathToFileURL(join(root, 'dist', 'src', path)).href);
const { FlightSqlServer } = await load('flight/flight-sql-server.js');
const { SqlService } = await load('sql/sql-service.js');
const { DuckDBEngine } = await load('engine/duckdb-engine.js');
const { StatementLimits } = await load('sql/statement-limits.js');
const { QueryLanes } = await load('sql/query-lanes.js');
const { Rollups } = await load('rollups/rollups.js');
const { SeriesTables } = await load('tables/series-tables.js');
const { ConnectionPool } = await load('engine/connection-pool.js');
const { DuckDBConnection } = await import('@duckdb/node-api');

const now = () => Number(process.hrtime.bigint());
/** RPCs seen since the last reset: { path, stream, handler, answered, closed, phases: [[name, start, end]] }. */
let rpcs = [];
/** The RPC whose handler runs now (one client, one statement at a time: the phases belong to it). */
let current;

// Streams as Node's HTTP/2 server sees them: grpc-js creates its server through http2.createServer.
const createServer = http2.createServer;
http2.createServer = function (...args) {
  const server = createServer.apply(this, args);
  server.prependListener('stream', (stream, headers) => {
    const rpc = { path: String(headers[':path']).split('/').pop(), stream: now(), phases: [] };
    rpcs.push(rpc);
    current = rpc;
    stream.once('close', () => (rpc.closed = now()));
  });
  return server;
};

/** Records the time `name` of an async method takes, inclusive, in the RPC it runs for. */
function timed(proto, method, name) {
  const original = proto[method];
  if (typeof original !== 'function') throw new Error(`phase-probe: no method ${method} to time (${name})`);
  proto[method] = function (...args) {
    const rpc = current;
    const start = now();
    const result = original.apply(this, args);
    const done = () => rpc?.phases.push([name, start, now()]);
    if (result && typeof result.then === 'function') result.then(done, done);
    else done();
    return result;
  };
}

/** Records how long an async generator method takes to its first item and to its end. */
function timedGenerator(proto, method, name) {
  const original = proto[method];
  proto[method] = async function* (...args) {
    const rpc = current;
    const start = now();
    let first = true;
    try {
      for await (const item of original.apply(this, args)) {
        if (first && rpc) {
          rpc.firstBatch = now();
          rpc.phases.push([`${name}: first batch`, start, rpc.firstBatch]);
        }
        first = false;
        yield item;
      }
    } finally {
      rpc?.phases.push([`${name}: to the end`, start, now()]);
    }
  };
}

const server = FlightSqlServer.prototype;
const phases = {
  'auth + call context': [server, 'context'],
  'GetFlightInfo handler': [server, 'flightInfo'],
  'DoGet stream (first batch, writes, end)': [server, 'stream'],
  'planQuery (limits, plan, keep)': [SqlService.prototype, 'planQuery'],
  plan: [SqlService.prototype, 'plan'],
  'deny rules': [SqlService.prototype, 'checkDenied'],
  'reader checks (audience)': [SqlService.prototype, 'checkReadable'],
  'view-set setup': [SqlService.prototype, 'lakehouseSetup'],
  'executeQuery (to the result)': [SqlService.prototype, 'executeQuery'],
  'parse (json_serialize_sql, cached)': [DuckDBEngine.prototype, 'parseSelect'],
  'DuckDB prepare + describe (held)': [DuckDBEngine.prototype, 'describeAndHold'],
  'DuckDB prepare + describe': [DuckDBEngine.prototype, 'describe'],
  'connection lease': [DuckDBEngine.prototype, 'lease'],
  deparse: [DuckDBEngine.prototype, 'deparse'],
  "DuckDB's prepare (@duckdb/node-api)": [DuckDBConnection.prototype, 'prepare'],
  "DuckDB's run (@duckdb/node-api)": [DuckDBConnection.prototype, 'run'],
  'limits: admission': [StatementLimits.prototype, 'begin'],
  'lake read point (snapshot id, rollup catalog version)': [Rollups.prototype, 'readPoint'],
  'rollup rewrite': [Rollups.prototype, 'rewrite'],
  'series tables at a snapshot': [SeriesTables.prototype, 'listAt'],
  'pool acquire (setup run on a new connection)': [ConnectionPool.prototype, 'acquire'],
  "DuckDB's runAndReadAll (@duckdb/node-api)": [DuckDBConnection.prototype, 'runAndReadAll'],
  'rollups: may read rollups': [SqlService.prototype, 'mayReadRollups'],
  'rollups: read setup (temporary views)': [Rollups.prototype, 'readSetup'],
  "rollups: a rollup's state": [Rollups.prototype, 'state'],
  'rollups: pending buckets': [Rollups.prototype, 'pending'],
  "rollups: files' listing (kept per snapshot)": [Rollups.prototype, 'filesOf'],
  'rollups: catalog': [Rollups.prototype, 'catalog'],
};
for (const [name, [proto, method]] of Object.entries(phases)) timed(proto, method, name);
timedGenerator(QueryLanes.prototype, 'batches', 'DuckDB run + Arrow export');

// Each of the native exporter's `next` calls (native/arrow-export.cc), apart by what it settled with: a batch,
// or the end. Its methods cannot be wrapped (N-API defines them read-only), so its constructor is: the module
// is the one object native-export.ts loaded, which reads `Exporter` from it at each statement.
const addon = createRequire(import.meta.url)(join(root, 'dist', 'native', 'arrow_export.node'));
const Exporter = addon.Exporter;
addon.Exporter = function (...args) {
  const exporter = new Exporter(...args);
  return {
    next() {
      const rpc = current;
      const start = now();
      return exporter.next().then((batch) => {
        rpc?.phases.push([batch ? 'exporter next: a batch' : 'exporter next: the end', start, now()]);
        return batch;
      });
    },
    stop: () => exporter.stop(),
    close: () => exporter.close(),
  };
};

// The answer of a unary call: grpc-js's callback; of a stream: call.end(). Both found from the handler
// map FlightSqlServer builds, by wrapping what it registers.
const handlers = server.handlers;
server.handlers = function () {
  const map = handlers.call(this);
  for (const [name, handler] of Object.entries(map)) {
    map[name] = (call, callback) => {
      const rpc = current;
      if (rpc) rpc.handler = now();
      if (callback) {
        // The server answers a unary call through grpc-js's inner call (src/flight/prompt-end), or its callback.
        const inner = call.call;
        const sendMessage = inner?.sendMessage;
        if (rpc && sendMessage)
          inner.sendMessage = function (...args) {
            rpc.answered ??= now();
            return sendMessage.apply(this, args);
          };
        return handler(call, (...args) => {
          if (rpc) rpc.answered ??= now();
          return callback(...args);
        });
      }
      const end = call.end;
      call.end = function (...args) {
        if (rpc) rpc.answered = now();
        if (rpc?.firstBatch)
          rpc.phases.push(['first batch out of the engine -> call.end()', rpc.firstBatch, rpc.answered]);
        return end.apply(this, args);
      };
      return handler(call);
    };
  }
  return map;
};

process.on('SIGUSR1', () => (rpcs = []));
process.on('SIGUSR2', () => {
  writeFileSync(process.env.PHASES_OUT, JSON.stringify(rpcs));
  rpcs = [];
});
