// Where the server's time goes, stage by stage, without gRPC: the same queries as bench.py run
// through @duckdb/node-api in this process, then
//   fetch     only fetching DuckDB chunks (result.fetchChunk loop, next chunk requested ahead)
//   convert   + ChunkConverter to Arrow record batches (dist/src/engine/chunk-converter.js)
//   encode    + IPC messages and FlightData bytes (dist/src/wire/)
//   native    the native exporter instead (fetch and convert on a worker: dist/src/engine/native-export.js)
//   native encode  + IPC messages and FlightData bytes, framed in place
// Uses Orrery's compiled internals (dist/ of this repository, or of ORRERY_ROOT when set), so it
// follows whatever src/ currently does; build first (node scripts/ensure-built.mjs).
//   node bench/flight-throughput/stages.mjs [rows=10000000] [repeats=3] [threads=2]
import { pathToFileURL } from 'node:url';
import { DuckDBInstance } from '@duckdb/node-api';
import { Field, Schema } from 'apache-arrow';

const root = process.env.ORRERY_ROOT
  ? pathToFileURL(`${process.env.ORRERY_ROOT}/`)
  : new URL('../../', import.meta.url);
const { ChunkConverter } = await import(new URL('dist/src/engine/chunk-converter.js', root));
const { arrowType } = await import(new URL('dist/src/engine/arrow-types.js', root));
const arrowSchema = (names, types) => new Schema(names.map((name, i) => new Field(name, arrowType(types[i]), true)));
const { encodeFlightData, recordBatchMessages } = await import(new URL('dist/src/wire/index.js', root));
const { nativeBatches, nativeExportProblem } = await import(new URL('dist/src/engine/native-export.js', root));

const rows = Number(process.argv[2] ?? 10_000_000);
const repeats = Number(process.argv[3] ?? 3);
const threads = Number(process.argv[4] ?? 2);
const batchBytes = 2 * 1024 * 1024; // DuckDBEngine's default
const computed = `SELECT range AS i, range::DOUBLE * 0.5 AS d, (TIMESTAMP_NS '2024-01-01' + to_microseconds(range))::TIMESTAMP_NS AS ts, 'str' || (range % 1000) AS s FROM range(${rows})`;

const instance = await DuckDBInstance.create(':memory:', { threads: String(threads) });
const setup = await instance.connect();
await setup.run(`CREATE TABLE bench AS ${computed}`);
setup.closeSync();

async function once(sql, stage) {
  const connection = await instance.connect();
  const started = process.hrtime.bigint();
  const cpuStarted = process.cpuUsage();
  const result = await (await connection.prepare(sql)).stream();
  const types = Array.from({ length: result.columnCount }, (_, i) => result.columnType(i));
  const names = Array.from({ length: result.columnCount }, (_, i) => result.columnName(i));
  const schema = arrowSchema(names, types);
  const sent = new Map();
  let count = 0;
  let bytes = 0;
  const emit = (batch) => {
    if (!batch || stage === 'convert' || stage === 'native') return;
    for (const message of recordBatchMessages(batch, sent)) bytes += encodeFlightData(message).byteLength;
  };
  if (stage.startsWith('native')) {
    const source = nativeBatches(result, schema, types, batchBytes);
    let next = source.next();
    for (;;) {
      const batch = await next;
      if (!batch) break;
      next = source.next();
      count += batch.numRows;
      emit(batch);
    }
    source.close();
  } else {
    const converter = new ChunkConverter(schema, types, batchBytes);
    let next = result.fetchChunk();
    for (;;) {
      const chunk = await next;
      if (!chunk || chunk.rowCount === 0) break;
      next = result.fetchChunk();
      count += chunk.rowCount;
      if (stage !== 'fetch') emit(converter.add(chunk.chunk, chunk.rowCount));
    }
    if (stage !== 'fetch') emit(converter.flush());
  }
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  const cpu = process.cpuUsage(cpuStarted);
  connection.closeSync();
  if (count !== rows) throw new Error(`${stage}: ${count} rows, expected ${rows}`);
  return { seconds, cpu: (cpu.user + cpu.system) / 1e6, bytes };
}

const figures = {};
if (nativeExportProblem())
  console.log(`native exporter unavailable (${nativeExportProblem()}): its stages are skipped`);
console.log(
  `stages, ${rows.toLocaleString('en')} rows, DuckDB threads=${threads}, best of ${repeats} (process CPU s incl. DuckDB threads)`,
);
for (const [name, sql] of [
  ['computed', computed],
  ['stored', 'SELECT * FROM bench'],
]) {
  const stages = ['fetch', 'convert', 'encode', ...(nativeExportProblem() ? [] : ['native', 'native encode'])];
  for (const stage of stages) {
    await once(sql, stage); // warm-up
    const runs = [];
    for (let i = 0; i < repeats; i++) runs.push(await once(sql, stage));
    const best = runs.reduce((a, b) => (b.seconds < a.seconds ? b : a));
    figures[`${name}.${stage}`] = {
      best_s: +best.seconds.toFixed(4),
      cpu_s: +best.cpu.toFixed(3),
      flight_data_bytes: best.bytes || undefined,
    };
    console.log(
      `${`${name} ${stage}`.padEnd(22)} ${best.seconds.toFixed(3).padStart(7)} s  ${(rows / best.seconds / 1e6).toFixed(2).padStart(6)} M rows/s  cpu ${best.cpu.toFixed(2)} s` +
        (best.bytes ? `  ${(best.bytes / best.seconds / 1e9).toFixed(3)} GB/s FlightData` : ''),
    );
  }
}
console.log(JSON.stringify({ bench: 'flight-stages', rows, threads, results: figures }));
instance.closeSync();
