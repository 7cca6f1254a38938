// DuckDB's profile of dashboard panels through the server (issue 14): against a server holding bench.mjs's
// data (KEEP_DATA=1 or DATA_DIR), an admin's EXPLAIN ANALYZE of each chosen panel as written (rewritten onto
// its rollup) and of its raw twin, after the provenance of the panel (explain_resources). Prints each plan.
//   node bench/rollup-rewrite/explain-panel.mjs --flight-port <port> [--panels 'raw edges,24 h'] [--raw]
import { parseArgs } from 'node:util';
import { FlightSqlClient } from '../../dist/src/client/index.js';
import { panels } from './panels.mjs';

const { values } = parseArgs({
  options: { 'flight-port': { type: 'string' }, panels: { type: 'string' }, raw: { type: 'boolean' } },
});
const wanted = values.panels?.split(',') ?? null;
const client = await FlightSqlClient.connect({
  address: `127.0.0.1:${values['flight-port']}`,
  apiKey: 'admin-key-0123',
});
const rawTwin = (sql) => sql.replace(' from requests ', ' from (select * from requests) as requests ');
const text = async (sql) =>
  (await client.query(sql))
    .toArray()
    .map((row) => Object.values(row.toJSON()).join('\n'))
    .join('\n');
for (const [name, sql] of panels.filter(([name]) => !wanted || wanted.some((w) => name.includes(w)))) {
  console.log(`== ${name}\n${sql}`);
  console.log(`-- provenance\n${await text(`SELECT * FROM explain_resources('${sql.replaceAll("'", "''")}')`)}`);
  await client.query(sql);
  console.log(`-- rollup read\n${await text(`EXPLAIN ANALYZE ${sql}`)}`);
  if (values.raw) console.log(`-- raw twin\n${await text(`EXPLAIN ANALYZE ${rawTwin(sql)}`)}`);
}
client.close();
