// Issue 13: what a series table's retention keeps of a rollup's buckets when its rows fail the rollup's aggregate
// (rollups.lost_buckets): per audience whether one audience fails or every one, and for as long as the bucket is
// the rollup's (its own retention deletes both). Retention runs in the daemon's housekeeping; the refreshes are the
// test's (refresh_rollup: no refresh job runs here), so each step's outcome is the test's to predict.
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { plainRows, scalar, useLakeOrrery, type TestKey } from '../lakehouse/lakehouse-fixtures.js';
import type { TestFlightClient } from '../support/flight-client.js';

const admin: TestKey = { name: 'admin', key: 'admin-key-lost-0001', audiences: ['ops'] };
const teamA: TestKey = { name: 'team-a', key: 'team-a-key-lost-0001', audiences: ['team-a'] };
const teamB: TestKey = { name: 'team-b', key: 'team-b-key-lost-0001', audiences: ['team-b'] };

describe("a series table's retention over rows that fail a rollup's aggregate (#13)", () => {
  const lake = useLakeOrrery({
    keys: [admin, teamA, teamB],
    role: 'all',
    env: { ORRERY_ROLLUP_REFRESH_JOBS: 'off' },
  });
  let asAdmin: TestFlightClient;
  let asTeamA: TestFlightClient;
  let asTeamB: TestFlightClient;

  before(() => {
    asAdmin = lake.client(admin);
    asTeamA = lake.client(teamA);
    asTeamB = lake.client(teamB);
  });

  /** The refresh job as a key sees it: its status and the head of each of its audience lines (errors cut off). */
  const job = async (client: TestFlightClient) =>
    (await plainRows(client, `SELECT last_status, last_error FROM snouttime.jobs WHERE target = 'notes_hourly'`)).map(
      (r) => ({
        last_status: r.last_status,
        lines: ((r.last_error as string | null) ?? '')
          .split('\n')
          .filter((l) => l.startsWith('audience '))
          .map((l) => l.replace(/(rows|Conversion Error): .*$/, '$1')),
      }),
    );
  const lost = (audience: string): string =>
    `audience ${audience}: retention of notes kept bucket 2024-01-01 00:00:00 without this audience's rows`;
  const refresh = () => scalar(asAdmin, `select snouttime.refresh_rollup('notes_hourly')`);

  it("when every audience's rows fail, retention records each audience's lost bucket, and the refresh after it says so as when one fails", async () => {
    await asAdmin.updateCount(`CREATE TABLE notes (ts TIMESTAMPTZ, note VARCHAR) WITH (time_column = 'ts')`);
    await asTeamA.updateCount(`INSERT INTO notes VALUES ('2024-01-01 00:10:00+00', 'team-a oops')`);
    await asTeamB.updateCount(`INSERT INTO notes VALUES ('2024-01-01 00:20:00+00', 'team-b oops')`);
    await asTeamA.updateCount(`INSERT INTO notes VALUES (now(), '5')`);
    await scalar(
      asAdmin,
      `select snouttime.create_rollup('notes_hourly', 'notes', interval '1 hour', select_list => 'sum(CAST(note AS INTEGER)) AS total')`,
    );
    // Every audience of the hour fails: the refresh holds the hour for each, each audience told its own error.
    assert.equal(await refresh(), 1);
    assert.deepEqual(await job(asTeamA), [{ last_status: 'partial', lines: [`audience team-a: Conversion Error`] }]);
    await asAdmin.query(`SELECT * FROM set_retention('notes', '30 days')`);
    await lake.orrery.daemon!.housekeeping();
    assert.equal(await scalar(asAdmin, 'SELECT count(*) FROM notes'), 1);
    // Nothing of the hour could be kept: no row of it, for any key, and no read of it fails.
    const old = `SELECT total FROM notes_hourly WHERE bucket < TIMESTAMP '2025-01-01'`;
    for (const client of [asAdmin, asTeamA, asTeamB]) assert.deepEqual(await plainRows(client, old), []);
    // The held hour is kept now (its raw rows are gone): nothing is left to recompute.
    assert.equal(await refresh(), 0);
    assert.deepEqual(await job(asAdmin), [{ last_status: 'ok', lines: [lost('team-a'), lost('team-b')] }]);
    assert.deepEqual(await job(asTeamA), [{ last_status: 'ok', lines: [lost('team-a')] }]);
    assert.deepEqual(await job(asTeamB), [{ last_status: 'ok', lines: [lost('team-b')] }]);
  });

  it("a lost bucket's record goes with the bucket, when the rollup's own retention deletes it", async () => {
    await asAdmin.query(`SELECT * FROM set_rollup_retention('notes_hourly', INTERVAL '30 days')`);
    assert.equal(await refresh(), 0);
    for (const client of [asAdmin, asTeamA, asTeamB])
      assert.deepEqual(await job(client), [{ last_status: 'ok', lines: [] }]);
  });
});
