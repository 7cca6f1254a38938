// Small bulk ingests (CommandStatementIngest, as ADBC's adbc_ingest sends them), one after the other: what a client
// waits for each, this tree's server against --base's, alternated (A B A B ...) on the same Postgres and lake
// (bench/catalog-probe.mjs). Issue 12: an ingest makes sure its upload's end was not a client's reset (a PING round
// trip, src/flight/upload-fate.ts) before it commits; this shows what that costs the ingests it is least hidden in.
//
//   node bench/ingest/small-ingest.mjs --base <tree with dist/ built> [--repeats 101] [--rows 1,100,10000]
import { resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { makeVector, Table, TimestampNanosecond } from 'apache-arrow';
import { alternately, catalogProbe, loadAverage, median } from '../catalog-probe.mjs';

const { values } = parseArgs({
  options: {
    base: { type: 'string' },
    repeats: { type: 'string', default: '101' },
    rows: { type: 'string', default: '1,100,10000' },
  },
});
if (!values.base) throw new Error('--base <tree> is required: the server to compare with');
const root = fileURLToPath(new URL('../..', import.meta.url));
const { packAny, tableToFlightData } = await import(pathToFileURL(join(root, 'dist/src/wire/index.js')).href);

let next = 0;
/** `rows` rows of (ts, v), each ingest at new timestamps. */
function batch(rows) {
  const first = next;
  next += rows;
  return tableToFlightData(
    new Table({
      ts: makeVector({
        type: new TimestampNanosecond('UTC'),
        data: BigInt64Array.from({ length: rows }, (_, i) => 1_714_557_600_000_000_000n + BigInt(first + i) * 1000n),
      }),
      v: makeVector(Float64Array.from({ length: rows }, (_, i) => i / 7)),
    }),
  );
}

const probe = await catalogProbe(root, 'orrery-small-ingest-');
try {
  const servers = [
    { label: 'this', client: await probe.startServer(root, 'this') },
    { label: 'base', client: await probe.startServer(resolve(values.base), 'base') },
  ];
  await servers[0].client.executeUpdate(`CREATE TABLE small (ts TIMESTAMPTZ, v DOUBLE) WITH (time_column = 'ts')`);
  const cmd = packAny('CommandStatementIngest', {
    table: 'small',
    tableDefinitionOptions: { ifNotExist: 2, ifExists: 2 },
  });
  const repeats = Number(values.repeats);
  const loadBefore = loadAverage();
  const results = [];
  for (const rows of values.rows.split(',').map(Number)) {
    const cases = servers.map((s) => {
      let messages;
      return { before: () => void (messages = batch(rows)), run: () => s.client.doPut(cmd, messages) };
    });
    await alternately(cases, 5); // warm-up
    const [ours, theirs] = (await alternately(cases, repeats)).map(median);
    results.push({ rows, ours, theirs });
  }
  console.log(`load average ${loadBefore} before timing, ${loadAverage()} after; medians of ${repeats}, alternated`);
  console.log(`${'rows per ingest'.padEnd(16)} this ms   base ms   this / base`);
  for (const r of results)
    console.log(
      `${String(r.rows).padEnd(16)} ${r.ours.toFixed(2).padStart(7)} ${r.theirs.toFixed(2).padStart(9)} ${(r.ours / r.theirs).toFixed(3).padStart(13)}`,
    );
} finally {
  await probe.close();
}
