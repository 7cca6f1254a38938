// Issue 14: a statement whose window moves with the clock (`ts >= now() - INTERVAL 5 HOUR`) has new bounds
// at every run. Its rewrite is made again from the one kept for its text, the bounds worked out from the
// clock without DuckDB (orrery_rollup_rewrites_total{outcome="remade"}), and reads and reports what one
// made anew would: the window now() gives, each skipped rollup's reason with that window, raw rows'
// answer. So is one a month long (`now() - INTERVAL '1 month'`), its bounds worked out by calendar arithmetic.
// What is kept across statements is dropped when another process changes the rollups.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Table } from 'apache-arrow';
import { DuckDBEngine } from '../../src/engine/index.js';
import {
  adminAndTeams,
  clientFor,
  plain,
  plainRows,
  sharedEnv,
  startRole,
  startTestPostgres,
  type InProcessOrrery,
  type TestPostgres,
} from '../lakehouse/lakehouse-fixtures.js';
import type { TestFlightClient } from '../support/flight-client.js';
import { countedCalls } from '../support/counted-calls.js';
import { metricValue } from '../support/metric-value.js';

const [admin] = adminAndTeams('rewrite-clock');
const hourMs = 3_600_000;

interface Level {
  rollup: { name: string; window: { from: string }; buckets?: { from: string } } | null;
  skipped_rollup: Array<{ name: string; reason: string }>;
}
const levelOf = (table: Table): Level =>
  (JSON.parse(table.schema.metadata.get('orrery.provenance') ?? '{}') as { resources: Level[] }).resources[0];
const rawTwin = (sql: string): string => sql.replace(' from metrics ', ' from (select * from metrics) as metrics ');

describe('rollup rewrites of windows that move with the clock (issue 14)', { timeout: 180_000 }, () => {
  let postgres: TestPostgres;
  const lakeDir = mkdtempSync(join(tmpdir(), 'orrery-rewrite-clock-lake-'));
  let first: InProcessOrrery;
  let second: InProcessOrrery;
  let asFirst: TestFlightClient;
  let asSecond: TestFlightClient;
  const rewrites = async (outcome: 'made' | 'kept' | 'remade'): Promise<number> =>
    (await metricValue(first.httpPort, `orrery_rollup_rewrites_total\\{outcome="${outcome}"\\}`)) || 0;

  before(async () => {
    postgres = await startTestPostgres();
    const env = {
      ...sharedEnv({ keys: [admin], admins: [admin.name], connectionString: postgres.connectionString, lakeDir }),
      // Whole hours plus raw edges for any window, however few rows the hours replace.
      ORRERY_ROLLUP_RAW_EDGES_MIN_ROWS: '0',
    };
    first = await startRole('serve', env);
    second = await startRole('serve', env);
    asFirst = clientFor(first.flightPort, admin);
    asSecond = clientFor(second.flightPort, admin);
    await asFirst.query(`CREATE TABLE metrics (ts TIMESTAMPTZ, host VARCHAR, cpu DOUBLE) WITH (time_column = 'ts')`);
    // Rows every 7 minutes over the last 7 hours.
    await asFirst.query(`INSERT INTO metrics SELECT now() - i * INTERVAL '7 minutes', CASE WHEN i % 2 = 0 THEN 'a' ELSE 'b' END,
                           (i % 13)::DOUBLE FROM range(0, 60) t(i)`);
    await asFirst.query(`select snouttime.create_rollup('metrics_hourly', 'metrics', interval '1 hour',
                           select_list => 'host, count(*) as n, max(cpu) as cpu_max', group_by => 'host')`);
    await asFirst.query(`select snouttime.create_rollup('metrics_daily', 'metrics_hourly', interval '1 day',
                           select_list => 'host, sum(n) as n, max(cpu_max) as cpu_max', group_by => 'host')`);
    await asFirst.query(`select snouttime.refresh_rollup('metrics_hourly')`);
    await asFirst.query(`select snouttime.refresh_rollup('metrics_daily')`);
  });
  after(async () => {
    asFirst?.close();
    asSecond?.close();
    await first?.close();
    await second?.close();
    await postgres?.close();
    rmSync(lakeDir, { recursive: true, force: true });
  });

  /** The statement's level and rows as read on the first server, with the clock before and after it (ms). */
  const read = async (
    sql: string,
  ): Promise<{ level: Level; rows: Array<Record<string, unknown>>; before: number; after: number }> => {
    const before = Date.now();
    const table = await asFirst.query(sql);
    const rows = table.toArray().map((row) => plain(row.toJSON() as Record<string, unknown>));
    return { level: levelOf(table), rows, before, after: Date.now() };
  };
  /** Whether an instant's text is within five hours before the clock of a read. */
  const fiveHoursBefore = (text: string, at: { before: number; after: number }): boolean => {
    const ms = Date.parse(text);
    return ms >= at.before - 5 * hourMs - 1 && ms <= at.after - 5 * hourMs;
  };

  /**
   * Reads a statement four times: each reads metrics_hourly from a start `startsWell` accepts (`check` looks at
   * the rest) and answers its raw twin's rows; the starts all differ, and the rewrite was made twice (the
   * statement, its raw twin, which is kept after) and remade three times.
   */
  const readsRemade = async (
    sql: string,
    startsWell: (from: string, at: { before: number; after: number }) => boolean,
    check: (rollup: NonNullable<Level['rollup']>) => void = () => {},
  ): Promise<void> => {
    const [made, remade] = [await rewrites('made'), await rewrites('remade')];
    const starts: string[] = [];
    for (let i = 0; i < 4; i++) {
      const at = await read(sql);
      const { rollup } = at.level;
      assert.equal(rollup?.name, 'metrics_hourly');
      assert.ok(startsWell(rollup.window.from, at), `${rollup.window.from} at ${at.before}-${at.after}`);
      check(rollup);
      starts.push(rollup.window.from);
      assert.deepEqual(at.rows, await plainRows(asFirst, rawTwin(sql)));
    }
    assert.equal(new Set(starts).size, 4, starts.join(', '));
    assert.deepEqual([(await rewrites('made')) - made, (await rewrites('remade')) - remade], [2, 3]);
  };

  it('remakes a kept rewrite read with raw edges without DuckDB: the window now() gives, whole hours from its next hour, raw rows answer', async () => {
    const sql = `select host, count(*) as n, max(cpu) as top from metrics where ts >= now() - interval 5 hour group by host order by host`;
    await readsRemade(sql, fiveHoursBefore, (rollup) => {
      const whole = Date.parse(rollup.buckets!.from);
      assert.equal(whole % hourMs, 0);
      assert.ok(whole >= Date.parse(rollup.window.from) && whole - Date.parse(rollup.window.from) <= hourMs);
    });
  });

  it('remakes a level read raw the same way, each skipped rollup with the reason its window gives now', async () => {
    const sql = `select host, count(*) as n from metrics where ts >= now() - interval 5 hour and cpu > 3 group by host order by host`;
    const [made, remade] = [await rewrites('made'), await rewrites('remade')];
    for (let i = 0; i < 3; i++) {
      const at = await read(sql);
      assert.equal(at.level.rollup, null);
      const reasons = Object.fromEntries(at.level.skipped_rollup.map((s) => [s.name, s.reason]));
      assert.equal(reasons.metrics_hourly, 'dimension missing: cpu is not a dimension of the rollup');
      const daily =
        /^window not aligned: (\S+) is not on a 1 day bucket boundary \(a rollup of a rollup reads no raw edges\)$/.exec(
          reasons.metrics_daily,
        );
      assert.ok(daily && fiveHoursBefore(daily[1], at), `${reasons.metrics_daily} at ${at.before}-${at.after}`);
      assert.deepEqual(at.rows, await plainRows(asFirst, rawTwin(sql)));
    }
    assert.deepEqual([(await rewrites('made')) - made, (await rewrites('remade')) - remade], [2, 2]);
  });

  it('remakes a window a month long from the clock too, its start as DuckDB gives it', async () => {
    // Its start a month before now() (not a fixed length): before, made anew by DuckDB at every run.
    const sql = `select host, count(*) as n from metrics where ts >= now() - interval '1 month' group by host order by host`;
    const day = 24 * hourMs;
    await readsRemade(sql, (from, at) => {
      const start = Date.parse(from);
      return start >= at.before - 31 * day && start <= at.after - 28 * day;
    });
  });

  it("works out bounds from the current date, decimal intervals, Orrery's clock by its own name and ago() without DuckDB, and reads as raw rows do", async () => {
    /** The DuckDB evaluations of constants while `work` runs. */
    const evaluations = (work: () => Promise<void>): Promise<number> =>
      countedCalls(DuckDBEngine.prototype, 'constantTexts', work);
    for (const sql of [
      `select host, count(*) as n from metrics where ts >= current_date - 1 group by host order by host`,
      `select host, count(*) as n from metrics where ts >= now() - interval '1.5 hours' group by host order by host`,
      // now() calls it (views/sql-functions.ts): the same clock, which DuckDB evaluated at every rewrite.
      `select host, count(*) as n from metrics where ts >= __orrery_now() - interval 5 hour group by host order by host`,
      // DuckDB's ago(x) is current_timestamp - CAST(x AS INTERVAL), Orrery's clock again: read as now() - x.
      `select host, count(*) as n from metrics where ts >= ago(interval 5 hour) group by host order by host`,
      `select host, count(*) as n from metrics where ts >= ago('90 minutes') group by host order by host`,
    ]) {
      const reads: Array<Awaited<ReturnType<typeof read>>> = [];
      assert.equal(await evaluations(async () => void reads.push(await read(sql), await read(sql))), 0, sql);
      for (const at of reads) {
        assert.ok(at.level.rollup, sql);
        assert.deepEqual(at.rows, await plainRows(asFirst, rawTwin(sql)));
      }
    }
  });

  it('reads the rollups another process created, refreshed and dropped at the next statement', async () => {
    const sql = `select host, count(*) as n from metrics where ts >= now() - interval 5 hour group by host order by host`;
    const names = (level: Level): string[] => [level.rollup?.name ?? 'raw', ...level.skipped_rollup.map((s) => s.name)];
    for (let i = 0; i < 2; i++) assert.equal((await read(sql)).level.rollup?.name, 'metrics_hourly');
    await asSecond.query(`select snouttime.create_rollup('metrics_quarter', 'metrics', interval '15 minutes',
                            select_list => 'host, count(*) as n', group_by => 'host')`);
    const created = (await read(sql)).level;
    assert.deepEqual(names(created), ['metrics_hourly', 'metrics_daily', 'metrics_quarter']);
    assert.equal(
      created.skipped_rollup.find((s) => s.name === 'metrics_quarter')?.reason,
      'not ready: the rollup has not been refreshed yet',
    );
    await asSecond.query(`select snouttime.refresh_rollup('metrics_quarter')`);
    assert.equal(
      (await read(sql)).level.skipped_rollup.find((s) => s.name === 'metrics_quarter')?.reason,
      'a coarser rollup answers the level (metrics_hourly)',
    );
    await asSecond.query(`select drop_rollup('metrics_daily')`);
    await asSecond.query(`select drop_rollup('metrics_hourly')`);
    const dropped = await read(sql);
    assert.deepEqual(names(dropped.level), ['metrics_quarter']);
    assert.deepEqual(dropped.rows, await plainRows(asFirst, rawTwin(sql)));
  });
});
