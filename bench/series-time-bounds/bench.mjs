// Raw series-table reads bounded by time (issues 14 and 10), see run.sh. Each way of writing "the
// last day" is timed alternately on the after server, the before server and DuckDB in-process
// (read_parquet over the after server's files of the table, the SQL as the user wrote it); answers
// must agree. Prints a table, then one JSON line; exits 1 on a differing answer.
import { parseArgs } from 'node:util';
import { DuckDBInstance } from '@duckdb/node-api';
import { FlightSqlClient } from '../../dist/src/client/index.js';
import { seriesTableFiles } from '../lake-files.mjs';

const { values } = parseArgs({
  options: {
    'after-port': { type: 'string' },
    'before-port': { type: 'string' },
    before: { type: 'string', default: 'before' },
    lake: { type: 'string' },
    rows: { type: 'string', default: '2000000' },
    repeats: { type: 'string', default: '5' },
  },
});
const rows = Number(values.rows);
const repeats = Number(values.repeats);
const connect = (port) => FlightSqlClient.connect({ address: `127.0.0.1:${port}`, apiKey: 'admin-key-0123' });
const after = await connect(values['after-port']);
const before = await connect(values['before-port']);

// 30 days up to now, one INSERT a day (a client writes over time: one set of files per write).
const days = 30;
const perDay = Math.floor(rows / days);
const dayStart = Date.now() - days * 86_400_000;
const text = (ms) => new Date(ms).toISOString().slice(0, 19).replace('T', ' ');
const loadStart = process.hrtime.bigint();
for (const client of [after, before]) {
  await client.executeUpdate(
    `CREATE TABLE requests (ts TIMESTAMP, service VARCHAR, duration_ms DOUBLE) WITH (time_column = 'ts')`,
  );
  for (let d = 0; d < days; d++) {
    await client.executeUpdate(
      `INSERT INTO requests SELECT '${text(dayStart + d * 86_400_000)}'::VARCHAR::TIMESTAMP + to_microseconds(CAST(i * ${86_400e6 / perDay} AS BIGINT)),
         'svc' || (i % 20), (hash(i * 7 + ${d}) % 100000) / 100.0 FROM range(${perDay}) t(i)`,
    );
  }
}
const loadSeconds = Number(process.hrtime.bigint() - loadStart) / 1e9;

const since = text(Date.now() - 86_400_000);
const bounds = [
  ['string (control)', `ts >= '${since}'`],
  ['TIMESTAMP literal', `ts >= TIMESTAMP '${since}'`],
  ['TIMESTAMPTZ literal', `ts >= TIMESTAMPTZ '${since}+00:00'`],
  ['BETWEEN literals', `ts BETWEEN TIMESTAMP '${since}' AND TIMESTAMP '${text(Date.now() + 3_600_000)}'`],
  ['now() - INTERVAL (control)', `ts >= now() - INTERVAL 1 DAY`],
  ['now() - INTERVAL and <= now()', `ts >= now() - INTERVAL 1 DAY AND ts <= now()`],
];
const sqlOf = (where) =>
  `select service, count(*) as n, round(avg(duration_ms), 6) as avg_ms from requests where ${where} group by service order by service`;

const files = seriesTableFiles(values.lake, 'requests');
const duck = await (await DuckDBInstance.create(':memory:')).connect();
await duck.run(`SET TimeZone = 'UTC'`);
await duck.run(`CREATE VIEW requests AS SELECT * FROM read_parquet([${files.map((f) => `'${f}'`).join(', ')}])`);

const plain = (v) => (typeof v === 'bigint' ? Number(v) : v);
const flightRows = async (client, sql) =>
  (await client.query(sql)).toArray().map((r) => Object.values(r.toJSON()).map(plain).join('|'));
const duckRows = async (sql) => (await duck.runAndReadAll(sql)).getRows().map((r) => r.map(plain).join('|'));
const timed = async (run) => {
  const start = process.hrtime.bigint();
  const result = await run();
  return { seconds: Number(process.hrtime.bigint() - start) / 1e9, result };
};
const median = (list) => [...list].sort((a, b) => a - b)[Math.floor(list.length / 2)];
const filesRead = async (where) => {
  const plan = (await after.query(`EXPLAIN ANALYZE ${sqlOf(where)}`))
    .toArray()
    .map((r) => Object.values(r.toJSON()).join('\n'))
    .join('\n');
  return [...plan.matchAll(/Total Files Read: (\d+)/g)].reduce((sum, m) => sum + Number(m[1]), 0);
};

const figures = [];
let wrong = false;
for (const [form, where] of bounds) {
  const sql = sqlOf(where);
  const times = { after: [], before: [], duckdb: [] };
  const answers = {};
  for (let i = 0; i < repeats; i++) {
    for (const [side, run] of [
      ['after', () => flightRows(after, sql)],
      ['before', () => flightRows(before, sql)],
      ['duckdb', () => duckRows(sql)],
    ]) {
      const { seconds, result } = await timed(run);
      times[side].push(seconds);
      answers[side] = result;
    }
  }
  // now() moves between the runs: the services and their order must agree, not the counts.
  const key = (list) => (form.includes('now()') ? list.map((r) => r.split('|')[0]) : list).join('\n');
  const same = key(answers.after) === key(answers.before) && key(answers.after) === key(answers.duckdb);
  if (!same) wrong = true;
  const [a, b, d] = [median(times.after), median(times.before), median(times.duckdb)];
  figures.push({
    form,
    where,
    files_read_after: await filesRead(where),
    files: files.length,
    before_seconds: b,
    after_seconds: a,
    speedup: b / a,
    duckdb_seconds: d,
    after_vs_duckdb: a / d,
    before_vs_duckdb: b / d,
    same_answer: same,
  });
}
after.close();
before.close();

const f = (x) => x.toFixed(4);
console.log(
  `requests: ${rows} rows over ${days} days, one INSERT a day (loaded twice in ${loadSeconds.toFixed(1)} s); bound: the last day; repeats ${repeats} (median, alternately)`,
);
console.log(
  `form | files read (after) | before (${values.before}) s | after s | before/after | duckdb s | after/duckdb | before/duckdb | same`,
);
for (const x of figures)
  console.log(
    `${x.form} | ${x.files_read_after}/${x.files} | ${f(x.before_seconds)} | ${f(x.after_seconds)} | ${x.speedup.toFixed(2)}x | ${f(x.duckdb_seconds)} | ${x.after_vs_duckdb.toFixed(2)} | ${x.before_vs_duckdb.toFixed(2)} | ${x.same_answer}`,
  );
console.log(JSON.stringify({ rows, repeats, load_seconds: loadSeconds, figures }));
if (wrong) process.exit(1);
