// Issue 17: a rollup still being backfilled (a resources file's target: it holds buckets from its covered range on,
// and reads the buckets before it from the source's raw rows until backfill steps reach them) keeps the buckets a
// series table's retention took rows of, as every rollup does; a read takes those stored, not from the raw rows left
// before the covered range (a fragment of the bucket, or nothing).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { plain, plainRows, scalar, useLakeOrrery, type TestKey } from '../lakehouse/lakehouse-fixtures.js';
import { readAfterWrite } from '../support/flight-transactions.js';

const admin: TestKey = { name: 'admin', key: 'admin-key-backfill-kept-01', audiences: ['public'] };
const teamX: TestKey = { name: 'team-x', key: 'team-x-key-backfill-kept-01', audiences: ['team_x'] };

describe("a bucket retention kept before a backfilling rollup's covered range (#17)", () => {
  const lake = useLakeOrrery({ keys: [admin, teamX], role: 'all', env: { ORRERY_ROLLUP_REFRESH_JOBS: 'off' } });

  it('is read stored, whole, by every key, the raw rows before the range still read', async () => {
    const asAdmin = lake.client(admin);
    const asX = lake.client(teamX);
    await asAdmin.updateCount(`CREATE TABLE bf (ts TIMESTAMPTZ, k INTEGER, v BIGINT) WITH (time_column = 'ts')`);
    // 2024's hour, past the retention set below: retention removes its rows and keeps the bucket. Three days ago:
    // before the covered range, within the retention.
    await asAdmin.updateCount(
      `INSERT INTO bf (ts, k, v, audience) VALUES
         ('2024-01-01 00:10:00+00', 1, 1, 'public'), ('2024-01-01 00:20:00+00', 1, 2, 'public'),
         ('2024-01-01 00:30:00+00', 2, 4, 'public'), ('2024-01-01 00:40:00+00', 3, 8, 'team_x')`,
    );
    await asAdmin.updateCount(
      `INSERT INTO bf (ts, k, v, audience) VALUES (now() - INTERVAL 3 DAY, 1, 16, 'public'), (now() - INTERVAL 3 DAY, 3, 32, 'team_x')`,
    );
    await asAdmin.updateCount(`INSERT INTO bf (ts, k, v, audience) VALUES (now(), 1, 64, 'public')`);
    await scalar(
      asAdmin,
      `SELECT create_rollup('bf_hourly', 'bf', INTERVAL '1 hour', select_list => 'k, count(*) AS n, sum(v)::BIGINT AS s', group_by => 'k')`,
    );
    await scalar(asAdmin, `SELECT refresh_rollup('bf_hourly')`);
    // Where a target's backfill steps have reached a day ago (create_rollup of a target starts it at now's hour, each
    // step moves it a day down): its buckets before are read from the raw rows.
    const [{ covered }] = await plainRows(
      asAdmin,
      `SELECT CAST(time_bucket(INTERVAL 1 HOUR, now()::TIMESTAMP - INTERVAL 1 DAY) AS VARCHAR) AS covered`,
    );
    await lake.orrery.metadata.query(`UPDATE rollup_definitions SET covered_from = $1 WHERE name = 'bf_hourly'`, [
      covered,
    ]);
    const read = `SELECT bucket, k, n::INT AS n, s::INT AS s, audience FROM bf_hourly ORDER BY ALL`;
    const source = `SELECT time_bucket(INTERVAL 1 HOUR, ts) AS bucket, k, count(*)::INT AS n, sum(v)::INT AS s, audience FROM bf GROUP BY ALL ORDER BY ALL`;
    const [asAdminBefore, asXBefore] = [await plainRows(asAdmin, source), await plainRows(asX, source)];
    assert.equal(asAdminBefore.length, 6);
    assert.deepEqual(await plainRows(asAdmin, read), asAdminBefore);
    assert.deepEqual(await plainRows(asX, read), asXBefore);

    await asAdmin.query(`SELECT * FROM set_retention('bf', '30 days')`);
    await lake.orrery.daemon!.housekeeping();
    assert.equal(await scalar(asAdmin, `SELECT count(*) FROM bf WHERE ts < TIMESTAMP '2025-01-01'`), 0);
    // 2024's hour as before the retention, every key's rows of it; the days after as the raw rows are.
    assert.deepEqual(await plainRows(asAdmin, read), asAdminBefore);
    assert.deepEqual(await plainRows(asX, read), asXBefore);
    // So in a client's transaction that wrote the table (whose reads take every other bucket from the raw rows).
    const old = (rows: Array<Record<string, unknown>>) => rows.filter((r) => Number(r.bucket) < Date.UTC(2025, 0, 1));
    const written = (
      await readAfterWrite(asAdmin, `INSERT INTO bf (ts, k, v, audience) VALUES (now(), 1, 128, 'public')`, read)
    )
      .toArray()
      .map((r) => plain(r.toJSON()));
    assert.deepEqual(old(written), old(asAdminBefore));
  });
});
