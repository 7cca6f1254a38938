// Issue 14 (and 13's index pruning, f73eeff): when an index skips a view set's partition by a bound written
// with now(), the statement runs with now() fixed to the value pruning compared. Its rollup rewrite is kept
// for the next statement of the same text as any other's (keyed on the clock calls, its bounds read with the
// fixed value), not made again each time, and answers as one made anew.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Table } from 'apache-arrow';
import { runResourcesCli } from '../../src/resources/index.js';
import { metricValue } from '../support/metric-value.js';
import { adminKey, useOrrery } from '../support/orrery-process.js';
import { logsRequest, pastInsertTimes, postOtlp } from '../support/otlp.js';
import { materializeLogs } from '../support/publish.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const provenanceOf = (table: Table): { partitions?: unknown; resources?: unknown } =>
  JSON.parse(table.schema.metadata.get('orrery.provenance') ?? '{}') as { partitions?: unknown; resources?: unknown };

describe('a rollup rewrite of a statement whose now() index pruning fixed (issue 14)', () => {
  // Whole hours plus raw edges for any window, however few rows the hours replace.
  const fixture = useOrrery({ ORRERY_ROLLUP_RAW_EDGES_MIN_ROWS: '0' });
  const dir = mkdtempSync(join(tmpdir(), 'orrery-fixed-clock-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  const rewrites = async (outcome: 'made' | 'kept'): Promise<number> =>
    (await metricValue(fixture.orrery.httpPort, `orrery_rollup_rewrites_total\\{outcome="${outcome}"\\}`)) || 0;

  before(async () => {
    // Two partitions: records of two days ago, then records of ten minutes ago (a second apart by insert time).
    const start = Math.floor(Date.now() / 1000);
    const now = BigInt(Date.now()) * 1_000_000n;
    const minute = 60_000_000_000n;
    for (const [i, ago] of [2n * 24n * 60n * minute, 10n * minute].entries()) {
      const logs = [0, 1, 2].map((j) => ({ time: now - ago + BigInt(j), severity: 9, body: `entry ${i}.${j}` }));
      const sent = await postOtlp(
        fixture.orrery.httpPort,
        'logs',
        adminKey.key,
        logsRequest({ 'service.name': `svc${i}` }, logs.slice(0, 2 + i)),
      );
      assert.equal(sent.status, 200, sent.text);
      await sleep(1100);
    }
    await materializeLogs(fixture.admin, start - 2, pastInsertTimes());
    mkdirSync(join(dir, 'resources'), { recursive: true });
    const resources = { time_minmax: { index: { table: 'log_entries', column: 'time', kind: 'minmax' } } };
    writeFileSync(join(dir, 'resources', 'logs.resources.json'), JSON.stringify({ resources }));
    const err: string[] = [];
    const env = { ORRERY_FLIGHT_SQL_ADDR: fixture.orrery.address, ORRERY_API_KEY: adminKey.key };
    const status = await runResourcesCli(['--dir', dir], { env, out: () => {}, err: (l) => err.push(l) }, 'publish');
    assert.equal(status, 0, err.join('\n'));
    // A series table with a daily rollup, which a subquery of the statement reads (log_entries has none).
    const run = (sql: string) => fixture.admin.query(sql);
    await run(`CREATE TABLE metrics (ts TIMESTAMPTZ, host VARCHAR, cpu DOUBLE) WITH (time_column = 'ts')`);
    await run(`INSERT INTO metrics SELECT TIMESTAMPTZ '2024-01-01 00:00:00+00' + i * INTERVAL '37 minutes', 'a',
                 (i % 7)::DOUBLE FROM range(0, 400) t(i)`);
    await run(
      `select snouttime.create_rollup('metrics_daily', 'metrics', interval '1 day', select_list => 'count(*) as n, sum(cpu) as s')`,
    );
    await run(`select snouttime.refresh_rollup('metrics_daily')`);
  });

  it('makes the rewrite once and keeps it for the same statement, reading the rollup with the partition skipped', async () => {
    const cpu = (from: string) =>
      `(SELECT sum(cpu) FROM ${from} WHERE ts >= TIMESTAMP '2024-01-01' AND ts < TIMESTAMP '2024-01-03') AS cpu`;
    const sql = `SELECT count(*) AS recent, ${cpu('metrics')} FROM log_entries WHERE time >= now() - INTERVAL 1 DAY`;
    const raw = await fixture.admin.query(`SELECT ${cpu('(SELECT * FROM metrics) AS m')}`);
    const [made, kept] = [await rewrites('made'), await rewrites('kept')];
    for (let i = 0; i < 3; i++) {
      const table = await fixture.admin.query(sql);
      const [row] = table.toArray() as Array<{ recent: bigint; cpu: number }>;
      assert.deepEqual([Number(row.recent), row.cpu], [3, (raw.toArray()[0] as { cpu: number }).cpu]);
      const provenance = provenanceOf(table);
      assert.deepEqual(provenance.partitions, [
        { table: 'log_entries', partitions: 2, skipped: 1, indexes: ['time_minmax'] },
      ]);
      const levels = provenance.resources as Array<{ level: string; rollup: { name: string } | null }>;
      assert.deepEqual(
        levels.map((l) => [l.level, l.rollup?.name]),
        [['main subquery 1', 'metrics_daily']],
      );
    }
    assert.deepEqual([(await rewrites('made')) - made, (await rewrites('kept')) - kept], [1, 2]);
  });
});
