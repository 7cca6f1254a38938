// Issue 13: a series table's retention over an audience whose rows a rollup's aggregate cannot keep for want of
// memory (its sketch states past the maintenance engine's limit, ORRERY_MAINTENANCE_MEMORY_LIMIT, where retention
// runs, as in test/sql/rollup-held-out-of-memory.test): that audience's expired rows stay for a later run (nothing
// recorded lost, as a failed cast's would be), and the other audiences' retention proceeds, their buckets kept; a
// later run with the memory stores that audience's buckets, read the same before and after.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  clientFor,
  plainRows,
  scalar,
  startRole,
  useLakeOrrery,
  type InProcessOrrery,
  type TestKey,
} from '../lakehouse/lakehouse-fixtures.js';
import type { TestFlightClient } from '../support/flight-client.js';
import { readAfterWrite } from '../support/flight-transactions.js';

const admin: TestKey = { name: 'admin', key: 'admin-key-oom-0001', audiences: ['public'] };
const teamX: TestKey = { name: 'team-x', key: 'team-x-key-oom-0001', audiences: ['team_x'] };
const teamY: TestKey = { name: 'team-y', key: 'team-y-key-oom-0001', audiences: ['team_y'] };

describe("a series table's retention over an audience's rows past the memory limit (#13)", () => {
  const lake = useLakeOrrery({
    keys: [admin, teamX, teamY],
    role: 'all',
    env: {
      ORRERY_ROLLUP_REFRESH_JOBS: 'off',
      ORRERY_DUCKDB_MEMORY_LIMIT: '32MiB',
      ORRERY_MAINTENANCE_MEMORY_LIMIT: '32MiB',
    },
  });
  let asAdmin: TestFlightClient;
  // A server of the same lake without the memory limits, started by the last case: the squeeze over.
  let roomy: InProcessOrrery | undefined;
  const roomyClients: TestFlightClient[] = [];

  before(() => {
    asAdmin = lake.client(admin);
  });
  after(async () => {
    for (const client of roomyClients) client.close();
    await roomy?.close();
  });

  const counts = async () =>
    (await plainRows(asAdmin, 'SELECT audience, count(*)::INT AS n FROM samples GROUP BY ALL ORDER BY ALL')).map(
      (r) => [r.audience, r.n],
    );

  it("keeps the failing audience's expired rows and records nothing lost; the others' rows go, their buckets kept", async () => {
    await asAdmin.updateCount(`CREATE TABLE samples (ts TIMESTAMPTZ, k INTEGER, v DOUBLE) WITH (time_column = 'ts')`);
    await asAdmin.updateCount(
      `INSERT INTO samples (ts, k, v, audience) VALUES (TIMESTAMPTZ '2024-01-01 00:10:00+00', 1, 2.5, 'public'), ('2024-01-01 00:20:00+00', 2, 4.0, 'team_x')`,
    );
    await asAdmin.updateCount(`INSERT INTO samples (ts, k, v, audience) VALUES (now(), 3, 1.0, 'public')`);
    // team_y: 32 keys of about 73,000 log buckets of a percentile sketch each, past the 32 MiB its states may take.
    await asAdmin.updateCount(
      `INSERT INTO samples (ts, k, v, audience) SELECT TIMESTAMPTZ '2024-01-01 00:30:00+00', i % 32, pow(1.02, (i // 32) - 37000), 'team_y' FROM range(32 * 74000) t(i)`,
    );
    await scalar(
      asAdmin,
      `select snouttime.create_rollup('samples_hourly', 'samples', interval '1 hour', select_list => 'k, percentile_sketch(v) AS p, count(*) AS n', group_by => 'k')`,
    );
    await scalar(asAdmin, `select snouttime.refresh_rollup('samples_hourly')`);
    await asAdmin.query(`SELECT * FROM set_retention('samples', '30 days')`);
    await lake.orrery.daemon!.housekeeping();
    assert.deepEqual(await counts(), [
      ['public', 1],
      ['team_y', 32 * 74000],
    ]);
    assert.deepEqual(
      await plainRows(
        asAdmin,
        `SELECT audience, k, n::INT AS n FROM samples_hourly WHERE bucket < TIMESTAMP '2025-01-01' AND audience <> 'team_y' ORDER BY ALL`,
      ),
      [
        { audience: 'public', k: 1, n: 1 },
        { audience: 'team_x', k: 2, n: 1 },
      ],
    );
    await scalar(asAdmin, `select snouttime.refresh_rollup('samples_hourly')`);
    const [{ last_error: error }] = await plainRows(
      asAdmin,
      `SELECT last_error FROM snouttime.jobs WHERE target = 'samples_hourly'`,
    );
    assert.doesNotMatch(String(error), /without this audience's rows/);
    assert.match(String(error), /^audience team_y: retention of samples postponed: /m);
  });

  /** The old hour of samples_hourly as a key reads it. */
  const oldHour = (client: TestFlightClient) =>
    plainRows(
      client,
      `SELECT audience, k, n::INT AS n FROM samples_hourly WHERE bucket < TIMESTAMP '2025-01-01' ORDER BY ALL`,
    );
  const job = async (client: TestFlightClient) =>
    plainRows(client, `SELECT last_status, last_error FROM snouttime.jobs WHERE target = 'samples_hourly'`);

  it('tells a key of another audience nothing of the postponed rows, and reads it its hour, after a refresh as before', async () => {
    const asTeamX = lake.client(teamX);
    const theirs = [
      { audience: 'public', k: 1, n: 1 },
      { audience: 'team_x', k: 2, n: 1 },
    ];
    assert.deepEqual(await oldHour(asTeamX), theirs);
    assert.deepEqual(await job(asTeamX), [{ last_status: 'ok', last_error: null }]);
    // The refresh leaves the kept hour as retention stored it (it read no raw row of public or team_x, gone).
    await scalar(asAdmin, `select snouttime.refresh_rollup('samples_hourly')`);
    assert.deepEqual(await oldHour(asTeamX), theirs);
    assert.equal((await job(lake.client(teamY)))[0].last_status, 'ok');
    assert.match(
      String((await job(lake.client(teamY)))[0].last_error),
      /^audience team_y: retention of samples postponed: /,
    );
  });

  it('stores the postponed buckets at a later run with the memory: team_y reads its hour the same before and after', async () => {
    const env = { ...lake.env };
    delete env.ORRERY_DUCKDB_MEMORY_LIMIT;
    delete env.ORRERY_MAINTENANCE_MEMORY_LIMIT;
    roomy = await startRole('all', env);
    const [asRoomyAdmin, asRoomyY] = [admin, teamY].map((key) => clientFor(roomy!.flightPort, key));
    roomyClients.push(asRoomyAdmin, asRoomyY);
    const team = [
      { audience: 'public', k: 1, n: 1 },
      ...Array.from({ length: 32 }, (_, k) => ({ audience: 'team_y', k, n: 74000 })),
    ];
    // Meanwhile team_y's hour is read from its raw rows, exactly; in a client's transaction that wrote the table too
    // (whose reads take every bucket retention did not keep from the raw rows).
    assert.deepEqual(await oldHour(asRoomyY), team);
    const written = (
      await readAfterWrite(
        asRoomyAdmin,
        `INSERT INTO samples (ts, k, v, audience) VALUES (now(), 4, 1.0, 'public')`,
        `SELECT audience, k, n::INT AS n FROM samples_hourly WHERE bucket < TIMESTAMP '2025-01-01' AND audience = 'team_y' ORDER BY ALL`,
      )
    )
      .toArray()
      .map((r) => ({ ...r.toJSON() }));
    assert.deepEqual(written, team.slice(1));
    await roomy.daemon!.housekeeping();
    assert.deepEqual(await counts(), [['public', 1]]);
    assert.deepEqual(await oldHour(asRoomyY), team);
    assert.deepEqual(
      (await oldHour(asRoomyAdmin)).filter((r) => r.audience !== 'team_y'),
      [
        { audience: 'public', k: 1, n: 1 },
        { audience: 'team_x', k: 2, n: 1 },
      ],
    );
    // Nothing postponed nor lost is told any more.
    assert.doesNotMatch(String((await job(asRoomyAdmin))[0].last_error), /retention of samples/);
  });
});

// Issue 17: the same squeeze when the rollup's last refresh is older than the table's retention (refresh jobs off, on
// a long schedule or failing): the expired rows, team_y's postponed among them, lie at or after the watermark, where a
// read aggregates the raw rows; the buckets retention kept are read as stored, team_y's rows of them once, as before.
describe("a series table's retention past a rollup's watermark over an audience's rows past the memory limit (#17)", () => {
  const lake = useLakeOrrery({
    keys: [admin, teamX, teamY],
    role: 'all',
    // The maintenance engine alone squeezed: retention runs there, the reads on the roomy query engine.
    env: { ORRERY_ROLLUP_REFRESH_JOBS: 'off', ORRERY_MAINTENANCE_MEMORY_LIMIT: '32MiB' },
  });
  const rollupRows = (client: TestFlightClient) =>
    plainRows(client, `SELECT audience, k, n::INT AS n FROM samples_hourly ORDER BY ALL`);
  /** The rows samples_hourly gives in a client's transaction that wrote samples (a row of k 99, left out). */
  const writtenRows = async (client: TestFlightClient) => {
    const rows = (
      await readAfterWrite(
        client,
        `INSERT INTO samples (ts, k, v, audience) VALUES (now(), 99, 1.0, 'public')`,
        `SELECT audience, k, n::INT AS n FROM samples_hourly WHERE k <> 99 ORDER BY ALL`,
      )
    )
      .toArray()
      .map((r) => ({ ...r.toJSON() }));
    return rows.map((r) => ({ ...r, n: Number(r.n) }));
  };

  it("reads the kept buckets past the watermark as before retention, the postponed audience's rows once", async () => {
    const asAdmin = lake.client(admin);
    const [asX, asY] = [teamX, teamY].map((key) => lake.client(key));
    await asAdmin.updateCount(`CREATE TABLE samples (ts TIMESTAMPTZ, k INTEGER, v DOUBLE) WITH (time_column = 'ts')`);
    await scalar(
      asAdmin,
      `select snouttime.create_rollup('samples_hourly', 'samples', interval '1 hour', select_list => 'k, percentile_sketch(v) AS p, count(*) AS n', group_by => 'k')`,
    );
    // The watermark: the hour refreshed in; every row below is written after it, so at or after the watermark.
    await scalar(asAdmin, `select snouttime.refresh_rollup('samples_hourly')`);
    await asAdmin.updateCount(
      `INSERT INTO samples (ts, k, v, audience) VALUES (now(), 1, 2.5, 'public'), (now(), 2, 4.0, 'team_x')`,
    );
    await asAdmin.updateCount(
      `INSERT INTO samples (ts, k, v, audience) SELECT now(), i % 32, pow(1.02, (i // 32) - 37000), 'team_y' FROM range(32 * 74000) t(i)`,
    );
    const raw = await plainRows(
      asAdmin,
      `SELECT audience, k, count(*)::INT AS n FROM samples GROUP BY ALL ORDER BY ALL`,
    );
    const before = await Promise.all([asAdmin, asX, asY].map(rollupRows));
    assert.deepEqual(before[0], raw);
    assert.equal(before[0].length, 34);
    // Retention shorter than the time since the refresh: every row expires, team_y's postponed.
    await asAdmin.query(`SELECT * FROM set_retention('samples', '1 second')`);
    await new Promise((resolve) => setTimeout(resolve, 2000));
    await lake.orrery.daemon!.housekeeping();
    assert.deepEqual(
      await plainRows(asAdmin, 'SELECT audience, count(*)::INT AS n FROM samples GROUP BY ALL ORDER BY ALL'),
      [{ audience: 'team_y', n: 32 * 74000 }],
    );
    const [{ last_error: error }] = await plainRows(
      asAdmin,
      `SELECT last_error FROM snouttime.jobs WHERE target = 'samples_hourly'`,
    );
    assert.match(String(error), /^audience team_y: retention of samples postponed: /m);
    assert.deepEqual(await Promise.all([asAdmin, asX, asY].map(rollupRows)), before);
    assert.deepEqual(await writtenRows(asAdmin), before[0]);
    // A refresh leaves the kept buckets as retention stored them, team_y's still read from its rows.
    await scalar(asAdmin, `select snouttime.refresh_rollup('samples_hourly')`);
    assert.deepEqual(await Promise.all([asAdmin, asX, asY].map(rollupRows)), before);
    assert.deepEqual(await writtenRows(asAdmin), before[0]);
  });

  it('reads the buckets retention kept of a rollup never refreshed as before retention', async () => {
    const asAdmin = lake.client(admin);
    const asX = lake.client(teamX);
    await asAdmin.updateCount(`CREATE TABLE events (ts TIMESTAMPTZ, k INTEGER) WITH (time_column = 'ts')`);
    await asAdmin.updateCount(
      `INSERT INTO events (ts, k, audience) VALUES (TIMESTAMPTZ '2024-01-01 00:10:00+00', 1, 'public'), ('2024-01-01 01:20:00+00', 2, 'team_x')`,
    );
    await asAdmin.updateCount(`INSERT INTO events (ts, k, audience) VALUES (now(), 3, 'team_x')`);
    await scalar(
      asAdmin,
      `select snouttime.create_rollup('events_hourly', 'events', interval '1 hour', select_list => 'k, count(*) AS n', group_by => 'k')`,
    );
    const rows = (client: TestFlightClient) =>
      plainRows(client, `SELECT bucket::VARCHAR AS bucket, audience, k, n::INT AS n FROM events_hourly ORDER BY ALL`);
    const before = await Promise.all([asAdmin, asX].map(rows));
    assert.equal(before[0].length, 3);
    await asAdmin.query(`SELECT * FROM set_retention('events', '30 days')`);
    await lake.orrery.daemon!.housekeeping();
    assert.equal(await scalar(asAdmin, `SELECT count(*) FROM events`), 1);
    assert.equal(
      await scalar(asAdmin, `SELECT count(*) FROM list_rollups() WHERE name = 'events_hourly' AND watermark IS NULL`),
      1,
    );
    assert.deepEqual(await Promise.all([asAdmin, asX].map(rows)), before);
    await scalar(asAdmin, `select snouttime.refresh_rollup('events_hourly')`);
    assert.deepEqual(await Promise.all([asAdmin, asX].map(rows)), before);
  });
});
