// Rollup rewrite, raw and rollup alternately (issue 14): against a server whose `requests` table and
// rollups bench.mjs made (KEEP_DATA=1), each panel and its raw twin (the same SQL over a subquery of
// the table, which no rollup answers) run one after the other, REPEATS times, so both see the same
// load. Prints per panel the rollup read and the median (and least) time of each.
//   node bench/rollup-rewrite/twins.mjs --flight-port <port> [--repeats 7]
import { parseArgs } from 'node:util';
import { FlightSqlClient } from '../../dist/src/client/index.js';
import { panels } from './panels.mjs';

const { values } = parseArgs({
  options: { 'flight-port': { type: 'string' }, repeats: { type: 'string', default: '7' } },
});
const repeats = Number(values.repeats);
const client = await FlightSqlClient.connect({
  address: `127.0.0.1:${values['flight-port']}`,
  apiKey: 'admin-key-0123',
});
const rawTwin = (sql) => sql.replace(' from requests ', ' from (select * from requests) as requests ');
const stats = (times) => {
  const sorted = [...times].sort((a, b) => a - b);
  return { median: sorted[Math.floor(sorted.length / 2)], min: sorted[0] };
};
const ms = (x) => x.toFixed(1).padStart(7);
console.log('panel | read | rollup ms median (least) | raw ms median (least) | raw/rollup');
const results = [];
for (const [name, sql] of panels) {
  const times = { rollup: [], raw: [] };
  let read = 'raw';
  for (let i = 0; i < repeats; i++) {
    for (const [kind, text] of [
      ['rollup', sql],
      ['raw', rawTwin(sql)],
    ]) {
      const start = process.hrtime.bigint();
      const table = await client.query(text);
      times[kind].push(Number(process.hrtime.bigint() - start) / 1e6);
      if (kind === 'rollup')
        read =
          JSON.parse(table.schema.metadata.get('orrery.provenance') ?? '{"resources":[]}').resources[0]?.rollup?.name ??
          'raw';
    }
  }
  const [a, b] = [stats(times.rollup), stats(times.raw)];
  results.push({ panel: name, read, rollup_ms: a.median, raw_ms: b.median });
  console.log(
    `${name} | ${read} | ${ms(a.median)} (${ms(a.min)}) | ${ms(b.median)} (${ms(b.min)}) | ${(b.median / a.median).toFixed(2)}x`,
  );
}
// The variant measured, for native-ab.sh: its BENCH_MODE (before/after), or the addon's on/off.
const mode = process.env.BENCH_MODE ?? process.env.ORRERY_NATIVE ?? null;
console.log(JSON.stringify({ bench: 'rollup-rewrite-twins', mode, results }));
client.close();
