// Issues 17 and 14: under steady ingestion (rows at or after a rollup's watermark) every refresh is idle and writes
// nothing, so the rollup's source snapshot stays at its last writing refresh, up to a whole bucket of inserts behind
// the lake's. A process that has not read the rollup yet (a server just started, another of the cluster) finds from
// DuckLake's catalog that those snapshots only inserted rows at or after the watermark, and reads no change feed
// over them; a late row (before the watermark) among them is still read from the feed, and the read stays exact.
// Through real servers of one lake, a Flight SQL client and DuckLake's catalog in Postgres.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  adminAndTeams,
  clientFor,
  plainRows,
  sharedEnv,
  startRole,
  startTestPostgres,
  type InProcessOrrery,
  type TestPostgres,
} from '../lakehouse/lakehouse-fixtures.js';
import { changeFeedReads } from '../support/counted-calls.js';
import type { TestFlightClient } from '../support/flight-client.js';

const [admin] = adminAndTeams('first-read');

describe(
  "a rollup's first read in a process, its source snapshot many inserts behind (issues 17, 14)",
  { timeout: 600_000 },
  () => {
    let postgres: TestPostgres;
    const lakeDir = mkdtempSync(join(tmpdir(), 'orrery-first-read-lake-'));
    let env: Record<string, string>;
    let writer: InProcessOrrery;
    let asWriter: TestFlightClient;
    const started: InProcessOrrery[] = [];
    const clients: TestFlightClient[] = [];

    /** A server of the lake started now: it has read no rollup yet. */
    const freshServer = async (): Promise<TestFlightClient> => {
      const server = await startRole('serve', env);
      started.push(server);
      const client = clientFor(server.flightPort, admin);
      clients.push(client);
      return client;
    };
    const rollup = 'SELECT * FROM steady_daily ORDER BY ALL';
    const raw = `SELECT time_bucket(INTERVAL 1 DAY, ts::TIMESTAMP) AS bucket, host, count(*) AS n, sum(cpu) AS cpu_sum,
    audience FROM steady GROUP BY ALL ORDER BY ALL`;
    /** The rollup read through `client`, and how many change feed reads that read made. */
    const firstRead = async (client: TestFlightClient): Promise<{ rows: unknown[]; reads: number }> => {
      let rows: unknown[] = [];
      const reads = await changeFeedReads('steady', async () => void (rows = await plainRows(client, rollup)));
      return { rows, reads };
    };

    before(async () => {
      postgres = await startTestPostgres();
      env = sharedEnv({ keys: [admin], admins: [admin.name], connectionString: postgres.connectionString, lakeDir });
      // Its refresh jobs off (startRole's serve): the rollup is refreshed when the test says.
      writer = await startRole('serve', env);
      asWriter = clientFor(writer.flightPort, admin);
      await asWriter.query(`CREATE TABLE steady (ts TIMESTAMPTZ, host VARCHAR, cpu DOUBLE) WITH (time_column = 'ts')`);
      await asWriter.query(`INSERT INTO steady SELECT now() - i * INTERVAL '37 minutes', CASE WHEN i % 2 = 0 THEN 'a' ELSE 'b' END,
                            (i % 13)::DOUBLE FROM range(1, 195) t(i)`);
      await asWriter.query(`select snouttime.create_rollup('steady_daily', 'steady', interval '1 day',
                            select_list => 'host, count(*) as n, sum(cpu) as cpu_sum', group_by => 'host')`);
      const [{ ranges }] = await plainRows(asWriter, `SELECT snouttime.refresh_rollup('steady_daily') AS ranges`);
      assert.ok(Number(ranges) > 0, 'the first refresh stored the closed days');
    });
    after(async () => {
      for (const client of [asWriter, ...clients]) client?.close();
      for (const server of [writer, ...started]) await server?.close();
      await postgres?.close();
      rmSync(lakeDir, { recursive: true, force: true });
    });

    it('reads no change feed for inserts at or after the watermark since the last writing refresh; a late row, it does', async () => {
      // Steady ingestion: a snapshot an INSERT into the bucket still filling, and refreshes with nothing to do.
      for (let i = 0; i < 6; i++) {
        await asWriter.query(`INSERT INTO steady VALUES (now(), 'c', ${i}.5)`);
        // A day turning closes a bucket, which a refresh stores (and the source snapshot moves): rare, and harmless here.
        await asWriter.query(`SELECT snouttime.refresh_rollup('steady_daily')`);
      }
      const steady = await firstRead(await freshServer());
      assert.equal(steady.reads, 0, "a fresh server's first read read the change feed of inserts after the watermark");
      assert.deepEqual(steady.rows, await plainRows(asWriter, raw));

      // A late row, in a day stored: its bucket is pending, which only the feed tells (a fresh server again).
      await asWriter.query(`INSERT INTO steady VALUES (now() - INTERVAL 3 DAY, 'late', 1.0)`);
      await asWriter.query(`INSERT INTO steady VALUES (now(), 'c', 9.5)`);
      const late = await firstRead(await freshServer());
      assert.ok(late.reads >= 1, 'the late row was found without reading the feed');
      assert.deepEqual(late.rows, await plainRows(asWriter, raw));
      assert.ok(
        late.rows.some((r) => (r as { host: unknown }).host === 'late'),
        'the late row is in the read',
      );
    });
  },
);
