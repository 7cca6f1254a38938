// "One pod, its latest 20" bounded by time (#13, PROFILE.md section 6): the statement as the dashboard sends it (a
// top-N by time over the view set: before the server bounded it, DuckDB opened every partition file, 121 at 10 M rows)
// against the same statement with `AND time >= '<its 20th row's time>'` added by hand (the same answer: no row below the
// 20th can be in it), which event-time pruning turns into the few newest partitions: the most a bound can save. Server
// CPU and wall per statement, blocks of --per alternating, medians; the answers are checked equal.
//
//   node bench/resources/latest-bound.mjs --flight-port <port> --pid <server pid> [--rounds 4] [--per 10]
// (latest-bound.sh starts the server of each build on a kept data folder, builds alternated)
import assert from 'node:assert/strict';
import { parseArgs } from 'node:util';
import { FlightSqlClient } from '../../dist/src/client/index.js';
import { processTreeCpu } from '../process-cpu.mjs';

const { values } = parseArgs({
  options: {
    'flight-port': { type: 'string' },
    pid: { type: 'string' },
    rounds: { type: 'string', default: '4' },
    per: { type: 'string', default: '10' },
  },
});
const [rounds, per, pid] = [Number(values.rounds), Number(values.per), Number(values.pid)];
const client = await FlightSqlClient.connect({
  address: `127.0.0.1:${values['flight-port']}`,
  apiKey: 'admin-key-0123',
});
const latest = `SELECT time, msg FROM log_entries WHERE properties->>'pod' = 'pod-7' ORDER BY time DESC LIMIT 20`;
const rows = async (sql) => (await client.query(sql)).toArray().map((r) => ({ ...r.toJSON() }));
/** Partitions not read: skipped by a WHERE on time, or left out of a bounded latest-n read (its first run's). */
const skipped = async (sql) => {
  const provenance = JSON.parse((await client.query(sql)).schema.metadata.get('orrery.provenance') ?? '{}');
  const [newest] = provenance.newest_first ?? [];
  if (newest?.bounded) return `${newest.partitions - newest.bounded.partitions} (bounded)`;
  return provenance.partitions?.[0]?.skipped ?? 0;
};
const [{ t }] = await rows(`SELECT CAST(min(time) AS VARCHAR) AS t FROM (${latest})`);
const bounded = latest.replace('ORDER BY', `AND time >= '${t}' ORDER BY`);
const queries = { 'latest 20': latest, 'latest 20, time >= its 20th': bounded };
const answers = await Promise.all(Object.values(queries).map(rows));
// The same rows (ties on time may come in another order, as SQL leaves them).
const sorted = (list) => list.map((r) => JSON.stringify(r, (_, v) => (typeof v === 'bigint' ? String(v) : v))).sort();
assert.deepEqual(sorted(answers[1]), sorted(answers[0]));
console.log(
  `20th row's time ${t}; partitions skipped: ${(await Promise.all(Object.values(queries).map(skipped))).join(' / ')}`,
);
const blocks = Object.fromEntries(Object.keys(queries).map((name) => [name, []]));
for (let r = 0; r < rounds; r++) {
  const names = Object.keys(queries);
  for (const name of r % 2 === 0 ? names : names.reverse()) {
    const [before, start] = [processTreeCpu(pid).own, process.hrtime.bigint()];
    for (let i = 0; i < per; i++) await client.query(queries[name]);
    blocks[name].push({
      cpu: (processTreeCpu(pid).own - before) / per,
      wall: Number(process.hrtime.bigint() - start) / 1e6 / per,
    });
  }
}
client.close();
const median = (list) => [...list].sort((a, b) => a - b)[Math.floor(list.length / 2)];
const summary = Object.fromEntries(
  Object.entries(blocks).map(([name, list]) => [
    name,
    { cpu: median(list.map((b) => b.cpu)), wall: median(list.map((b) => b.wall)) },
  ]),
);
for (const [name, s] of Object.entries(summary))
  console.log(
    `${name.padEnd(30)} server CPU ${s.cpu.toFixed(1).padStart(6)} ms  wall ${s.wall.toFixed(1).padStart(7)} ms`,
  );
const [a, b] = Object.values(summary);
console.log(`ratio (unbounded / bounded): CPU ${(a.cpu / b.cpu).toFixed(2)}x, wall ${(a.wall / b.wall).toFixed(2)}x`);
