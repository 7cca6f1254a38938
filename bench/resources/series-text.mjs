// Resources benchmark, a text index on a series table (run.sh KIND=series-text): ROWS log lines written by FILES
// INSERTs (one DuckLake data file each) into two series tables alike, one of which gets a text index on msg from
// `orrery publish`; one file of twenty is an incident's, whose lines log timeouts. Searches timed in turn on the
// indexed table and its twin (read through DuckLake's scan, as without the index), median of REPEATS: the files
// each skips (the admin's orrery.provenance), rows and MB of the files it opens, time, the ratio. Exits 1 when an
// answer of the indexed table differs from the twin's.
import { readFileSync, readdirSync, statSync, writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { FlightSqlClient } from '../../dist/src/client/index.js';
import { publishSeconds as publishDir } from './publish.mjs';

const { values } = parseArgs({
  options: {
    'flight-port': { type: 'string' },
    dir: { type: 'string' },
    'data-dir': { type: 'string' },
    rows: { type: 'string', default: '2000000' },
    files: { type: 'string', default: '40' },
    repeats: { type: 'string', default: '5' },
  },
});
const [rows, files, repeats] = [values.rows, values.files, values.repeats].map(Number);
const apiKey = 'admin-key-0123';
const address = `127.0.0.1:${values['flight-port']}`;
const client = await FlightSqlClient.connect({ address, apiKey });
const load = () => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
const loadBefore = load();

const perFile = Math.ceil(rows / files);
const started = Date.now();
for (const table of ['logs_text', 'logs_raw'])
  await client.query(`CREATE TABLE ${table} (ts TIMESTAMP, pod VARCHAR, msg VARCHAR) WITH (time_column = 'ts')`);
for (let f = 0; f < files; f++)
  for (const table of ['logs_text', 'logs_raw'])
    await client.query(
      `INSERT INTO ${table} SELECT TIMESTAMP '2026-01-01' + to_milliseconds(${f * perFile} + i), 'pod-' || (i % 50),
              'request ' || substr(sha1(concat(${f}, '/', i)), 1, 16) || ' ' ||
              CASE WHEN i % 97 = 0 AND ${f} % 20 = 7 THEN 'timeout' ELSE 'ok' END
         FROM range(${perFile}) t(i)`,
    );
const writeSeconds = (Date.now() - started) / 1000;

mkdirSync(join(values.dir, 'resources'), { recursive: true });
writeFileSync(
  join(values.dir, 'resources', 'logs.resources.json'),
  JSON.stringify({ resources: { msg_text: { index: { table: 'logs_text', column: 'msg', kind: 'text' } } } }),
);
const publishSeconds = await publishDir(values.dir, address, apiKey);

/** The table's data files (object keys, as explain_resources names them) with their rows and bytes. */
const lake = join(values['data-dir'], 'lake');
const tableFiles = async (table) => {
  const keys = readdirSync(join(lake, 'tables', 'main', table), { recursive: true })
    .filter((f) => String(f).endsWith('.parquet'))
    .map((f) => `tables/main/${table}/${f}`);
  return new Map(keys.map((k) => [k, statSync(join(lake, k)).size]));
};
const indexedFiles = await tableFiles('logs_text');
const rawFiles = await tableFiles('logs_raw');
/** The MB of the files a statement on logs_text opens: all but those explain_resources says the index skipped. */
const opened = async (sql) => {
  const explained = await client.query(`SELECT * FROM explain_resources('${sql.replaceAll("'", "''")}')`);
  const pruned = new Set(
    explained
      .toArray()
      .filter((r) => r.decision === 'pruned')
      .map((r) => String(r.reason).replace(/^partition /, '')),
  );
  const read = [...indexedFiles].filter(([k]) => !pruned.has(k));
  return { files: read.length, mb: read.reduce((n, [, b]) => n + b, 0) / 1e6 };
};

const queries = [
  ['timeouts per pod', "SELECT pod, count(*) AS n FROM {t} WHERE msg ILIKE '%timeout%' GROUP BY pod ORDER BY pod"],
  ['latest timeouts', "SELECT ts, pod, msg FROM {t} WHERE msg ILIKE '%timeout%' ORDER BY ts DESC LIMIT 20"],
  ['contains, a word no line holds', "SELECT count(*) AS n FROM {t} WHERE contains(msg, 'deadlock')"],
  ['a word every file holds', "SELECT count(*) AS n FROM {t} WHERE msg ILIKE '%request%'"],
];
const plain = (table) =>
  JSON.stringify(
    table.toArray().map((r) => r.toJSON()),
    (_k, v) => (typeof v === 'bigint' ? v.toString() : v),
  );
const median = (list) => [...list].sort((a, b) => a - b)[Math.floor(list.length / 2)];
const timedOnce = async (sql) => {
  const start = process.hrtime.bigint();
  const table = await client.query(sql);
  return { ms: Number(process.hrtime.bigint() - start) / 1e6, table };
};
const skippedOf = (table) =>
  JSON.parse(table.schema.metadata.get('orrery.provenance') ?? '{}').partitions?.find((p) => p.table === 'logs_text')
    ?.skipped ?? 0;

const results = [];
let ok = true;
for (const [name, template] of queries) {
  const [indexed, raw] = [template.replaceAll('{t}', 'logs_text'), template.replaceAll('{t}', 'logs_raw')];
  await client.query(indexed);
  await client.query(raw);
  const [withIndex, without] = [[], []];
  const answers = new Set();
  let skipped = 0;
  for (let r = 0; r < repeats; r++) {
    // A B on even repeats, B A on odd ones.
    const [a, b] =
      r % 2 === 0
        ? [await timedOnce(indexed), await timedOnce(raw)]
        : await (async () => {
            const second = await timedOnce(raw);
            return [await timedOnce(indexed), second];
          })();
    withIndex.push(a.ms);
    without.push(b.ms);
    answers.add(plain(a.table)).add(plain(b.table));
    skipped = skippedOf(a.table);
  }
  const same = answers.size === 1;
  ok &&= same;
  const read = await opened(indexed);
  results.push({
    query: name,
    sql: indexed,
    files: indexedFiles.size,
    skipped,
    mb_read: Number(read.mb.toFixed(1)),
    mb_read_without: Number(([...rawFiles.values()].reduce((n, b) => n + b, 0) / 1e6).toFixed(1)),
    without_ms: Number(median(without).toFixed(1)),
    with_ms: Number(median(withIndex).toFixed(1)),
    ratio: Number((median(without) / median(withIndex)).toFixed(2)),
    same_answer: same,
  });
}
client.close();
const loadAfter = load();

console.log(
  `Orrery resources (series-text): ${rows} log lines in ${files} INSERTs (data files) per table, written in ${writeSeconds.toFixed(1)} s; publish (install and backfill of the text index) ${publishSeconds.toFixed(1)} s; median of ${repeats} alternating runs; load ${loadBefore} before, ${loadAfter} after`,
);
const header = `${'query'.padEnd(32)} ${'skipped'.padStart(9)} ${'MB read'.padStart(13)} ${'without ms'.padStart(11)} ${'with ms'.padStart(9)} ${'ratio'.padStart(7)}  answer`;
console.log(header);
console.log('-'.repeat(header.length));
for (const r of results)
  console.log(
    `${r.query.padEnd(32)} ${`${r.skipped}/${r.files}`.padStart(9)} ${`${r.mb_read} / ${r.mb_read_without}`.padStart(13)} ${r.without_ms.toFixed(1).padStart(11)} ${r.with_ms.toFixed(1).padStart(9)} ${r.ratio.toFixed(2).padStart(7)}  ${r.same_answer ? 'same' : 'DIFFERS'}`,
  );
console.log(
  'without = the twin table (no index: DuckLake scans every file); with = the indexed table (its files less those the index skips); ratio = without / with; MB read: of the files opened, indexed / twin',
);
console.log(
  JSON.stringify({
    bench: 'resources',
    kind: 'series-text',
    rows,
    files,
    repeats,
    publish_s: publishSeconds,
    load_before: loadBefore,
    load_after: loadAfter,
    results,
    ok,
  }),
);
process.exitCode = ok ? 0 : 1;
