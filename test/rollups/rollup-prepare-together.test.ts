// Issue 17: processes starting together on a lake made before retention's postponements (held_buckets without
// postponed_since, which the rollups' start-up adds) all start, the column added once; a record of held buckets
// written the old way (no postponed_since) reads as a refresh's hold, as before. Each process's start-up is its
// Rollups.prepare on an engine of its own (two servers' starts reach it at moments too far apart to meet).
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { DuckDBEngine, duckdbBuild, extensionCacheFolder, findExtensions } from '../../src/engine/index.js';
import { MetadataStore } from '../../src/metadata/index.js';
import { Rollups } from '../../src/rollups/index.js';
import { SeriesTables, attachLakeSql } from '../../src/tables/index.js';
import { useLakeOrrery, type TestKey } from '../lakehouse/lakehouse-fixtures.js';

const admin: TestKey = { name: 'admin', key: 'admin-key-prepare-0001', audiences: ['public'] };
const held = '__orrery_lake.rollups.held_buckets';

describe('servers starting together on a lake whose held_buckets lacks postponed_since (#17)', () => {
  const lake = useLakeOrrery({ keys: [admin], role: 'serve', env: { ORRERY_ROLLUP_REFRESH_JOBS: 'off' } });
  // The lake as a process of an older version sees it (engine), and two starting processes' engines and Postgres.
  let engine: DuckDBEngine;
  const starting: Array<{ engine: DuckDBEngine; metadata: MetadataStore }> = [];
  const lakeEngine = async () =>
    DuckDBEngine.create({
      extensions: findExtensions(extensionCacheFolder(await duckdbBuild())).files,
      attach: [attachLakeSql(lake.postgres.connectionString, join(lake.lakeDir!, 'tables'))],
      readableDirectories: [lake.lakeDir!],
    });

  before(async () => {
    engine = await lakeEngine();
    for (let i = 0; i < 2; i++)
      starting.push({
        engine: await lakeEngine(),
        metadata: await MetadataStore.open({
          connectionString: lake.postgres.connectionString,
          dataDir: lake.lakeDir!,
        }),
      });
  });
  after(async () => {
    for (const process of starting) await Promise.all([process.engine.close(), process.metadata.close()]);
    await engine?.close();
  });

  const postponedColumns = async () =>
    Number(
      (
        await engine.values(
          `SELECT count(*) FROM duckdb_columns() WHERE database_name = '__orrery_lake' AND schema_name = 'rollups'
             AND table_name = 'held_buckets' AND column_name = 'postponed_since'`,
        )
      )[0][0],
    );

  it('starts both, adds the column once and keeps the older records as refreshes held them', async () => {
    // A few rounds: the two starts reach the lake at about the same time, not always in the same order.
    for (let round = 0; round < 5; round++) {
      await engine.execute(`ALTER TABLE ${held} DROP COLUMN postponed_since`);
      assert.equal(await postponedColumns(), 0);
      // What an older server records: four values.
      await engine.execute(`INSERT INTO ${held} VALUES ('old_hourly', '2024-01-01 00:00:00', 'team_x', 'failed')`);
      const starts = await Promise.allSettled(
        starting.map(({ engine: own, metadata }) =>
          new Rollups(own, metadata, new SeriesTables(own, metadata, () => new Set()), () => new Set()).prepare(),
        ),
      );
      assert.deepEqual(
        starts.map((s) => (s.status === 'fulfilled' ? 'started' : String(s.reason))),
        ['started', 'started'],
      );
      assert.equal(await postponedColumns(), 1);
      // The older record is a refresh's hold (no postponed_since), and a record naming the older columns alone still
      // goes in, as one.
      await engine.execute(
        `INSERT INTO ${held} (rollup, bucket, audience, error) VALUES ('old_hourly', '2024-01-01 01:00:00', 'team_x', 'failed')`,
      );
      assert.deepEqual(
        (
          await engine.values(`SELECT bucket, postponed_since FROM ${held} WHERE rollup = 'old_hourly' ORDER BY bucket`)
        ).map(([bucket, since]) => [String(bucket), since]),
        [
          ['2024-01-01 00:00:00', null],
          ['2024-01-01 01:00:00', null],
        ],
      );
      await engine.execute(`DELETE FROM ${held} WHERE rollup = 'old_hourly'`);
    }
  });
});
