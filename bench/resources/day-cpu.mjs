// Where one statement's time goes for by_pod's time-windowed dashboard queries (#13, PROFILE.md): the server's CPU
// (its process's utime + stime from /proc, DuckDB's threads included) and Postgres's (the server's child processes)
// per statement, and its wall time, for the statement served by the projection's copies, its raw twin (the same WHERE
// `OR false`, the pod's key spelled 'po' || 'd': the JSON property read from the partition files) and `SELECT 1` (the
// Flight SQL floor), in blocks of --per that alternate. CPU, not time: the machine's load hardly moves it.
// With --plan, explain_resources of each instead (planning alone, its result rows exported too).
//
//   node bench/resources/day-cpu.mjs --flight-port <port> --pid <server pid> --last-day '<YYYY-MM-DD HH:MM:SS>'
//     [--rounds 4] [--per 10] [--plan]
//
// Against a server on the data of `KEEP_DATA=1 KIND=projection PROJECTION_BY=pod GENERATE=1 ... bash
// bench/resources/run.sh` (day-cpu.sh starts it).
import { parseArgs } from 'node:util';
import { FlightSqlClient } from '../../dist/src/client/index.js';
import { processTreeCpu } from '../process-cpu.mjs';

const { values } = parseArgs({
  options: {
    'flight-port': { type: 'string' },
    pid: { type: 'string' },
    'last-day': { type: 'string' },
    rounds: { type: 'string', default: '4' },
    per: { type: 'string', default: '10' },
    plan: { type: 'boolean', default: false },
  },
});
const [rounds, per, pid] = [Number(values.rounds), Number(values.per), Number(values.pid)];
const client = await FlightSqlClient.connect({
  address: `127.0.0.1:${values['flight-port']}`,
  apiKey: 'admin-key-0123',
});
const day = `time >= '${values['last-day']}'`;
// bench.mjs's by_pod queries of the last day, and their raw twins.
const queries = {
  "one pod's errors, last day": `SELECT level, count(*) AS n FROM log_entries WHERE properties->>'pod' = 'pod-7' AND level <= 2 AND ${day} GROUP BY level ORDER BY level`,
  'the same, raw': `SELECT level, count(*) AS n FROM log_entries WHERE ${day} AND ((properties->>('po' || 'd') = 'pod-7' AND level <= 2) OR false) GROUP BY level ORDER BY level`,
  'one pod, its latest 20': `SELECT time, msg FROM log_entries WHERE properties->>'pod' = 'pod-7' ORDER BY time DESC LIMIT 20`,
  'the same, raw ': `SELECT time, msg FROM log_entries WHERE ((properties->>('po' || 'd') = 'pod-7') OR false) ORDER BY time DESC LIMIT 20`,
  'SELECT 1': 'SELECT 1',
};
const statementOf = (sql) => (values.plan ? `SELECT * FROM explain_resources('${sql.replaceAll("'", "''")}')` : sql);
/** CPU so far (ms) of the server and of its descendants (the embedded Postgres and its backends). */
const cpu = () => {
  const { own, descendants } = processTreeCpu(pid);
  return { server: own, postgres: descendants };
};
for (const sql of Object.values(queries)) await client.query(statementOf(sql));
const blocks = Object.fromEntries(Object.keys(queries).map((name) => [name, []]));
for (let r = 0; r < rounds; r++) {
  const names = Object.keys(queries);
  for (const name of r % 2 === 0 ? names : names.reverse()) {
    const [before, start] = [cpu(), process.hrtime.bigint()];
    for (let i = 0; i < per; i++) await client.query(statementOf(queries[name]));
    const after = cpu();
    blocks[name].push({
      server: (after.server - before.server) / per,
      postgres: (after.postgres - before.postgres) / per,
      wall: Number(process.hrtime.bigint() - start) / 1e6 / per,
    });
  }
}
client.close();
const median = (list) => [...list].sort((a, b) => a - b)[Math.floor(list.length / 2)];
console.log(
  `${values.plan ? 'explain_resources of each' : 'each statement'}: per statement, median of ${rounds} blocks of ${per}`,
);
for (const [name, list] of Object.entries(blocks))
  console.log(
    `${name.padEnd(28)} server CPU ${median(list.map((b) => b.server))
      .toFixed(1)
      .padStart(6)} ms  Postgres CPU ${median(list.map((b) => b.postgres))
      .toFixed(1)
      .padStart(5)} ms  wall ${median(list.map((b) => b.wall))
      .toFixed(1)
      .padStart(7)} ms`,
  );
