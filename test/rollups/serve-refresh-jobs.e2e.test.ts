// Issue 17 item 6 and the spec's "a refresh job for the rollup starts at once and runs every minute": a real
// `orrery serve` process with no maintenance daemon anywhere runs its rollups' refresh jobs. A rollup created
// there gets its first refresh within seconds (the job's last_run and last_status in Postgres), and its
// closed buckets are then read from the materialized table. With a second server on the same Postgres,
// both run jobs and a new rollup's first run happens once (their refresh counts in /metrics add up to 1).
// A refresh that fails is recorded on its job (last_status, last_error) and retried until it succeeds.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  adminAndTeams,
  clientFor,
  plainRows,
  pollUntil,
  sharedEnv,
  sleep,
  startServeChild,
  startTestPostgres,
  type OrreryChild,
  type TestPostgres,
} from '../lakehouse/lakehouse-fixtures.js';
import { scrapeMetrics } from '../support/metric-value.js';

const [admin] = adminAndTeams('serve-jobs');

describe('orrery serve runs the refresh jobs without a daemon (issue 17)', { timeout: 180_000 }, () => {
  let postgres: TestPostgres;
  const lakeDir = mkdtempSync(join(tmpdir(), 'orrery-serve-jobs-lake-'));
  const dataDir = mkdtempSync(join(tmpdir(), 'orrery-serve-jobs-data-'));
  const dataDirB = mkdtempSync(join(tmpdir(), 'orrery-serve-jobs-data-b-'));
  let serve: OrreryChild | undefined;
  let serveB: OrreryChild | undefined;
  let portA = 0;
  let env: Record<string, string> = {};

  /** How many refresh jobs of `rollup` a server ran, by its /metrics. */
  const refreshesOn = async (child: OrreryChild, rollup: string): Promise<number> => {
    const line = child.output.find((l) => /HTTP \(OTLP.*listening on/.test(l))!;
    const httpPort = /:(\d+)\s*$/.exec(line)![1];
    const text = await scrapeMetrics(httpPort);
    return text
      .split('\n')
      .filter((l) => l.startsWith('orrery_rollup_refresh_duration_seconds_count{') && l.includes(`rollup="${rollup}"`))
      .reduce((sum, l) => sum + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
  };
  const firstRun = (rollup: string) =>
    pollUntil(
      `the first run of ${rollup}'s refresh job, with no daemon`,
      async () =>
        (
          await postgres.pool.query<{ ran: boolean; last_status: string | null; last_error: string | null }>(
            `SELECT last_run IS NOT NULL AS ran, last_status, last_error, next_run > last_run AS rescheduled
               FROM rollup_jobs WHERE kind = 'refresh' AND target = $1`,
            [rollup],
          )
        ).rows,
      (rows) => rows[0]?.ran === true,
      { timeoutMs: 30_000, intervalMs: 200 },
    );

  before(async () => {
    postgres = await startTestPostgres();
  });
  after(async () => {
    await Promise.all([serve?.stop(), serveB?.stop()]);
    await postgres?.close();
    for (const d of [lakeDir, dataDir, dataDirB]) rmSync(d, { recursive: true, force: true });
  });

  it("a rollup created on a serve process gets its first refresh within seconds: the job's last_run and last_status", async () => {
    env = {
      ...sharedEnv({ keys: [admin], admins: [admin.name], connectionString: postgres.connectionString, lakeDir }),
      ORRERY_DATA_DIR: dataDir,
    };
    const started = await startServeChild(env);
    serve = started.child;
    portA = started.port;
    const client = clientFor(started.port, admin);
    try {
      await client.updateCount(
        `CREATE TABLE readings (ts TIMESTAMPTZ, host VARCHAR, v DOUBLE) WITH (time_column = 'ts')`,
      );
      // Two closed hours of 2024: a refresh materializes both, whatever the time of day the test runs at.
      await client.updateCount(
        `INSERT INTO readings VALUES ('2024-01-01 00:10:00+00', 'a', 1.0), ('2024-01-01 01:20:00+00', 'a', 2.0)`,
      );
      await client.query(
        `select snouttime.create_rollup('readings_hourly', 'readings', interval '1 hour',
          select_list => 'host, count(*) as n, sum(v) as v_sum', group_by => 'host')`,
      );
      const [job] = await firstRun('readings_hourly');
      assert.deepEqual(job, { ran: true, last_status: 'ok', last_error: null, rescheduled: true });
      assert.ok(serve.running, serve.tail());
      // The refresh stored the closed buckets: the rollup's materialized table holds both hours.
      assert.deepEqual(
        await plainRows(client, `SELECT bucket, host, n, v_sum FROM readings_hourly_materialized ORDER BY bucket`),
        [
          { bucket: Date.parse('2024-01-01T00:00:00Z'), host: 'a', n: 1, v_sum: 1 },
          { bucket: Date.parse('2024-01-01T01:00:00Z'), host: 'a', n: 1, v_sum: 2 },
        ],
      );
    } finally {
      client.close();
    }
  });

  it('two servers on one Postgres: a new rollup made on one is refreshed once for its first run, not by both', async () => {
    const started = await startServeChild({ ...env, ORRERY_DATA_DIR: dataDirB });
    serveB = started.child;
    const client = clientFor(started.port, admin);
    try {
      await client.query(
        `select snouttime.create_rollup('readings_daily', 'readings', interval '1 day',
          select_list => 'host, count(*) as n', group_by => 'host')`,
      );
      const [job] = await firstRun('readings_daily');
      assert.deepEqual(job, { ran: true, last_status: 'ok', last_error: null, rescheduled: true });
      // Both servers look every second; the next run is a minute away, so any second run would be double work.
      await sleep(3000);
      const counts = [await refreshesOn(serve!, 'readings_daily'), await refreshesOn(serveB, 'readings_daily')];
      assert.equal(counts[0] + counts[1], 1, `refresh runs by server A and B: ${counts.join(', ')}`);
      assert.ok(serve!.running && serveB.running);
    } finally {
      client.close();
    }
  });
  it("a refresh whose rows fail the aggregate is recorded on its job, and its held bucket refreshed again at the job's next run", async () => {
    const client = clientFor(portA, admin);
    try {
      await client.updateCount(`CREATE TABLE codes (ts TIMESTAMPTZ, code VARCHAR) WITH (time_column = 'ts')`);
      // A code that is not a number makes every aggregation of its hour fail, the refresh's included: the hour is held.
      await client.updateCount(
        `INSERT INTO codes VALUES ('2024-01-01 00:10:00+00', '7'), ('2024-01-01 00:20:00+00', 'x')`,
      );
      await client.query(
        `select snouttime.create_rollup('codes_hourly', 'codes', interval '1 hour',
          select_list => 'sum(CAST(code AS INTEGER)) as total')`,
      );
      const [held] = await firstRun('codes_hourly');
      assert.equal(held.last_status, 'partial');
      const { rows: errors } = await postgres.pool.query<{ errors: string }>(
        `SELECT audience_errors::text AS errors FROM rollup_jobs WHERE kind = 'refresh' AND target = 'codes_hourly'`,
      );
      assert.match(errors[0].errors, /Could not convert|Conversion/i);
      // Once the row is corrected, the job's next run (its schedule made a second) stores the hour.
      await client.updateCount(`UPDATE codes SET code = '8' WHERE code = 'x'`);
      await client.query(`select set_job_schedule('codes_hourly', interval '1 second')`);
      await pollUntil(
        'the next run',
        async () =>
          (
            await postgres.pool.query<{ last_status: string | null }>(
              `SELECT last_status FROM rollup_jobs WHERE kind = 'refresh' AND target = 'codes_hourly'`,
            )
          ).rows[0]?.last_status,
        (status) => status === 'ok',
        { timeoutMs: 30_000, intervalMs: 200 },
      );
      assert.deepEqual(
        await plainRows(client, `SELECT CAST(total AS INTEGER) AS total FROM codes_hourly_materialized`),
        [{ total: 15 }],
      );
    } finally {
      client.close();
    }
  });
});
