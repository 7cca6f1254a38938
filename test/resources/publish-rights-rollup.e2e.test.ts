// `orrery publish` of a rollup entry against an Orrery whose external Postgres role lacks a right on a table a
// rollup's install writes (issue 13: "a missing one fails publication before anything is installed, listing
// each"): the rollups' catalog (rollup_jobs) and DuckLake's (ducklake.ducklake_table, where the target is made, and
// CREATE on its schema, where DuckLake makes a table for the rows it inlines). A publication declaring no rollup is
// not refused for them; one declaring a rollup fails with RESOURCES_RIGHTS_MISSING naming the three, nothing
// recorded, locked or made; granted them, the same publish installs. An index entry sorting a series table (a
// bloom_filter) writes DuckLake's catalog too: without INSERT on ducklake.ducklake_snapshot it fails the same way.
// `orrery resources prune` checks the same rights for the retired entries it drops: without that INSERT, pruning the
// rollup and the minmax index fails naming it with neither dropped (not the index dropped, then the rollup failing).
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  clientFor,
  sharedEnv,
  startRole,
  startTestPostgres,
  type InProcessOrrery,
  type TestPostgres,
} from '../lakehouse/lakehouse-fixtures.js';
import type { TestFlightClient } from '../support/flight-client.js';
import { adminKey } from '../support/orrery-process.js';
import { limitedRole, publishFolder, rowCounts, runCliAs } from '../support/publish.js';

const role = 'orrery_no_rollup_rights';
const key = { ...adminKey, audiences: ['public'] };
const minmax = { level_minmax: { index: { table: 'log_entries', column: 'level', kind: 'minmax' } } };
const hourly = {
  hourly: { rollup: { table: 'log_entries', grain: '1h', dimensions: ['target'], measures: { n: 'count(*)' } } },
};

describe("orrery publish of a rollup entry as a Postgres role lacking a right on the rollups' tables (issue 13)", () => {
  let postgres: TestPostgres;
  let orrery: InProcessOrrery;
  let admin: TestFlightClient;
  const dir = mkdtempSync(join(tmpdir(), 'orrery-publish-rights-rollup-'));
  const lake = mkdtempSync(join(tmpdir(), 'orrery-publish-rights-rollup-lake-'));
  const declare = (resources: unknown) =>
    writeFileSync(join(dir, 'resources', 'logs.resources.json'), JSON.stringify({ resources }));
  const publish = () => publishFolder(`127.0.0.1:${orrery.flightPort}`, dir);

  before(async () => {
    postgres = await startTestPostgres();
    // Orrery runs as a role of its own, which makes (so owns) its tables and DuckLake's; an operator then takes
    // two rights away.
    const connectionString = await limitedRole(postgres, role);
    orrery = await startRole('serve', sharedEnv({ keys: [key], admins: [key.name], connectionString, lakeDir: lake }));
    admin = clientFor(orrery.flightPort, key);
    await admin.query('SELECT * FROM resource_ledger()');
    await admin.query(`CREATE TABLE spans_t (ts TIMESTAMP, trace VARCHAR) WITH (time_column = 'ts')`);
    await postgres.pool.query(`REVOKE INSERT ON rollup_jobs FROM ${role}`);
    await postgres.pool.query(`REVOKE INSERT ON ducklake.ducklake_table FROM ${role}`);
    await postgres.pool.query(`REVOKE CREATE ON SCHEMA ducklake FROM ${role}`);
    mkdirSync(join(dir, 'resources'), { recursive: true });
  });
  after(async () => {
    admin?.close();
    await orrery?.close();
    await postgres?.close();
    rmSync(dir, { recursive: true, force: true });
    rmSync(lake, { recursive: true, force: true });
  });

  const recorded = () =>
    rowCounts(postgres, {
      publications: 'resource_publications',
      ledger: 'resource_ledger',
      locks: 'resource_locks',
      rollups: 'rollup_definitions',
      lakeTables: 'ducklake.ducklake_table',
    });

  it('a publication declaring no rollup installs without those rights', async () => {
    declare(minmax);
    const run = await publish();
    assert.equal(run.status, 0, run.err.join('\n'));
    assert.match(run.text, /^served publication 1$/m);
  });

  it('one declaring a rollup fails before anything is installed, listing each missing right', async () => {
    const before = await recorded();
    assert.deepEqual(before, { publications: 1, ledger: 1, locks: 0, rollups: 0, lakeTables: before.lakeTables });
    declare({ ...minmax, ...hourly });
    const run = await publish();
    assert.equal(run.status, 1, run.text);
    assert.match(
      run.err.join('\n'),
      /^orrery publish: failed on 127\.0\.0\.1:\d+: installing needs: INSERT on table rollup_jobs \(Postgres\); INSERT on table ducklake\.ducklake_table \(Postgres\); CREATE on schema ducklake \(Postgres\)$/,
    );
    assert.deepEqual(await recorded(), before);
  });

  it('installs once the role is granted them', async () => {
    await postgres.pool.query(`GRANT INSERT ON rollup_jobs TO ${role}`);
    await postgres.pool.query(`GRANT INSERT ON ducklake.ducklake_table TO ${role}`);
    await postgres.pool.query(`GRANT CREATE ON SCHEMA ducklake TO ${role}`);
    const run = await publish();
    assert.equal(run.status, 0, run.err.join('\n'));
    assert.match(run.text, /^served publication 2$/m);
    assert.match(run.text, /^created rollup rollup_log_entries_hourly__[0-9a-f]{8} over log_entries \(grain 1h\)$/m);
    const { rows } = await postgres.pool.query<{ entry_key: string; state: string }>(
      'SELECT entry_key, state FROM resource_ledger ORDER BY entry_key',
    );
    assert.deepEqual(rows, [
      { entry_key: 'hourly', state: 'ready' },
      { entry_key: 'level_minmax', state: 'ready' },
    ]);
  });

  it("an index entry sorting a series table fails the same way without a right on DuckLake's catalog", async () => {
    await postgres.pool.query(`REVOKE INSERT ON ducklake.ducklake_snapshot FROM ${role}`);
    const before = await recorded();
    declare({ ...minmax, trace_bloom: { index: { table: 'spans_t', column: 'trace', kind: 'bloom_filter' } } });
    const run = await publish();
    assert.equal(run.status, 1, run.text);
    assert.match(
      run.err.join('\n'),
      /^orrery publish: failed on 127\.0\.0\.1:\d+: installing needs: INSERT on table ducklake\.ducklake_snapshot \(Postgres\)$/,
    );
    assert.deepEqual(await recorded(), before);
  });

  it('prune of a retired rollup fails listing the right its drop needs, nothing dropped; granted it, prunes', async () => {
    declare({ target_minmax: { index: { table: 'log_entries', column: 'target', kind: 'minmax' } } });
    const run = await publish();
    assert.equal(run.status, 0, run.err.join('\n'));
    assert.match(run.text, /^retired rollup hourly on log_entries \([0-9a-f]+\) for 7 days$/m);
    await postgres.pool.query(
      "UPDATE resource_ledger SET prune_after = now() - interval '1 second' WHERE retired_at IS NOT NULL",
    );
    const state = async () => ({
      pruned: (
        await postgres.pool.query<{ entry_key: string }>(
          'SELECT entry_key FROM resource_ledger WHERE pruned_at IS NOT NULL ORDER BY entry_key',
        )
      ).rows.map((r) => r.entry_key),
      ...(await rowCounts(postgres, { rollups: 'rollup_definitions', indexes: 'resource_indexes' })),
    });
    const before = await state();
    assert.deepEqual(before, { pruned: [], rollups: 1, indexes: 2 });
    const prune = () => runCliAs(key.key, `127.0.0.1:${orrery.flightPort}`, 'resources', ['prune']);
    const refused = await prune();
    assert.equal(refused.status, 1, refused.text);
    assert.match(
      refused.err.join('\n'),
      /^orrery resources: failed on 127\.0\.0\.1:\d+: pruning needs: INSERT on table ducklake\.ducklake_snapshot \(Postgres\)$/,
    );
    assert.deepEqual(await state(), before);
    await postgres.pool.query(`GRANT INSERT ON ducklake.ducklake_snapshot TO ${role}`);
    const pruned = await prune();
    assert.equal(pruned.status, 0, pruned.err.join('\n'));
    assert.match(pruned.text, /^pruned 2 retired resource\(s\)$/m);
    assert.deepEqual(await state(), { pruned: ['hourly', 'level_minmax'], rollups: 0, indexes: 1 });
  });
});
