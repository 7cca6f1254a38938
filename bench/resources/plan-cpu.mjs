// The server CPU one text search's planning costs (explain_resources, which plans a statement as it would run:
// partition lists, index statistics, postings, copy ranges, the views' setup, without running it), with the
// text index and without it (the same WHERE `OR false`, which no index decides), in blocks that alternate.
// CPU, not time: the server process's utime + stime from /proc, which the machine's load hardly moves.
// With --execute, the statements are run instead (DuckDB's threads are the server's too), and their wall time is
// given beside the CPU; --search <n> keeps bench.mjs's n-th search alone (4: the word every partition holds).
//
//   node bench/resources/plan-cpu.mjs --flight-port <port> --pid <server pid> [--rounds 8] [--per 15]
//     [--execute] [--search <n>]
//
// Against a server on the data of `KEEP_DATA=1 KIND=text ... bash bench/resources/run.sh` (plan-cpu.sh
// runs it against two builds in turn).
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { FlightSqlClient } from '../../dist/src/client/index.js';

const { values } = parseArgs({
  options: {
    'flight-port': { type: 'string' },
    pid: { type: 'string' },
    rounds: { type: 'string', default: '8' },
    per: { type: 'string', default: '15' },
    execute: { type: 'boolean', default: false },
    search: { type: 'string' },
  },
});
const [rounds, per] = [Number(values.rounds), Number(values.per)];
const client = new FlightSqlClient({
  address: `127.0.0.1:${values['flight-port']}`,
  tls: false,
  apiKey: 'admin-key-0123',
});
/** The server's CPU so far, ms (clock ticks of 10 ms). */
const cpu = () => {
  const fields = readFileSync(`/proc/${values.pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
};
// bench.mjs's text searches.
const textSearches = [
  "SELECT exe, count(*) AS n FROM log_entries WHERE msg ILIKE '%timeout%' GROUP BY exe ORDER BY exe",
  "SELECT time, exe, msg FROM log_entries WHERE msg ILIKE '%timeout%' ORDER BY time DESC LIMIT 20",
  "SELECT count(*) AS n FROM log_entries WHERE contains(msg, 'timeout')",
  "SELECT count(*) AS n FROM log_entries WHERE msg ILIKE '%request%'",
];
const searches = values.search === undefined ? textSearches.slice(0, 3) : [textSearches[Number(values.search) - 1]];
const planned = values.execute
  ? (sql) => sql
  : (sql) => `SELECT * FROM explain_resources('${sql.replaceAll("'", "''")}')`;
const withoutIndex = (sql) => sql.replace(/WHERE (.*?)( GROUP| ORDER|$)/, 'WHERE ($1 OR false)$2');
/** Server CPU and wall time per statement of a block, ms. */
const perStatement = async (statements) => {
  const [before, start] = [cpu(), process.hrtime.bigint()];
  for (let i = 0; i < per; i++) for (const sql of statements) await client.query(sql);
  const n = per * statements.length;
  return { cpu: (cpu() - before) / n, wall: Number(process.hrtime.bigint() - start) / 1e6 / n };
};
for (const sql of searches) for (const s of [sql, withoutIndex(sql)]) await client.query(planned(s));
const [withIndex, without] = [[], []];
// The two sides' blocks in turn, A B then B A, so neither always runs right after the other.
for (let r = 0; r < rounds; r++) {
  const a = () => perStatement(searches.map(planned));
  const b = () => perStatement(searches.map((s) => planned(withoutIndex(s))));
  if (r % 2 === 0) {
    withIndex.push(await a());
    without.push(await b());
  } else {
    without.push(await b());
    withIndex.push(await a());
  }
}
client.close();
const median = (list) => [...list].sort((a, b) => a - b)[list.length >> 1];
const [w, wo] = ['cpu', 'wall'].map((k) => [withIndex, without].map((list) => median(list.map((x) => x[k]))));
console.log(
  `server CPU per ${values.execute ? 'statement' : 'planning'}: ${w[0].toFixed(2)} ms with the text index, ${w[1].toFixed(2)} without, ${(w[0] - w[1]).toFixed(2)} more; wall time ${wo[0].toFixed(1)} / ${wo[1].toFixed(1)} ms (${(wo[1] / wo[0]).toFixed(2)}x) (medians of ${rounds} blocks of ${per} x ${searches.length} statements)`,
);
console.log(
  JSON.stringify({
    bench: values.execute ? 'resources-query-cpu' : 'resources-plan-cpu',
    ref: process.env.ORRERY_REF_SHA ?? null,
    searches,
    with_ms: w[0],
    without_ms: w[1],
    wall_with_ms: wo[0],
    wall_without_ms: wo[1],
  }),
);
