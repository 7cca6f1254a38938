// The server CPU one text search's planning costs (explain_resources, which plans a statement as it would run:
// partition lists, index statistics, postings, copy ranges, the views' setup, without running it), with the
// text index and without it (the same WHERE `OR false`, which no index decides), in blocks that alternate.
// CPU, not time: the server process's utime + stime from /proc, which the machine's load hardly moves.
//
//   node bench/resources/plan-cpu.mjs --flight-port <port> --pid <server pid> [--rounds 8] [--per 15]
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
const searches = [
  "SELECT exe, count(*) AS n FROM log_entries WHERE msg ILIKE '%timeout%' GROUP BY exe ORDER BY exe",
  "SELECT time, exe, msg FROM log_entries WHERE msg ILIKE '%timeout%' ORDER BY time DESC LIMIT 20",
  "SELECT count(*) AS n FROM log_entries WHERE contains(msg, 'timeout')",
];
const planned = (sql) => `SELECT * FROM explain_resources('${sql.replaceAll("'", "''")}')`;
const withoutIndex = (sql) => sql.replace(/WHERE (.*?)( GROUP| ORDER|$)/, 'WHERE ($1 OR false)$2');
const perStatement = async (statements) => {
  const before = cpu();
  for (let i = 0; i < per; i++) for (const sql of statements) await client.query(sql);
  return (cpu() - before) / (per * statements.length);
};
for (const sql of searches) for (const s of [sql, withoutIndex(sql)]) await client.query(planned(s));
const [withIndex, without] = [[], []];
for (let r = 0; r < rounds; r++) {
  withIndex.push(await perStatement(searches.map(planned)));
  without.push(await perStatement(searches.map((s) => planned(withoutIndex(s)))));
}
client.close();
const median = (list) => [...list].sort((a, b) => a - b)[list.length >> 1];
const [w, wo] = [median(withIndex), median(without)];
console.log(
  `server CPU per planning: ${w.toFixed(2)} ms with the text index, ${wo.toFixed(2)} without, ${(w - wo).toFixed(2)} more (medians of ${rounds} blocks of ${per} x ${searches.length} searches)`,
);
console.log(
  JSON.stringify({ bench: 'resources-plan-cpu', ref: process.env.ORRERY_REF_SHA ?? null, with_ms: w, without_ms: wo }),
);
