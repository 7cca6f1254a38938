// Small bulk ingests (CommandStatementIngest, as ADBC's adbc_ingest sends them), one after the other: what a client
// waits for each, this tree's server against --base's, alternated (A B A B ...) on the same Postgres and lake
// (bench/catalog-probe.mjs). Issue 12: an ingest makes sure its upload's end was not a client's reset (a PING round
// trip, src/flight/upload-fate.ts) before it commits; this shows what that costs the ingests it is least hidden in.
//
//   node bench/ingest/small-ingest.mjs --base <tree with dist/ built> [--repeats 101] [--rows 1,100,10000]
//   (--insert: an INSERT ... SELECT of --rows rows through CommandStatementUpdate instead, the write of
//   lake-phases --ingest: one statement, run in DuckDB's own transaction since 6b7b94f)
// Besides each one's median time: each server's CPU per ingest over the timed runs (its process, DuckDB's threads
// included: what an ingest costs it, less hit by the machine's load than its time) and the Postgres statements each
// ingest runs (pg_stat_statements), by kind.
import { resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { makeVector, Table, TimestampNanosecond } from 'apache-arrow';
import { alternately, catalogProbe, loadAverage, median } from '../catalog-probe.mjs';
import { processTreeCpu } from '../process-cpu.mjs';

const { values } = parseArgs({
  options: {
    base: { type: 'string' },
    repeats: { type: 'string', default: '101' },
    rows: { type: 'string', default: '1,100,10000' },
    insert: { type: 'boolean', default: false },
  },
});
if (!values.base) throw new Error('--base <tree> is required: the server to compare with');
const root = fileURLToPath(new URL('../..', import.meta.url));
const { packAny, tableToFlightData } = await import(pathToFileURL(join(root, 'dist/src/wire/index.js')).href);

let next = 0;
/** `rows` rows of (ts, v), each ingest at new timestamps. */
function batch(rows) {
  const first = next;
  next += rows;
  return tableToFlightData(
    new Table({
      ts: makeVector({
        type: new TimestampNanosecond('UTC'),
        data: BigInt64Array.from({ length: rows }, (_, i) => 1_714_557_600_000_000_000n + BigInt(first + i) * 1000n),
      }),
      v: makeVector(Float64Array.from({ length: rows }, (_, i) => i / 7)),
    }),
  );
}

/** An INSERT ... SELECT of `rows` rows at new timestamps. */
function insertSql(rows) {
  const first = next;
  next += rows;
  return `INSERT INTO small SELECT TIMESTAMPTZ '2024-05-01 10:00:00+00' + to_microseconds(${first} + i), i / 7 FROM range(${rows}) t(i)`;
}

const probe = await catalogProbe(root, 'orrery-small-ingest-');
try {
  const servers = [
    { label: 'this', client: await probe.startServer(root, 'this') },
    { label: 'base', client: await probe.startServer(resolve(values.base), 'base') },
  ];
  await servers[0].client.executeUpdate(`CREATE TABLE small (ts TIMESTAMPTZ, v DOUBLE) WITH (time_column = 'ts')`);
  const cmd = packAny('CommandStatementIngest', {
    table: 'small',
    tableDefinitionOptions: { ifNotExist: 2, ifExists: 2 },
  });
  const repeats = Number(values.repeats);
  const loadBefore = loadAverage();
  const results = [];
  for (const rows of values.rows.split(',').map(Number)) {
    const cases = servers.map((s) => {
      if (values.insert) {
        let sql;
        return { before: () => void (sql = insertSql(rows)), run: () => s.client.executeUpdate(sql) };
      }
      let messages;
      return { before: () => void (messages = batch(rows)), run: () => s.client.doPut(cmd, messages) };
    });
    await alternately(cases, 5); // warm-up
    const cpu = () => servers.map((s) => processTreeCpu(probe.servers.get(s.label).pid).own);
    const cpuBefore = cpu();
    const [ours, theirs] = (await alternately(cases, repeats)).map(median);
    const [cpuOurs, cpuTheirs] = cpu().map((ms, i) => (ms - cpuBefore[i]) / repeats);
    const [pgOurs, pgTheirs] = (await probe.postgresPerStatement(cases, 20)).map((p) =>
      Object.entries(p.kinds)
        .sort()
        .map(([kind, v]) => `${kind} ${v.calls.toFixed(1)}`)
        .join(', '),
    );
    results.push({ rows, ours, theirs, cpuOurs, cpuTheirs, pgOurs, pgTheirs });
  }
  console.log(`load average ${loadBefore} before timing, ${loadAverage()} after; medians of ${repeats}, alternated`);
  console.log(`${(values.insert ? 'rows per INSERT' : 'rows per ingest').padEnd(16)} this ms   base ms   this / base`);
  for (const r of results)
    console.log(
      `${String(r.rows).padEnd(16)} ${r.ours.toFixed(2).padStart(7)} ${r.theirs.toFixed(2).padStart(9)} ${(r.ours / r.theirs).toFixed(3).padStart(13)}`,
    );
  console.log(
    `${'CPU per one'.padEnd(16)} this ms   base ms   this / base   (the server process, over the timed runs)`,
  );
  for (const r of results)
    console.log(
      `${String(r.rows).padEnd(16)} ${r.cpuOurs.toFixed(2).padStart(7)} ${r.cpuTheirs.toFixed(2).padStart(9)} ${(r.cpuOurs / r.cpuTheirs).toFixed(3).padStart(13)}`,
    );
  console.log('Postgres statements per one (calls)');
  for (const r of results)
    console.log(`${String(r.rows).padEnd(16)} this: ${r.pgOurs}\n${''.padEnd(16)} base: ${r.pgTheirs}`);
} finally {
  await probe.close();
}
