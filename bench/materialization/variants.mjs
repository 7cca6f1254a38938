// Ways to write one log_entries partition under the maintenance engine's memory limit (issue 16), each in a
// process of its own so that its peak RSS is its own: the decoded payloads are prepared once (--prepare), then
// `--variant <name>` runs one statement on a DuckDB engine set up as the maintenance engine is (memory limit,
// spill folder, threads) and prints a JSON line: seconds, CPU-seconds, the process's peak RSS (VmHWM) and its
// growth over the statement, rows, whether the file is in time order, and a digest of its rows (a sum of row hashes);
// and of the statement's thread, its seconds on a CPU, waiting for a CPU (the load) and blocked (stmt_blocked_s: for
// the ordered read, waiting for the decoding thread). With --threads 1, as the server's maintenance engine runs on 2
// cores, the statement runs on that thread; with more, it waits for DuckDB's own threads and spins while it waits.
//
//   node bench/materialization/variants.mjs --prepare DIR [--payloads 2000] [--records 1000] [--unique-ids] [--zstd]
//   node bench/materialization/variants.mjs --variant NAME DIR [--threads 2] [--limit 384MiB] [--memory] [--processes 8]
//   node bench/materialization/variants.mjs --dump-blocks PREFIX DIR  (the ordered read's other inputs: see below)
// --unique-ids: a trace and span id of its own for each traced record (bench/materialization/payloads.mjs). --zstd:
// the payloads stored as the server stores them (zstd, 0xd7) rather than as their protobuf.
// --processes: how many processes the blocks come from (block i from process i % N; the bench server's load
// generator sends 8 services' blocks, interleaved).
// --memory samples DuckDB's memory by tag (duckdb_memory(): in memory and spilled) every 0.4 s during the statement
// and adds each tag's peaks (MiB) to the line: what holds the memory (the join's HASH_TABLE, the sort's ORDER_BY, the
// Parquet writer's buffered row group, COLUMN_DATA).
// --write 'OPTIONS' replaces the variant's Parquet options of the COPY (`COMPRESSION zstd, DICTIONARY_SIZE_LIMIT
// 4096`); --config 'SET ...' runs as the engine starts, before its configuration is locked (`SET GLOBAL
// block_allocator_memory = '192MiB'`); --warm runs the statement once before the measured run, as a server that has
// materialized before; --keep FILE keeps a copy of the written file. `minor_faults`: the process's page faults over the
// statement (pages the kernel maps and zeroes on their first touch). --from-table: the variant's rows are put in a
// DuckDB table before the measurement, and the statement measured writes that table with the same options (DuckDB's
// Parquet write alone, from memory: the floor under every variant). --read-only counts the statement's rows instead of
// writing them (the read, decode and merge without the write).
// variants.sh runs the variants alternately and prints them side by side. `threads_run_s`: every thread's seconds on a
// CPU over the statement, busiest first (threads that ended before it did, as the decoding one, are not listed).
// The statement alone under perf (PERF_CTL: a FIFO that perf's --control reads; sampling starts disabled):
//   mkfifo /tmp/ctl && PERF_CTL=/tmp/ctl perf record -g -F 999 -D -1 --control fifo:/tmp/ctl -o perf.data -- \
//     node bench/materialization/variants.mjs --variant 'ordered enums' --threads 1 DIR
//   python3 bench/materialization/perf-breakdown.py --rows 1000000 perf.data
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { arg, storedPayloads } from './payloads.mjs';

const root = process.env.ORRERY_ROOT ?? new URL('../..', import.meta.url).pathname;
const { DuckDBEngine, nativeLogsPayloads, nativeLogsScan, nativeZstdContent, nativeZstdPayload } = await import(
  `${root}/dist/src/engine/index.js`
);
const views = await import(`${root}/dist/src/views/index.js`);
const {
  builtinViewSets,
  orderedBlocks,
  orderedEnumFields,
  orderedProtobufLogs,
  payloadRows,
  quoteLiteral,
  typedColumns,
} = views;
const logEntries = builtinViewSets.find((v) => v.name === 'log_entries');
const option = (name) => {
  const at = process.argv.indexOf(`--${name}`);
  return at > 0 ? process.argv[at + 1] : undefined;
};

const prepare = option('prepare');
if (prepare) {
  mkdirSync(prepare, { recursive: true });
  const payloads = arg('payloads', 2000);
  const stored = storedPayloads(payloads, arg('records', 1000), 'variants', process.argv.includes('--unique-ids'));
  const decoded = await Promise.all(stored.map(nativeLogsPayloads()));
  // --zstd: the payloads as the server stores them (PROTOBUF_ZSTD_MARK, payload-zstd.cc), not their protobuf.
  const contents = process.argv.includes('--zstd') ? decoded.map(nativeZstdPayload()) : decoded;
  writeFileSync(join(prepare, 'contents.otlp'), Buffer.concat(contents));
  writeFileSync(join(prepare, 'sizes.json'), JSON.stringify(contents.map((c) => c.byteLength)));
  process.exit(0);
}

const variant = option('variant');
const dir = process.argv[process.argv.length - 1];
const file = join(dir, 'contents.otlp');
const sizes = JSON.parse(readFileSync(join(dir, 'sizes.json'), 'utf8'));
const spill = join(dir, `spill-${process.pid}`);
const out = join(dir, `out-${process.pid}.parquet`);
const status = () => readFileSync('/proc/self/status', 'utf8');
const kib = (field) => Number(new RegExp(`^${field}:\\s+(\\d+)`, 'm').exec(status())[1]);
const engine = await DuckDBEngine.create({
  readableDirectories: [dir],
  nativeLogsPayloads: dir,
  threads: arg('threads', 2),
  memoryLimit: option('limit') ?? '384MiB',
  tempDirectory: spill,
  // --config 'SQL': a SET run as the engine starts, before its configuration is locked (an allocator setting).
  startupSql: option('config') ? [option('config')] : [],
});
try {
  // Identifiers shaped as ingestion makes them (UUID text), the same in every run for the digest.
  await engine.execute(
    `CREATE OR REPLACE MACRO uuid_of(kind, i) AS CAST(substr(md5(kind || i), 1, 8) || '-' || substr(md5(kind || i), 9, 4) || '-' ||
       substr(md5(kind || i), 13, 4) || '-' || substr(md5(kind || i), 17, 4) || '-' || substr(md5(kind || i), 21, 12) AS VARCHAR)`,
  );
  // The blocks' rows as the materializer reads them: one row per payload, its path the payload's name.
  const processes = arg('processes', 8);
  await engine.execute(
    `CREATE OR REPLACE TABLE __block_text AS SELECT uuid_of('process', i % ${processes}) AS process_id, uuid_of('stream', i % ${processes}) AS stream_id,
            uuid_of('block', i) AS block_id, TIMESTAMP_NS '2026-12-05 00:00:00' + to_microseconds(i) AS insert_time,
            'bench-svc-' || (i % ${processes}) AS exe, 'bench' AS username, 'bench-host-' || (i % ${processes} % 4) AS computer,
            json_object('service.name', 'bench-svc-' || (i % ${processes}), 'service.instance.id', 'bench-svc-' || (i % ${processes}) || '-instance',
                        'host.name', 'bench-host-' || (i % ${processes} % 4), 'process.owner', 'bench', 'os.type', 'linux') AS process_properties,
            'public' AS audience, ${quoteLiteral(file)} || '#' || i AS path
       FROM range(${sizes.length}) t(i)`,
  );
  const rows = payloadRows('log', [], { file, sizes });
  const statements = await variants(rows);
  // --dump-blocks PREFIX: what the ordered read is given besides the payloads, for direct-writer.cc: each payload's
  // first time (PREFIX.first-times, one a line) and its block fields as text (PREFIX.parquet: `kBlockFields` per
  // payload, as orderedBlocks sets them).
  const dump = option('dump-blocks');
  if (dump) {
    writeFileSync(`${dump}.first-times`, payloadFirstTimes().join('\n') + '\n');
    await engine.execute(
      `COPY (SELECT unnest(b) AS field, generate_subscripts(b, 1) AS place FROM (SELECT getvariable('__orrery_blocks') AS b))
         TO ${quoteLiteral(`${dump}.parquet`)} (FORMAT parquet)`,
      { setup: statements['ordered enums'].session },
    );
    await engine.close();
    rmSync(spill, { recursive: true, force: true });
    process.exit(0);
  }
  if (!statements[variant]) throw new Error(`no variant ${variant}; one of ${Object.keys(statements).join(', ')}`);
  const { setup = [], session = [], sql, rowGroup = 131072, write: chosen = 'COMPRESSION zstd' } = statements[variant];
  // --write 'OPTIONS': the COPY's Parquet options instead of the variant's (a dictionary limit, say).
  const write = option('write') ?? chosen;
  for (const s of setup) await engine.execute(s);
  const fromTable = process.argv.includes('--from-table');
  if (fromTable) await engine.execute(`CREATE OR REPLACE TABLE __rows AS ${sql}`, { setup: session });
  // --read-only: the rows counted, not written (the file holds the count): the read without the Parquet write.
  const readOnly = process.argv.includes('--read-only');
  const rowsSql = fromTable ? 'SELECT * FROM __rows' : sql;
  const copy = `COPY (${readOnly ? `SELECT count(*) AS n FROM (${rowsSql})` : rowsSql}) TO ${quoteLiteral(out)} (FORMAT parquet, ${write}, ROW_GROUP_SIZE ${rowGroup})`;
  // --warm: the statement runs once before the measured one, as in a server that has materialized before (what
  // the allocators kept of it).
  if (process.argv.includes('--warm')) await engine.execute(copy, { setup: session });
  // The peak so far (DuckDB started, __blocks made) is the baseline: VmHWM reset to the current RSS.
  writeFileSync('/proc/self/clear_refs', '5');
  const base = kib('VmHWM');
  const load = loadavg()[0];
  const cpu0 = process.cpuUsage();
  const faults0 = minorFaults();
  const sched0 = schedstats();
  const t0 = performance.now();
  if (process.argv.includes('--explain')) {
    const { batches } = await engine.query(`EXPLAIN ANALYZE ${copy}`, { setup: session });
    for await (const b of batches) for (let i = 0; i < b.numRows; i++) console.log(String(b.getChildAt(1)?.get(i)));
    process.exit(0);
  }
  const sampling = process.argv.includes('--memory') ? sampleMemory() : null;
  // PERF_CTL=<fifo>: perf record -D -1 --control fifo:<fifo> samples the statement alone.
  if (process.env.PERF_CTL) writeFileSync(process.env.PERF_CTL, 'enable\n');
  let written = await engine.execute(copy, { setup: session }).finally(() => {
    sampling?.stop();
    if (process.env.PERF_CTL) writeFileSync(process.env.PERF_CTL, 'disable\n');
  });
  const seconds = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  const faults = minorFaults() - faults0;
  const threads = busiestThread(sched0, schedstats(), seconds);
  const peak = kib('VmHWM');
  const [[ordered, digest]] = await engine
    .values(
      `SELECT bool_and(ordered), sum(hash(time, msg, properties, block_id, exe, audience, process_id, insert_time, process_properties, stream_id, computer, username)::HUGEINT)
       FROM (SELECT *, coalesce(time >= lag(time) OVER (ORDER BY file_row_number), true) AS ordered, file_row_number AS rn
               FROM read_parquet(${quoteLiteral(out)}, file_row_number = true))`,
    )
    .catch(() => [[null, null]]);
  if (readOnly) written = Number((await engine.values(`SELECT n FROM read_parquet(${quoteLiteral(out)})`))[0][0]);
  const [[groups]] = await engine.values(
    `SELECT count(DISTINCT row_group_id) FROM parquet_metadata(${quoteLiteral(out)})`,
  );
  console.log(
    JSON.stringify({
      variant,
      rows: written,
      seconds: Number(seconds.toFixed(2)),
      cpu_s: Number(((cpu.user + cpu.system) / 1e6).toFixed(2)),
      peak_rss_mib: Math.round(peak / 1024),
      growth_mib: Math.round((peak - base) / 1024),
      minor_faults: faults,
      file_mb: Number((statSync(out).size / 1e6).toFixed(1)),
      row_groups: Number(groups),
      ordered,
      digest: String(digest),
      load_1m: Number(load.toFixed(2)),
      ...threads,
      ...(sampling ? { duckdb_peak_mib: await sampling.peaks } : {}),
    }),
  );
} finally {
  await engine.close();
  rmSync(spill, { recursive: true, force: true });
  // --keep FILE: the written file copied there (its encodings per column: parquet_metadata).
  if (option('keep') && existsSync(out)) writeFileSync(option('keep'), readFileSync(out));
  rmSync(out, { force: true });
}

/**
 * The process's minor page faults so far (/proc/self/stat): each one a page the kernel maps and zeroes on first touch,
 * which is where the statement's kernel time goes (memory its allocators gave back and take again).
 */
function minorFaults() {
  const stat = readFileSync('/proc/self/stat', 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[7]);
}

/** Each thread's time on a CPU and waiting for one (ns, /proc/self/task/<tid>/schedstat), by thread id. */
function schedstats() {
  const times = new Map();
  for (const tid of readdirSync('/proc/self/task')) {
    try {
      const [run, wait] = readFileSync(`/proc/self/task/${tid}/schedstat`, 'utf8').split(' ').map(Number);
      times.set(tid, { run, wait });
    } catch {
      // the thread ended
    }
  }
  return times;
}

/**
 * The statement's thread (the one that ran longest over the statement, among those alive before and after it):
 * its seconds on a CPU, waiting for one (other work's load), and neither (blocked: waiting for the decoding
 * thread, for I/O, or done), out of the statement's seconds.
 */
function busiestThread(before, after, seconds) {
  let best = null;
  for (const [tid, a] of after) {
    const b = before.get(tid);
    if (!b) continue;
    const run = (a.run - b.run) / 1e9;
    if (!best || run > best.run) best = { run, wait: (a.wait - b.wait) / 1e9 };
  }
  if (!best) return {};
  const round = (x) => Number(x.toFixed(2));
  // Every thread's seconds on a CPU over the statement, busiest first (the statement's, DuckDB's, the decoding one).
  const busy = [...after]
    .map(([tid, a]) => (a.run - (before.get(tid)?.run ?? 0)) / 1e9)
    .filter((run) => run >= 0.01)
    .sort((x, y) => y - x)
    .map(round);
  return {
    threads_run_s: busy,
    stmt_run_s: round(best.run),
    stmt_runq_s: round(best.wait),
    stmt_blocked_s: round(seconds - best.run - best.wait),
  };
}

/** Samples duckdb_memory() until stop(): `peaks` resolves to each tag's highest memory and spilled MiB. */
function sampleMemory() {
  let running = true;
  const peaks = {};
  const mib = (bytes) => Math.round(Number(bytes) / 2 ** 20);
  const done = (async () => {
    while (running) {
      await new Promise((resolve) => setTimeout(resolve, 400));
      const tags = await engine.values(
        'SELECT tag, memory_usage_bytes, temporary_storage_bytes FROM duckdb_memory() WHERE memory_usage_bytes + temporary_storage_bytes > 0',
      );
      for (const [tag, memory, spilled] of tags) {
        const peak = (peaks[tag] ??= { memory: 0, spilled: 0 });
        peak.memory = Math.max(peak.memory, mib(memory));
        peak.spilled = Math.max(peak.spilled, mib(spilled));
      }
    }
    return peaks;
  })();
  return {
    stop: () => {
      running = false;
    },
    peaks: done,
  };
}

/**
 * The statements compared: `sql` is what COPY writes, `setup` runs before the measurement, `session` on the
 * statement's connection (temporary types and tables). The extract is log_entries' own; __blocks is as above.
 */
/**
 * Each payload's first time as its block holds it: the earliest of its records' times that ingestion's scan found
 * (11 numbers per ResourceLogs: the records' count 7th, then that time's high and low 32-bit halves).
 */
function payloadFirstTimes() {
  const contents = readFileSync(file);
  const firstTimes = [];
  for (let i = 0, at = 0; i < sizes.length; at += sizes[i++]) {
    const scanned = nativeLogsScan()(protobufOf(contents.subarray(at, at + sizes[i])));
    let first = 0n;
    for (let r = 0; r < scanned.length; r += 11) {
      const time = (BigInt(scanned[r + 7]) << 32n) | BigInt(scanned[r + 8]);
      if (scanned[r + 6] > 0 && (first === 0n || time < first)) first = time;
    }
    firstTimes.push(first);
  }
  return firstTimes;
}

/** A payload's protobuf: itself, or a zstd payload's content (the mark 0xd7, the content's length, the frame). */
function protobufOf(payload) {
  if (payload[0] !== 0xd7) return payload;
  let size = 0;
  let at = 1;
  for (let shift = 1; ; shift *= 128) {
    const byte = payload[at++];
    size += (byte & 0x7f) * shift;
    if (byte < 0x80) break;
  }
  return nativeZstdContent(payload.subarray(at), size);
}

async function variants(rows) {
  const extract = logEntries.source.extract.replaceAll('{payloads}', rows);
  const oneStream = (sql) =>
    `SELECT * EXCLUDE (__orrery_row) FROM (SELECT row_number() OVER () AS __orrery_row, * FROM (${sql}))`;
  const text = oneStream(typedColumns(logEntries.columns, extract));
  // __blocks as text (what the materializer does), or with its text columns as ENUMs of their values (a763dc7,
  // reverted: see README.md), cast back to text after the sort.
  const textBlocks = ['CREATE OR REPLACE TEMP TABLE __blocks AS SELECT * FROM __block_text'];
  const enumColumns = [
    'process_id',
    'stream_id',
    'block_id',
    'exe',
    'username',
    'computer',
    'process_properties',
    'audience',
  ];
  const enumBlocks = [
    ...enumColumns.map(
      (c) =>
        `CREATE OR REPLACE TEMP TYPE __orrery_blocks_${c} AS ENUM (SELECT DISTINCT CAST(${c} AS VARCHAR) FROM __block_text WHERE ${c} IS NOT NULL)`,
    ),
    `CREATE OR REPLACE TEMP TABLE __blocks AS SELECT * REPLACE (${enumColumns
      .map((c) => `CAST(CAST(${c} AS VARCHAR) AS __orrery_blocks_${c}) AS ${c}`)
      .join(', ')}) FROM __block_text`,
  ];
  // Text again (process_properties through VARCHAR: an ENUM cast to JSON is a JSON string of the text).
  const texts = (sql) =>
    typedColumns(
      logEntries.columns,
      `SELECT * REPLACE (${enumColumns.map((c) => `CAST(${c} AS VARCHAR) AS ${c}`).join(', ')}) FROM (${sql})`,
    );
  // The join on the payload's index (the number the decoder's filename ends with; a chunk holds one payload,
  // so it is computed once per chunk) instead of its name.
  const prefix = rows.match(/__orrery_otlp_logs\('([^']*)'/)[1].length + 2;
  const withIndex = `(SELECT *, CAST(substr(filename, ${prefix}) AS UBIGINT) AS payload FROM ${rows})`;
  const indexed = (table) =>
    logEntries.source.extract
      .replaceAll('{payloads}', withIndex)
      .replace('JOIN __blocks b ON r.filename = b.path', `JOIN ${table} b ON r.payload = b.payload`);
  const index = (from, to) =>
    `CREATE OR REPLACE TEMP TABLE ${to} AS SELECT *, CAST(substr(path, ${prefix}) AS UBIGINT) AS payload FROM ${from}`;
  // The join on the payload's name cut to `#<index>` (an inlined string, no longer than 12 bytes).
  const shortName = (from, to) =>
    `CREATE OR REPLACE TEMP TABLE ${to} AS SELECT * REPLACE (substr(path, ${prefix - 1}) AS path) FROM ${from}`;
  const short = logEntries.source.extract
    .replaceAll('{payloads}', `(SELECT * REPLACE (substr(filename, ${prefix - 1}) AS filename) FROM ${rows})`)
    .replace('JOIN __blocks b', 'JOIN __blocks_s b');
  // The rows in time order from the payloads' merge (__orrery_otlp_logs_ordered), no join and no sort: what the
  // materializer runs when the merge holds little (materializer.ts, mergeFirstTimes).
  const firstTimes = payloadFirstTimes();
  const ordered = logEntries.source.ordered.replaceAll('{payloads}', orderedProtobufLogs(file, sizes, firstTimes));
  const orderedVariant = {
    session: [index('__block_text', '__blocks'), orderedBlocks],
    sql: oneStream(typedColumns(logEntries.columns, ordered)),
  };
  const orderedEnums = (enums) => ({
    ...orderedVariant,
    sql: typedColumns(
      logEntries.columns,
      logEntries.source.ordered.replaceAll('{payloads}', orderedProtobufLogs(file, sizes, firstTimes, enums)),
      [],
      new Set(enums),
    ),
  });
  const without = (v, replace) => ({ ...v, sql: `SELECT * REPLACE (${replace}) FROM (${v.sql})` });
  const payloadOnly = `SELECT make_timestamp_ns(r.time) AS time, r.target, r.level, r.msg, r.properties, r.trace_id, r.span_id
       FROM ${rows} r ORDER BY time`;
  return {
    'text blocks': { session: textBlocks, sql: text },
    'enum blocks': { session: enumBlocks, sql: oneStream(texts(extract)) },
    'text int join': {
      session: [...textBlocks, index('__blocks', '__blocks_i')],
      sql: oneStream(typedColumns(logEntries.columns, indexed('__blocks_i'))),
    },
    'enum int join': {
      session: [...enumBlocks, index('__blocks', '__blocks_i')],
      sql: oneStream(texts(indexed('__blocks_i'))),
    },
    'enum short name': { session: [...enumBlocks, shortName('__blocks', '__blocks_s')], sql: oneStream(texts(short)) },
    // References, not candidates: no block columns at all (sorted), and the rows unsorted (out of order).
    'payload only': { sql: oneStream(payloadOnly) },
    unsorted: {
      session: textBlocks,
      sql: oneStream(typedColumns(logEntries.columns, extract.slice(0, extract.lastIndexOf('ORDER BY')))),
    },
    'text rg32k': { session: textBlocks, sql: text, rowGroup: 32768 },
    ordered: orderedVariant,
    // The ordered read without inOneStream's window: what the materializer runs since the window was left out of it.
    'ordered bare': { ...orderedVariant, sql: typedColumns(logEntries.columns, ordered) },
    // The process's block fields as ENUMs, left uncast into the file (the writer then neither copies nor hashes
    // their strings per row): what the materializer runs since 8ce0462; with block_id too (not kept: a range's every
    // block id would be in each row group's dictionary).
    'ordered enums': orderedEnums(orderedEnumFields),
    'ordered enums block': orderedEnums([...(orderedEnumFields ?? []), 'block_id']),
    // The Parquet writer's settings on the ordered rows (`write`: the COPY options besides the row group size).
    'ordered zstd1': { ...orderedVariant, write: 'COMPRESSION zstd, COMPRESSION_LEVEL 1' },
    'ordered snappy': { ...orderedVariant, write: 'COMPRESSION snappy' },
    'ordered v2': { ...orderedVariant, write: 'COMPRESSION zstd, PARQUET_VERSION V2' },
    'ordered no dict': { ...orderedVariant, write: 'COMPRESSION zstd, DICTIONARY_SIZE_LIMIT 1' },
    'ordered rg256k': { ...orderedVariant, rowGroup: 262144 },
    // The writer's settings on what the materializer runs (ordered enums), and what a column costs (-<column>: written
    // as NULL; references, not candidates).
    'enums zstd1': { ...orderedEnums(orderedEnumFields), write: 'COMPRESSION zstd, COMPRESSION_LEVEL 1' },
    'enums zstd-1': { ...orderedEnums(orderedEnumFields), write: 'COMPRESSION zstd, COMPRESSION_LEVEL -1' },
    'enums lz4': { ...orderedEnums(orderedEnumFields), write: 'COMPRESSION lz4_raw' },
    'enums snappy': { ...orderedEnums(orderedEnumFields), write: 'COMPRESSION snappy' },
    'enums v2': { ...orderedEnums(orderedEnumFields), write: 'COMPRESSION zstd, PARQUET_VERSION V2' },
    'enums no dict': { ...orderedEnums(orderedEnumFields), write: 'COMPRESSION zstd, DICTIONARY_SIZE_LIMIT 1' },
    'enums rg64k': { ...orderedEnums(orderedEnumFields), rowGroup: 65536 },
    'enums rg256k': { ...orderedEnums(orderedEnumFields), rowGroup: 262144 },
    'enums -pp': without(orderedEnums(orderedEnumFields), 'NULL::JSON AS process_properties'),
    'enums -block': without(orderedEnums(orderedEnumFields), 'NULL::VARCHAR AS block_id'),
    'enums -ids': without(orderedEnums(orderedEnumFields), 'NULL::VARCHAR AS trace_id, NULL::VARCHAR AS span_id'),
    'enums -props': without(orderedEnums(orderedEnumFields), 'NULL::JSON AS properties'),
    'enums -msg': without(orderedEnums(orderedEnumFields), 'NULL::VARCHAR AS msg'),
    // Two threads take the merge's rows a row group at a time, each encoding its own row group (needs --threads 2):
    // what the materializer runs with two or more maintenance threads.
    'enums parallel': {
      ...orderedVariant,
      write: 'COMPRESSION zstd, PRESERVE_ORDER false',
      sql: typedColumns(
        logEntries.columns,
        logEntries.source.ordered.replaceAll(
          '{payloads}',
          orderedProtobufLogs(file, sizes, firstTimes, orderedEnumFields, 131072),
        ),
        [],
        new Set(orderedEnumFields),
      ),
    },
  };
}
