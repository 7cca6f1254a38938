// Resources benchmark (see run.sh): dashboard queries over log_entries without indexes, then with a
// minmax index on time and a set index on exe installed by `orrery publish`; the partitions each
// query skipped (from the admin's orrery.provenance), median times, the ratio. Exits 1 when an
// answer with the indexes differs from its answer without.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { FlightSqlClient } from '../../dist/src/client/index.js';
import { runResourcesCli } from '../../dist/src/resources/index.js';

const { values } = parseArgs({
  options: {
    'http-port': { type: 'string' },
    'flight-port': { type: 'string' },
    dir: { type: 'string' },
    rows: { type: 'string', default: '200000' },
    days: { type: 'string', default: '10' },
    repeats: { type: 'string', default: '5' },
  },
});
const [rows, days, repeats] = [values.rows, values.days, values.repeats].map(Number);
const apiKey = 'admin-key-0123';
const address = `127.0.0.1:${values['flight-port']}`;
const client = await FlightSqlClient.connect({ address, apiKey });
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const dayNanos = 86_400_000_000_000n;
const base = BigInt(Date.parse('2026-01-01T00:00:00Z')) * 1_000_000n;

// One partition per day: each day's entries (one service) are ingested a second apart from the next
// day's, and materialized in one-second partitions.
const perDay = Math.ceil(rows / days);
const started = Date.now();
const ingestBegin = new Date(Math.floor(Date.now() / 1000) * 1000 - 2000);
for (let day = 0; day < days; day++) {
  for (let first = 0; first < perDay; first += 5000) {
    const count = Math.min(5000, perDay - first);
    const logRecords = Array.from({ length: count }, (_, k) => {
      const j = first + k;
      return {
        timeUnixNano: String(base + BigInt(day) * dayNanos + BigInt(j) * 1_000_000n),
        severityNumber: [9, 13, 17, 21][j % 4],
        body: { stringValue: j % 97 === 0 ? `request ${j} timeout` : `request ${j} ok` },
        attributes: [{ key: 'pod', value: { stringValue: `pod-${j % 50}` } }],
      };
    });
    const body = JSON.stringify({
      resourceLogs: [
        {
          resource: { attributes: [{ key: 'service.name', value: { stringValue: `svc-${day}` } }] },
          scopeLogs: [{ scope: { name: 'app' }, logRecords }],
        },
      ],
    });
    const response = await fetch(`http://127.0.0.1:${values['http-port']}/v1/logs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${apiKey}` },
      body,
    });
    if (response.status !== 200) throw new Error(`OTLP POST: ${response.status} ${await response.text()}`);
  }
  await sleep(1100);
}
const ingestEnd = new Date(Date.now() + 2000);
for (const view of ['processes', 'log_entries'])
  await client.query(
    `SELECT * FROM materialize_partitions('${view}', '${ingestBegin.toISOString()}', '${ingestEnd.toISOString()}', 1)`,
  );
const partitions = Number(
  (
    await client.query(
      "SELECT count(*) AS n FROM list_partitions() WHERE view_set_name = 'log_entries' AND file_path IS NOT NULL",
    )
  ).get(0).n,
);
console.error(
  `bench: ${rows} entries in ${partitions} partitions, ingested and materialized in ${((Date.now() - started) / 1000).toFixed(1)} s`,
);

const lastDay = new Date(Number((base + BigInt(days - 1) * dayNanos) / 1_000_000n))
  .toISOString()
  .replace('T', ' ')
  .replace('Z', '');
const queries = [
  [
    'one service, its errors by level',
    `SELECT level, count(*) AS n FROM log_entries WHERE exe = 'svc-3' AND level <= 3 GROUP BY level ORDER BY level`,
  ],
  [
    'the last day, per service',
    `SELECT exe, count(*) AS n FROM log_entries WHERE time >= '${lastDay}' GROUP BY exe ORDER BY exe`,
  ],
  [
    'timeouts of two services',
    `SELECT count(*) AS n FROM log_entries WHERE exe IN ('svc-1', 'svc-2') AND msg ILIKE '%timeout%'`,
  ],
  [
    'top pods (no filter)',
    `SELECT properties->>'pod' AS pod, count(*) AS n FROM log_entries GROUP BY pod ORDER BY n DESC, pod LIMIT 5`,
  ],
];

const plain = (table) =>
  JSON.stringify(
    table.toArray().map((r) => r.toJSON()),
    (_k, v) => (typeof v === 'bigint' ? v.toString() : v),
  );
const median = (list) => [...list].sort((a, b) => a - b)[Math.floor(list.length / 2)];
const timed = async (sql) => {
  let table = await client.query(sql);
  const times = [];
  for (let i = 0; i < repeats; i++) {
    const start = process.hrtime.bigint();
    table = await client.query(sql);
    times.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  const provenance = table.schema.metadata.get('orrery.provenance');
  const read = provenance ? JSON.parse(provenance).partitions?.[0] : undefined;
  return { ms: median(times), answer: plain(table), skipped: read?.skipped ?? 0 };
};

const without = [];
for (const [, sql] of queries) without.push(await timed(sql));

mkdirSync(join(values.dir, 'resources'), { recursive: true });
writeFileSync(
  join(values.dir, 'resources', 'logs.resources.json'),
  JSON.stringify({
    resources: {
      time_minmax: { index: { table: 'log_entries', column: 'time', kind: 'minmax' } },
      exe_set: { index: { table: 'log_entries', column: 'exe', kind: 'set' } },
    },
  }),
);
const publishStart = Date.now();
const err = [];
const status = await runResourcesCli(
  ['--dir', values.dir],
  { env: { ORRERY_FLIGHT_SQL_ADDR: address, ORRERY_API_KEY: apiKey }, out: () => {}, err: (l) => err.push(l) },
  'publish',
);
if (status !== 0) throw new Error(`publish failed: ${err.join('\n')}`);
const publishSeconds = (Date.now() - publishStart) / 1000;

const results = [];
let ok = true;
for (const [i, [name, sql]] of queries.entries()) {
  const withIndexes = await timed(sql);
  const same = withIndexes.answer === without[i].answer;
  ok &&= same;
  results.push({
    query: name,
    sql,
    partitions,
    skipped: withIndexes.skipped,
    without_ms: Number(without[i].ms.toFixed(1)),
    with_ms: Number(withIndexes.ms.toFixed(1)),
    ratio: Number((without[i].ms / withIndexes.ms).toFixed(2)),
    same_answer: same,
  });
}
client.close();

console.log(
  `Orrery resources: ${rows} log entries in ${partitions} partitions (${days} days, one service each), median of ${repeats}; publish (backfill of 2 indexes) ${publishSeconds.toFixed(1)} s`,
);
const header = `${'query'.padEnd(34)} ${'skipped'.padStart(9)} ${'without ms'.padStart(11)} ${'with ms'.padStart(9)} ${'ratio'.padStart(7)}  answer`;
console.log(header);
console.log('-'.repeat(header.length));
for (const r of results)
  console.log(
    `${r.query.padEnd(34)} ${`${r.skipped}/${r.partitions}`.padStart(9)} ${r.without_ms.toFixed(1).padStart(11)} ${r.with_ms.toFixed(1).padStart(9)} ${r.ratio.toFixed(2).padStart(7)}  ${r.same_answer ? 'same' : 'DIFFERS'}`,
  );
console.log('ratio = time without indexes / time with them');
console.log(
  JSON.stringify({ bench: 'resources', rows, days, partitions, repeats, publish_s: publishSeconds, results, ok }),
);
process.exitCode = ok ? 0 : 1;
