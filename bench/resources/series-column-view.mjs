// Stored column on a series table, at the engine (no server): ROWS rows of JSON attributes in DAYS DuckLake files, a
// column entry's stored column filled by UPDATE as `orrery publish` fills it, then rows written since (NEW); the same
// statements timed in turn over the view a statement reads the table through without the column (tableRows: the
// expression computed) and with it (seriesColumnsView: the column read below the fill's row id, computed above),
// median of REPEATS, and the ratio. Exits 1 when an answer differs. Usage: node bench/resources/series-column-view.mjs
// [--rows N] [--days N] [--new N] [--repeats N]; needs a build (dist/) and the DuckLake extension (npm run build).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { DuckDBInstance } from '@duckdb/node-api';
import { duckdbBuild, extensionCacheFolder, extensionFile } from '../../dist/src/engine/extensions.js';
import { lakeCatalog, seriesColumnsView, tableRows } from '../../dist/src/tables/index.js';

const { values } = parseArgs({
  options: {
    rows: { type: 'string', default: '2000000' },
    days: { type: 'string', default: '10' },
    new: { type: 'string', default: '20000' },
    repeats: { type: 'string', default: '5' },
  },
});
const [rows, days, added, repeats] = [values.rows, values.days, values.new, values.repeats].map(Number);
const dir = mkdtempSync(join(tmpdir(), 'orrery-series-column-'));
const instance = await DuckDBInstance.create(':memory:', { threads: '2' });
const c = await instance.connect();
const text = (v) => JSON.stringify(v, (_, x) => (typeof x === 'bigint' ? x.toString() : x));
const all = async (sql) => text((await c.runAndReadAll(sql)).getRows());
try {
  await c.run(`LOAD '${extensionFile(extensionCacheFolder(await duckdbBuild()), 'ducklake')}'`);
  await c.run(
    `ATTACH 'ducklake:${dir}/catalog.ducklake' AS ${lakeCatalog} (DATA_PATH '${dir}/data/', DATA_INLINING_ROW_LIMIT 0)`,
  );
  const lake = `${lakeCatalog}.main.pods`;
  await c.run(`CREATE TABLE ${lake} (ts TIMESTAMP, attrs VARCHAR, msg VARCHAR, audience VARCHAR)`);
  for (let d = 0; d < days; d++)
    await c.run(
      `INSERT INTO ${lake} SELECT TIMESTAMP '2024-01-01' + INTERVAL ${d} DAY + to_seconds(i // 4),
         '{"pod": "pod-' || (hash(i) % 500) || '", "ns": "default", "node": "node-' || (i % 40) || '"}', 'line ' || i,
         CASE WHEN i % 10 = 0 THEN 'team_x' ELSE 'public' END FROM range(${Math.floor(rows / days)}) t(i)`,
    );
  const expression = "json_extract_string(attrs, 'pod')";
  const column = {
    name: '__orr_bench',
    viewSet: 'pods',
    entryKey: 'pod',
    expression,
    storedType: 'VARCHAR',
    expressionType: 'VARCHAR',
  };
  await c.run(`ALTER TABLE ${lake} ADD COLUMN __orr_bench VARCHAR`);
  await c.run(`UPDATE ${lake} SET __orr_bench = ${expression}`);
  const [[next]] = (await c.runAndReadAll(`SELECT max(rowid) + 1 FROM ${lake}`)).getRows();
  await c.run(
    `INSERT INTO ${lake} SELECT TIMESTAMP '2024-02-01' + to_seconds(i), '{"pod": "pod-' || (i % 500) || '"}', 'new',
       'public', NULL FROM range(${added}) t(i)`,
  );
  const [[snapshot]] = (await c.runAndReadAll(`SELECT id FROM ${lakeCatalog}.current_snapshot()`)).getRows();
  const table = { name: 'pods', columns: [], timeColumn: 'ts' };
  const scope = { kind: 'audiences', audiences: ['public'] };
  const fill = { column: column.name, tableId: '1', snapshot: BigInt(snapshot), nextRowId: BigInt(next) };
  const views = {
    without: [`CREATE OR REPLACE TEMP VIEW pods AS ${tableRows('pods', scope)}`, expression],
    with: [seriesColumnsView(table, [{ column, fill }], scope, BigInt(snapshot)), '__orr_bench'],
  };
  const statements = {
    'one pod': (e) => `SELECT count(*) FROM pods WHERE ${e} = 'pod-7'`,
    'top pods': (e) => `SELECT ${e} AS pod, count(*) AS n FROM pods GROUP BY ALL ORDER BY n DESC, pod LIMIT 5`,
  };
  console.log(
    `${rows} rows in ${days} files, ${added} written since the fill; load ${(await import('node:os')).loadavg()[0].toFixed(1)}`,
  );
  let differs = false;
  for (const [name, statement] of Object.entries(statements)) {
    const times = { without: [], with: [] };
    const answers = {};
    for (let i = 0; i < repeats; i++)
      for (const [kind, [view, e]] of Object.entries(views)) {
        await c.run(view);
        const started = performance.now();
        answers[kind] = await all(statement(e));
        times[kind].push(performance.now() - started);
      }
    const median = (xs) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)];
    const [a, b] = [median(times.without), median(times.with)];
    if (answers.without !== answers.with) differs = true;
    console.log(
      `${name}: expression ${a.toFixed(0)} ms, stored column ${b.toFixed(0)} ms, ${(a / b).toFixed(2)}x${answers.without === answers.with ? '' : ' ANSWERS DIFFER'}`,
    );
  }
  process.exitCode = differs ? 1 : 0;
} finally {
  c.closeSync();
  instance.closeSync();
  rmSync(dir, { recursive: true, force: true });
}
