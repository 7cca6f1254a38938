// Where a log_entries materialization's CPU goes, step by step (issue 16), in one process on the bench's OTLP
// bodies (bodies.mjs), stored as ingestion stores them (brotli quality 0, after the 0xce marker). Each step is a
// statement of its own, each step's figure the CPU-seconds of the whole process (every thread: DuckDB's and
// libuv's) it adds over the step before; a step is run --repeats times and its best kept:
//   decompress        the payloads' brotli (nativeLogsPayloads, on libuv's threads, as the materializer does)
//   decode            __orrery_otlp_logs: protobuf straight into columns, every column read
//   properties        + json(properties), the normalising the extract does
//   join              + the join with the blocks' metadata (__blocks), rows kept in a temporary table
//   sort              ORDER BY time of those rows (into another temporary table)
//   parquet           COPY of the sorted rows to Parquet (zstd, row groups of 131,072), as the materializer writes
//   whole             the materializer's own statement end to end (extract, casts, one stream, COPY), for the check
// plus Parquet variants (snappy, zstd level 1, uncompressed) and the sort alone on rows already ordered by time.
// The Postgres commit of a partition is not here (one transaction, a few rows: see README.md). Prints a table and
// a JSON line; load average before and after.
//
//   node bench/materialization/steps.mjs [--payloads 1000] [--records 1000] [--repeats 3] [--threads 2]
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { arg, storedPayloads } from './payloads.mjs';

const root = new URL('../..', import.meta.url).pathname;
const { DuckDBEngine, nativeLogsPayloads } = await import(`${root}/dist/src/engine/index.js`);
const { builtinViewSets, payloadRows, quoteLiteral, typedColumns } = await import(`${root}/dist/src/views/index.js`);
const logEntries = builtinViewSets.find((v) => v.name === 'log_entries');

const payloads = arg('payloads', 1000);
const batch = arg('records', 1000);
const repeats = arg('repeats', 3);
const threads = arg('threads', 2);
const load0 = loadavg().map((l) => l.toFixed(2));

const cpuSeconds = () => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1e6;
};
/** The best (least CPU) of `repeats` runs of `work`: CPU-seconds and wall seconds. */
async function best(work) {
  let out = null;
  for (let r = 0; r < repeats; r++) {
    const cpu0 = cpuSeconds();
    const t0 = performance.now();
    await work();
    const run = { cpu: cpuSeconds() - cpu0, wall: (performance.now() - t0) / 1000 };
    if (!out || run.cpu < out.cpu) out = run;
  }
  return out;
}

const dir = mkdtempSync(join(tmpdir(), 'orrery-steps-'));
const engine = await DuckDBEngine.create({ readableDirectories: [dir], nativeLogsPayloads: dir, threads });
try {
  const stored = storedPayloads(payloads, batch, 'steps');
  const rows = payloads * batch;
  const file = join(dir, 'contents.otlp');
  let sizes = [];
  const steps = {};
  steps.decompress = await best(async () => {
    const contents = await Promise.all(stored.map(nativeLogsPayloads()));
    sizes = contents.map((c) => c.byteLength);
    writeFileSync(file, Buffer.concat(contents));
  });
  const decoded = payloadRows('log', [], { file, sizes });
  const raw = `__orrery_otlp_logs(${quoteLiteral(file)}, [${sizes.join(', ')}]::UBIGINT[])`;
  const sum = (relation, properties) =>
    `SELECT count(*), sum(time), sum(length(target)), sum(level), sum(length(msg)), sum(length(${properties})),
            sum(length(trace_id)), sum(length(span_id)), count(DISTINCT filename) FROM ${relation}`;
  steps.decode = await best(() => engine.values(sum(raw, 'properties')));
  steps.properties = await best(() => engine.values(sum(raw, 'json(properties)')));
  // __blocks as the materializer makes it: one row per payload, its name the payload's (see payloadRows).
  await engine.execute(
    `CREATE OR REPLACE TABLE __blocks AS SELECT 'process-' || (i % 8) AS process_id, 'stream-' || (i % 8) AS stream_id,
            uuid()::VARCHAR AS block_id, TIMESTAMP_NS '2026-12-05 00:00:00' + to_microseconds(i) AS insert_time,
            'bench-exe' AS exe, 'bench' AS username, 'bench-host' AS computer, '{"os.type":"linux"}'::JSON AS process_properties,
            'public' AS audience, ${quoteLiteral(file)} || '#' || i AS path
       FROM range(${payloads}) t(i)`,
  );
  const extract = logEntries.source.extract.replaceAll('{payloads}', decoded);
  const unsorted = extract.slice(0, extract.lastIndexOf('ORDER BY'));
  steps.join = await best(() => engine.execute(`CREATE OR REPLACE TABLE __rows AS ${unsorted}`));
  const copyCost = await best(() => engine.execute('CREATE OR REPLACE TABLE __copy AS SELECT * FROM __rows'));
  const sortedTable = await best(() =>
    engine.execute('CREATE OR REPLACE TABLE __sorted AS SELECT * FROM __rows ORDER BY time'),
  );
  steps.sort = { cpu: sortedTable.cpu - copyCost.cpu, wall: sortedTable.wall - copyCost.wall };
  const presorted = await best(() =>
    engine.execute('CREATE OR REPLACE TABLE __resorted AS SELECT * FROM __sorted ORDER BY time'),
  );
  const out = quoteLiteral(join(dir, 'out.parquet'));
  const outPath = join(dir, 'out.parquet');
  /** A Parquet write of the sorted rows with these options: its best run, and the file's MB. */
  const parquet = async (options) => ({
    ...(await best(() =>
      engine.execute(`COPY (SELECT * FROM __sorted) TO ${out} (FORMAT parquet, ROW_GROUP_SIZE 131072, ${options})`),
    )),
    mb: statSync(outPath).size / 1e6,
  });
  steps.parquet = await parquet('COMPRESSION zstd');
  const variants = {
    'parquet snappy': await parquet('COMPRESSION snappy'),
    'parquet zstd level 1': await parquet('COMPRESSION zstd, COMPRESSION_LEVEL 1'),
    'parquet uncompressed': await parquet('COMPRESSION uncompressed'),
    'sort of rows already in order': {
      cpu: presorted.cpu - copyCost.cpu,
      wall: presorted.wall - copyCost.wall,
    },
  };
  let written = 0;
  const typed = typedColumns(logEntries.columns, extract);
  const whole = `COPY (SELECT * EXCLUDE (__orrery_row) FROM (SELECT row_number() OVER () AS __orrery_row, * FROM (${typed})))
       TO ${out} (FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE 131072)`;
  steps.whole = await best(async () => {
    written = await engine.execute(whole);
  });
  if (written !== rows) throw new Error(`the whole statement wrote ${written} rows, expected ${rows}`);

  const perRow = (s) => ((s.cpu / rows) * 1e6).toFixed(3);
  console.log(
    `log_entries materialization by step: ${rows.toLocaleString()} records in ${payloads} payloads, DuckDB threads ${threads}, best of ${repeats}`,
  );
  console.log(
    `${'step'.padEnd(32)} ${'cpu s'.padStart(7)} ${'wall s'.padStart(7)} ${'cpu us/row'.padStart(10)} ${'file MB'.padStart(8)}`,
  );
  const line = (name, s) =>
    console.log(
      `${name.padEnd(32)} ${s.cpu.toFixed(2).padStart(7)} ${s.wall.toFixed(2).padStart(7)} ${perRow(s).padStart(10)} ${s.mb === undefined ? '' : s.mb.toFixed(1).padStart(8)}`,
    );
  const incremental = {
    decompress: steps.decompress,
    'protobuf decode': steps.decode,
    'properties normalising': {
      cpu: steps.properties.cpu - steps.decode.cpu,
      wall: steps.properties.wall - steps.decode.wall,
    },
    'join with __blocks (+ rows kept)': {
      cpu: steps.join.cpu - steps.properties.cpu,
      wall: steps.join.wall - steps.properties.wall,
    },
    'sort by time': steps.sort,
    'parquet write (zstd)': steps.parquet,
  };
  for (const [name, s] of Object.entries(incremental)) line(name, s);
  const total = Object.values(incremental).reduce((a, s) => ({ cpu: a.cpu + s.cpu, wall: a.wall + s.wall }), {
    cpu: 0,
    wall: 0,
  });
  line('sum of the steps', total);
  line('whole statement (materializer)', {
    cpu: steps.whole.cpu + steps.decompress.cpu,
    wall: steps.whole.wall + steps.decompress.wall,
  });
  console.log('variants:');
  for (const [name, s] of Object.entries(variants)) line(`  ${name}`, s);
  console.log(
    `goal 3 M rows/s on 2 cores = ${((2 / 3e6) * 1e6).toFixed(3)} cpu us/row; load average ${load0.join(' ')} -> ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  );
  console.log(
    JSON.stringify({
      bench: 'materialization-steps',
      rows,
      payloads,
      threads,
      repeats,
      steps,
      incremental,
      variants,
      load_before: load0,
      load_after: loadavg(),
    }),
  );
} finally {
  await engine.close();
  rmSync(dir, { recursive: true, force: true });
}
