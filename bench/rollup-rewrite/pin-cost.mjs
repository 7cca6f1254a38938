// What a 24 h panel costs through the hourly rollup against its raw twin (issue 14, "none slower"): the
// panels of bench.mjs's dashboard that read one day of thirty, and their raw twins (the same SQL over a
// subquery of the table, which no rollup answers), timed alternately (A, B, A, B; medians of --repeats)
// through one `orrery serve` on an embedded Postgres with pg_stat_statements; then, per statement, the
// Postgres statements each side ran by kind (DuckLake's snapshot and catalog reads, Orrery's own): does
// the rollup read's pin to a DuckLake snapshot (`AT (VERSION => n)`) read the catalog more than raw?
//
//   npm run build && node bench/rollup-rewrite/pin-cost.mjs --rows 2000000 --repeats 15   (VERBOSE=1: each query)
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { alternately, catalogProbe, loadAverage, median, printCases } from '../catalog-probe.mjs';
import { panels, requestsRollups, requestsTable } from './panels.mjs';

const { values } = parseArgs({
  options: {
    rows: { type: 'string', default: '2000000' },
    repeats: { type: 'string', default: '15' },
    counted: { type: 'string', default: '5' },
  },
});
const root = process.env.ORRERY_ROOT ?? fileURLToPath(new URL('../..', import.meta.url));
const rows = Number(values.rows);
const probe = await catalogProbe(root, 'orrery-pin-cost-');
try {
  console.error(`bench: load average ${loadAverage()} at start; ${rows} requests over 30 days`);
  const client = await probe.startServer(root, 'orrery');
  // The table and the hourly rollup of bench.mjs.
  for (const sql of requestsTable(rows)) await client.executeUpdate(sql);
  await client.query(requestsRollups[0]);
  await client.query(`select refresh_rollup('requests_hourly')`);

  const provenanceOf = (table) => JSON.parse(table.schema.metadata.get('orrery.provenance') ?? '{"resources":[]}');
  const rowsOf = (table) =>
    JSON.stringify(
      table.toArray().map((r) => r.toJSON()),
      (_k, v) => (typeof v === 'bigint' ? String(v) : v),
    );
  const cases = [];
  for (const [name, sql] of panels.filter(([n]) => n.endsWith('24 h'))) {
    const raw = sql.replace(' from requests ', ' from (select * from requests) as requests ');
    const read = await client.query(sql);
    const [level] = provenanceOf(read).resources;
    if (level?.rollup?.name !== 'requests_hourly') throw new Error(`${name}: read ${JSON.stringify(level)}`);
    if (rowsOf(read) !== rowsOf(await client.query(raw))) throw new Error(`${name}: the rollup's answer is not raw's`);
    cases.push({ name: `${name}: rollup`, run: () => client.query(sql) });
    cases.push({ name: `${name}: raw`, run: () => client.query(raw) });
  }
  cases.push({ name: 'SELECT 1', run: () => client.query('SELECT 1') });
  for (const c of cases) for (let i = 0; i < 3; i++) await c.run(); // warm

  const times = await alternately(cases, Number(values.repeats));
  const perStatement = await probe.postgresPerStatement(cases, Number(values.counted));
  const med = Object.fromEntries(cases.map((c, k) => [c.name, median(times[k])]));
  console.log(
    `load average ${loadAverage()}; medians of ${values.repeats} alternated runs (ms); Postgres statements per statement (of ${values.counted})`,
  );
  printCases(cases, med, perStatement, 48);
  for (let k = 0; k + 1 < cases.length - 1; k += 2)
    console.log(
      `${cases[k].name.replace(': rollup', '')}: raw/rollup ${(med[cases[k + 1].name] / med[cases[k].name]).toFixed(2)}x`,
    );
} finally {
  await probe.close();
}
