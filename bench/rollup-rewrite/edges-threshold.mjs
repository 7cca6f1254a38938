// Where whole rollup buckets plus raw edges start to cost less than raw (issue 14: ORRERY_ROLLUP_RAW_EDGES_MIN_ROWS's
// default): against a server started with ORRERY_ROLLUP_RAW_EDGES_MIN_ROWS=0 (every window off bucket boundaries read
// with raw edges) on bench.mjs's data (DATA_DIR), the raw-edges panel's statement over windows of several lengths,
// each open at its end and starting off the hour, and its raw twin (the same SQL over a subquery of the table, which no
// rollup answers: what the rewrite reads below the threshold), alternated A B B A, --repeats times. Prints per window
// the raw rows the whole buckets replace (what the threshold is compared with), the server's CPU per statement (its
// process tree, Postgres included) and the median time of each side, and raw/edges. With --inlined, one row is
// written at now() first (small enough for DuckLake to inline it in the catalog, as small ingestion writes are) and
// deleted at the end: the edges then read the table through DuckLake's scan, not its files (Rollups.edgeRows).
//   ORRERY_ROLLUP_RAW_EDGES_MIN_ROWS=0 ... orrery serve on the data, then
//   node bench/rollup-rewrite/edges-threshold.mjs --flight-port <port> --server-pid <pid> [--repeats 9] [--hours 2,6,24]
import { parseArgs } from 'node:util';
import { FlightSqlClient } from '../../dist/src/client/index.js';
import { loadAverage, median } from '../catalog-probe.mjs';
import { processTreeCpuMs } from '../process-cpu.mjs';

const { values } = parseArgs({
  options: {
    'flight-port': { type: 'string' },
    'server-pid': { type: 'string' },
    repeats: { type: 'string', default: '9' },
    hours: { type: 'string', default: '1,2,4,8,16,24,48,96,168' },
    inlined: { type: 'boolean', default: false },
  },
});
const repeats = Number(values.repeats);
const serverPid = Number(values['server-pid']);
const client = await FlightSqlClient.connect({
  address: `127.0.0.1:${values['flight-port']}`,
  apiKey: 'admin-key-0123',
});
const one = async (sql) => (await client.query(sql)).get(0).toJSON();
const literal = (ms) => `TIMESTAMP '${new Date(ms).toISOString().slice(0, 23).replace('T', ' ')}'`;
// The windows end with the data (bench.mjs's rows end when they were generated), 17 minutes past an hour less
// each window's hours, so each starts off the hour with a partial first hour as its edge.
const { last } = await one('select epoch_ms(max(ts)) as last from requests');
const end = Math.floor(Number(last) / 3600e3) * 3600e3 + 17 * 60e3;
const panel = (from) =>
  `select service, count(*) as n from requests where ts >= ${literal(from)} group by service order by service`;
const rawTwin = (sql) => sql.replace(' from requests ', ' from (select * from requests) as requests ');
const readOf = (table) =>
  JSON.parse(table.schema.metadata.get('orrery.provenance') ?? '{"resources":[]}').resources[0]?.rollup?.name ?? 'raw';

const now = literal(Math.floor(Date.now() / 1000) * 1000);
if (values.inlined) await client.executeUpdate(`insert into requests values (${now}, 'edges-threshold', 'ok', 1)`);
const loadBefore = loadAverage();
console.log(
  'window h | read | rows replaced | edge rows | cpu ms edges / raw | raw/edges cpu | ms edges / raw | raw/edges ms',
);
const results = [];
for (const hours of values.hours.split(',').map(Number)) {
  const from = end - hours * 3600e3;
  const whole = Math.ceil(from / 3600e3) * 3600e3;
  const { replaced, edge } = await one(
    `select count(*) filter (where ts >= ${literal(whole)}) as replaced, count(*) filter (where ts < ${literal(whole)}) as edge from requests where ts >= ${literal(from)}`,
  );
  const sides = { edges: panel(from), raw: rawTwin(panel(from)) };
  const figures = { edges: { cpu: [], ms: [] }, raw: { cpu: [], ms: [] } };
  let read = 'raw';
  for (const [, sql] of Object.entries(sides)) for (let i = 0; i < 2; i++) await client.query(sql); // warm
  for (let i = 0; i < repeats; i++)
    for (const kind of i % 2 === 0 ? ['edges', 'raw'] : ['raw', 'edges']) {
      const cpu0 = processTreeCpuMs(serverPid);
      const t0 = process.hrtime.bigint();
      const table = await client.query(sides[kind]);
      figures[kind].ms.push(Number(process.hrtime.bigint() - t0) / 1e6);
      figures[kind].cpu.push(processTreeCpuMs(serverPid) - cpu0);
      if (kind === 'edges') read = readOf(table);
    }
  // CPU in 10 ms ticks: the mean of the repeats, not the median, so the ticks average out.
  const mean = (list) => list.reduce((a, b) => a + b, 0) / list.length;
  const row = {
    hours,
    read,
    replaced: Number(replaced),
    edge: Number(edge),
    cpu: { edges: mean(figures.edges.cpu), raw: mean(figures.raw.cpu) },
    ms: { edges: median(figures.edges.ms), raw: median(figures.raw.ms) },
  };
  results.push(row);
  console.log(
    `${hours} | ${read} | ${row.replaced} | ${row.edge} | ${row.cpu.edges.toFixed(1)} / ${row.cpu.raw.toFixed(1)} | ${(row.cpu.raw / row.cpu.edges).toFixed(2)}x | ${row.ms.edges.toFixed(1)} / ${row.ms.raw.toFixed(1)} | ${(row.ms.raw / row.ms.edges).toFixed(2)}x`,
  );
}
console.log(
  `load average ${loadBefore} before, ${loadAverage()} after; ${repeats} repeats per side, alternated${values.inlined ? '; one row inlined at now()' : ''}`,
);
if (values.inlined)
  await client.executeUpdate(`delete from requests where ts = ${now} and service = 'edges-threshold'`);
console.log(JSON.stringify({ bench: 'rollup-rewrite-edges-threshold', results }));
client.close();
