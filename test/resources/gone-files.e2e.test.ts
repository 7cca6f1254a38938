// What the resources record of a partition file (the stored columns it holds, its indexes' statistics, its
// projection's sorted copy, its text index's copy of posted rows) goes when housekeeping deletes the file
// (issue 13): a partition past retention is retired and its file deleted, then its rows in
// resource_column_files, resource_partition_stats and resource_projection_files are deleted and its copies
// queued for deletion, deleted by the next run; the live partition's rows and copies stay.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { deleteOrphans } from '../../src/lakehouse/index.js';
import type { MetadataStore } from '../../src/metadata/index.js';
import { plainRows } from '../lakehouse/lakehouse-fixtures.js';
import { logsRequest, pastInsertTimes, postOtlp } from '../support/otlp.js';
import { adminKey, useOrrery } from '../support/orrery-process.js';
import { materializeLogs, publishFolder } from '../support/publish.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Each table's rows, as (file, what) pairs: the stored column, the index, the projection's copy. */
const recorded = async (db: MetadataStore) =>
  (
    await db.query<{ file_path: string; what: string }>(
      `SELECT file_path, 'column' AS what FROM resource_column_files
       UNION ALL SELECT file_path, 'stats' FROM resource_partition_stats WHERE copy_path IS NULL
       UNION ALL SELECT file_path, 'text copy' FROM resource_partition_stats WHERE copy_path IS NOT NULL
       UNION ALL SELECT file_path, 'copy' FROM resource_projection_files ORDER BY 1, 2`,
    )
  ).rows.map((r) => [r.file_path, r.what]);

describe("housekeeping forgets the resources' rows of the partition files it deletes (issue 13)", () => {
  // Housekeeping runs when the test asks (its own schedule an hour away), retired files go at once.
  const fixture = useOrrery(
    { ORRERY_RETIRE_DELAY_SECONDS: '0', MICROMEGAS_RETENTION_DAYS: '30', ORRERY_HOUSEKEEPING_SECONDS: '3600' },
    'all',
  );
  const dir = mkdtempSync(join(tmpdir(), 'orrery-gone-files-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  let files: string[] = [];

  before(async () => {
    const start = Math.floor(Date.now() / 1000);
    for (const i of [0, 1]) {
      const time = 1704164645000000000n + BigInt(i) * 1_000_000n;
      const logs = [17, 9].map((severity, j) => ({
        time: time + BigInt(j),
        severity,
        body: `entry ${i}.${j}`,
        target: 'app',
      }));
      const sent = await postOtlp(
        fixture.orrery.httpPort,
        'logs',
        adminKey.key,
        logsRequest({ 'service.name': `svc${i}` }, logs),
      );
      assert.equal(sent.status, 200, sent.text);
      await sleep(1100);
    }
    await materializeLogs(fixture.admin, start - 2, pastInsertTimes());
    files = (
      await plainRows(
        fixture.admin,
        "SELECT file_path FROM list_partitions() WHERE view_set_name = 'log_entries' AND file_path IS NOT NULL ORDER BY begin_insert_time",
      )
    ).map((r) => String(r.file_path));
    assert.equal(files.length, 2);
    mkdirSync(join(dir, 'resources'), { recursive: true });
    const resources = {
      loud: { column: { table: 'log_entries', expression: 'upper(msg)' } },
      level_minmax: { index: { table: 'log_entries', column: 'level', kind: 'minmax' } },
      msg_text: { index: { table: 'log_entries', column: 'msg', kind: 'text' } },
      by_level: { projection: { table: 'log_entries', order_by: ['level'] } },
    };
    writeFileSync(join(dir, 'resources', 'logs.resources.json'), JSON.stringify({ resources }));
    const run = await publishFolder(fixture.orrery.address, dir);
    assert.equal(run.status, 0, run.err.join('\n'));
  });

  it("a file retired by retention loses its rows and its copy once deleted; the live file's stay", async () => {
    // The backfill rewrote both files with the column: these are the files now.
    files = (
      await plainRows(
        fixture.admin,
        "SELECT file_path FROM list_partitions() WHERE view_set_name = 'log_entries' AND file_path IS NOT NULL ORDER BY begin_insert_time",
      )
    ).map((r) => String(r.file_path));
    const [old, live] = files;
    const db = fixture.orrery.metadata;
    const everything = (file: string) => [
      [file, 'column'],
      [file, 'copy'],
      [file, 'stats'],
      [file, 'text copy'],
    ];
    assert.deepEqual(await recorded(db), [...everything(old), ...everything(live)].sort());
    const copyOf = async (file: string) =>
      (
        await db.query<{ copy_path: string }>('SELECT copy_path FROM resource_projection_files WHERE file_path = $1', [
          file,
        ])
      ).rows[0].copy_path;
    const textCopyOf = async (file: string) =>
      (
        await db.query<{ copy_path: string }>(
          'SELECT copy_path FROM resource_partition_stats WHERE file_path = $1 AND copy_path IS NOT NULL',
          [file],
        )
      ).rows[0].copy_path;
    const [oldCopy, liveCopy] = [await copyOf(old), await copyOf(live)];
    const [oldText, liveText] = [await textCopyOf(old), await textCopyOf(live)];
    // The older partition's insert range is past the 30 days' retention.
    await db.query(
      `UPDATE lakehouse_partitions SET begin_insert_time = now() - interval '41 days', end_insert_time = now() - interval '40 days'
        WHERE file_path = $1`,
      [old],
    );
    const housekeeping = async () => {
      for (;;) {
        const report = await fixture.orrery.daemon!.housekeeping();
        if (report) return report;
        await sleep(100); // the daemon's own run holds the lock
      }
    };
    const report = await housekeeping();
    assert.ok(report.expiredPartitions >= 1 && report.retiredFiles >= 1, JSON.stringify(report));
    await assert.rejects(fixture.orrery.store.get(old));
    assert.deepEqual(await recorded(db), everything(live));
    // The copy goes with the next run (queued, as every file is deleted); the live one stays.
    await housekeeping();
    await assert.rejects(fixture.orrery.store.get(oldCopy));
    await assert.rejects(fixture.orrery.store.get(oldText));
    assert.ok((await fixture.orrery.store.get(liveCopy)).length > 0);
    assert.ok((await fixture.orrery.store.get(liveText)).length > 0);
    assert.ok((await fixture.orrery.store.get(live)).length > 0);
  });

  it('a text index copy no row names (its writer killed before recording it) goes with the orphan sweep', async () => {
    const { metadata: db, store } = fixture.orrery;
    const named = (
      await db.query<{ copy_path: string }>(
        `SELECT copy_path FROM resource_partition_stats WHERE copy_path IS NOT NULL
         UNION SELECT copy_path FROM resource_audience_stats WHERE copy_path IS NOT NULL`,
      )
    ).rows.map((r) => r.copy_path);
    assert.ok(named.length > 0);
    // As writeTextCopy leaves it when killed before its row: the copy of a file's rows, named by nothing.
    const stray = named[0].replace(/\/all\//, '/audiences/killed/');
    assert.notEqual(stray, named[0]);
    await store.put(stray, await store.get(named[0]));
    await deleteOrphans(db, store, 0);
    await assert.rejects(store.get(stray));
    for (const copy of named) assert.ok((await store.get(copy)).length > 0, copy);
  });
});
