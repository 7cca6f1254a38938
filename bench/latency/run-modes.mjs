// A view set's statement in DuckDB alone (issue 10), run as the in-process reference runs it and as the server
// does: over the temporary view the server made for the key (from a duckdb-calls.mjs file, as view-cost.py
// reads it), alternately, one DuckDB instance of 2 threads (THREADS): its text each time with the result read whole
// (what DuckDB's Python package does for bench.py's in-process side), the kept prepared statement read whole,
// streamed through @duckdb/node-api, and streamed by the server's native Arrow exporter. Tells whether the way
// the server runs a statement, rather than the statement, costs time (bench/latency/PROFILE.md, thirteenth pass).
//
//   NODE_OPTIONS="--import $PWD/bench/latency/duckdb-calls.mjs" DUCKDB_CALLS_OUT=/tmp/calls KEEP_DATA=1 \
//     ONLY=measures_p95_hour OTHER_CLIENTS="" bash bench/latency/run.sh
//   node bench/latency/run-modes.mjs /tmp/calls.<pid>.tsv measures "SELECT ... FROM measures ..." [repeats]
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { DuckDBInstance } from '@duckdb/node-api';
import { Field, Schema } from 'apache-arrow';

const [calls, viewName, sql, repeats = '300'] = process.argv.slice(2);
if (!sql) throw new Error('usage: run-modes.mjs <duckdb-calls file> <view> <sql> [repeats]');
const load = (path) => import(pathToFileURL(join(import.meta.dirname, '..', '..', 'dist', 'src', path)).href);
const { nativeStatementBatches } = await load('engine/native-export.js');
const { arrowType } = await load('engine/arrow-types.js');

let view;
for (const line of readFileSync(calls, 'utf8').split('\n')) {
  const text = line.split('\t')[2];
  if (text?.startsWith(`CREATE OR REPLACE TEMP VIEW "${viewName}" AS `)) view = text;
}
if (!view) throw new Error(`no temporary view ${viewName} in ${calls}`);
const instance = await DuckDBInstance.create(':memory:', { threads: process.env.THREADS ?? '2' });
const connection = await instance.connect();
await connection.run(view.replace('CREATE OR REPLACE TEMP VIEW', 'CREATE VIEW'));
const prepared = await connection.prepare(sql);
const types = Array.from({ length: prepared.columnCount }, (_, i) => prepared.columnType(i));
const schema = new Schema(types.map((type, i) => new Field(prepared.columnName(i), arrowType(type), true)));

const modes = {
  'text each time, read whole (as Python)': async () => (await connection.runAndReadAll(sql)).getRows().length,
  'kept prepared, read whole': async () => (await prepared.runAndReadAll()).getRows().length,
  'kept prepared, streamed (node-api)': async () => {
    const result = await prepared.stream();
    let rows = 0;
    for (let chunk = await result.fetchChunk(); chunk && chunk.rowCount > 0; chunk = await result.fetchChunk())
      rows += chunk.rowCount;
    return rows;
  },
  'kept prepared, native exporter (server)': async () => {
    const source = nativeStatementBatches(prepared, schema, types, 2 << 20);
    let rows = 0;
    for (let batch = await source.next(); batch; batch = await source.next()) rows += batch.numRows;
    source.close();
    return rows;
  },
};
const answers = new Set();
for (const run of Object.values(modes)) answers.add(await run());
const times = Object.fromEntries(Object.keys(modes).map((name) => [name, []]));
const loadAtStart = readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
for (let i = 0; i < Number(repeats) + 30; i++)
  for (const [name, run] of Object.entries(modes)) {
    const start = performance.now();
    await run();
    if (i >= 30) times[name].push(performance.now() - start);
  }
const median = (values) => values.sort((a, b) => a - b)[values.length >> 1];
for (const [name, values] of Object.entries(times))
  console.log(`${name.padEnd(42)} p50 ${median(values).toFixed(3)} ms`);
console.log(
  `rows: ${[...answers].join(', ')} (one figure: every mode the same count); load ${loadAtStart} -> ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')}`,
);
