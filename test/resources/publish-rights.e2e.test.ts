// `orrery publish` against an Orrery whose external Postgres role lacks rights on Orrery's tables and schema
// (issue 13: "for an external Postgres, the role's rights on Orrery's schema ... a missing one fails publication
// before anything is installed, listing each"): the publication fails with RESOURCES_RIGHTS_MISSING naming every
// missing right, and nothing is recorded, locked or installed; granted them, the same publish installs.
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
import { limitedRole, publishFolder, rowCounts } from '../support/publish.js';

const role = 'orrery_limited';
const key = { ...adminKey, audiences: ['public'] };

describe("orrery publish as a Postgres role lacking rights on Orrery's tables (issue 13)", () => {
  let postgres: TestPostgres;
  let orrery: InProcessOrrery;
  let admin: TestFlightClient;
  const dir = mkdtempSync(join(tmpdir(), 'orrery-publish-rights-'));
  const lake = mkdtempSync(join(tmpdir(), 'orrery-publish-rights-lake-'));
  const env = (connectionString: string) =>
    sharedEnv({ keys: [key], admins: [key.name], connectionString, lakeDir: lake });

  before(async () => {
    postgres = await startTestPostgres();
    // Orrery runs as a role of its own, which makes (so owns) its tables; an operator then takes some rights away.
    orrery = await startRole('serve', env(await limitedRole(postgres, role)));
    admin = clientFor(orrery.flightPort, key);
    await admin.query('SELECT * FROM resource_ledger()');
    await postgres.pool.query(`REVOKE DELETE ON resource_locks FROM ${role}`);
    await postgres.pool.query(`REVOKE UPDATE ON resource_ledger FROM ${role}`);
    await postgres.pool.query(`REVOKE CREATE ON SCHEMA public FROM PUBLIC, ${role}`);
    mkdirSync(join(dir, 'resources'), { recursive: true });
    writeFileSync(
      join(dir, 'resources', 'logs.resources.json'),
      JSON.stringify({
        resources: { level_minmax: { index: { table: 'log_entries', column: 'level', kind: 'minmax' } } },
      }),
    );
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
      indexes: 'resource_indexes',
    });

  it('fails before anything is installed, listing each missing right', async () => {
    const run = await publishFolder(`127.0.0.1:${orrery.flightPort}`, dir);
    assert.equal(run.status, 1, run.text);
    assert.match(
      run.err.join('\n'),
      /^orrery publish: failed on 127\.0\.0\.1:\d+: installing needs: UPDATE on table resource_ledger \(Postgres\); DELETE on table resource_locks \(Postgres\); CREATE on schema public \(Postgres\)$/,
    );
    assert.deepEqual(await recorded(), { publications: 0, ledger: 0, locks: 0, indexes: 0 });
  });

  it('installs once the role is granted them', async () => {
    await postgres.pool.query(`GRANT DELETE ON resource_locks TO ${role}`);
    await postgres.pool.query(`GRANT UPDATE ON resource_ledger TO ${role}`);
    await postgres.pool.query(`GRANT CREATE ON SCHEMA public TO ${role}`);
    const run = await publishFolder(`127.0.0.1:${orrery.flightPort}`, dir);
    assert.equal(run.status, 0, run.err.join('\n'));
    assert.match(run.text, /^served publication 1$/m);
    assert.deepEqual(await recorded(), { publications: 1, ledger: 1, locks: 0, indexes: 1 });
  });
});
