// Issue 10: partition lists kept between statements, dropped when any process sharing the database
// changes them (migration 4's trigger notifies; ChangeFeed listens). Two MetadataStores on one
// database stand for two processes.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { MetadataStore } from '../../src/metadata/index.js';
import { PartitionCache, commitPartition, queryablePartitions, type Partition } from '../../src/lakehouse/index.js';
import { tempDataDir, waitFor } from '../metadata/fixtures.js';

const hash = Buffer.from('0123456789abcdef', 'hex');
const second = 1_000_000_000n;
const base = 1_767_225_600n * second; // 2026-01-01T00:00:00Z

function partition(view: string, n: number, events: [bigint, bigint] | null = [base, base + second]): Partition {
  return {
    viewSetName: view,
    viewInstanceId: 'global',
    beginInsertTime: base + BigInt(n) * 60n * second,
    endInsertTime: base + BigInt(n + 1) * 60n * second,
    minEventTime: events?.[0] ?? null,
    maxEventTime: events?.[1] ?? null,
    filePath: `views/${view}/${n}.parquet`,
    fileSize: 10,
    schemaHash: hash,
    sourceCount: 1n,
    numRows: 1,
    sortOrder: null,
  };
}

const paths = (partitions: readonly Partition[]): string[] => partitions.map((p) => p.filePath!);

describe('partition cache (issue 10)', { timeout: 120_000 }, () => {
  const data = tempDataDir();
  let reader: MetadataStore;
  let writer: MetadataStore;
  let cache: PartitionCache;

  before(async () => {
    reader = await MetadataStore.open({ dataDir: data.dir });
    writer = await MetadataStore.open({ dataDir: data.dir, connectionString: reader.connectionString });
    reader.changes.start();
    assert.ok(await waitFor(() => reader.changes.version('orrery_partitions', 'v') !== undefined), 'listening');
    cache = new PartitionCache(reader, reader.changes);
  });

  after(async () => {
    await writer?.close();
    await reader?.close();
    data.remove();
  });

  it("sees another process's commit once its notification is in, and keeps the list until then", async () => {
    assert.deepEqual(await cache.queryable('v', 'global', hash), []);
    await commitPartition(writer, partition('v', 0), 0);
    await reader.changes.sync();
    assert.deepEqual(paths(await cache.queryable('v', 'global', hash)), ['views/v/0.parquet']);
    // A write that notifies nobody (the trigger off) is not seen: the list was kept.
    await writer.query('ALTER TABLE lakehouse_partitions DISABLE TRIGGER lakehouse_partitions_notify');
    try {
      await commitPartition(writer, partition('v', 1), 0);
    } finally {
      await writer.query('ALTER TABLE lakehouse_partitions ENABLE TRIGGER lakehouse_partitions_notify');
    }
    await reader.changes.sync();
    assert.deepEqual(paths(await cache.queryable('v', 'global', hash)), ['views/v/0.parquet']);
    // Another view set's change leaves this list alone; a change of its own brings both rows.
    await commitPartition(writer, partition('w', 0), 0);
    await reader.changes.sync();
    assert.deepEqual(paths(await cache.queryable('v', 'global', hash)), ['views/v/0.parquet']);
    await writer.query("DELETE FROM lakehouse_partitions WHERE file_path = 'views/v/0.parquet'");
    await reader.changes.sync();
    assert.deepEqual(paths(await cache.queryable('v', 'global', hash)), ['views/v/1.parquet']);
    await writer.query('TRUNCATE lakehouse_partitions');
    await reader.changes.sync();
    assert.deepEqual(await cache.queryable('v', 'global', hash), []);
  });

  it('filters by event range exactly as the SQL does, to the microsecond', async () => {
    const micro = 1000n;
    const events: Array<[bigint, bigint] | null> = [
      [base, base + second],
      [base + 500n, base + 1500n],
      [base + second + 1n, base + 2n * second - 1n],
      null,
      [base - second, base + 3n * second],
    ];
    for (const [i, e] of events.entries()) await commitPartition(writer, partition('ranges', i, e), 0);
    await reader.changes.sync();
    const bounds = [
      undefined,
      base - 1n,
      base,
      base + 1n,
      base + 999n,
      base + micro,
      base + 1499n,
      base + second,
      base + second + 1n,
    ];
    for (const begin of bounds) {
      for (const end of bounds) {
        const range = { begin, end };
        const expected = paths(await queryablePartitions(reader, 'ranges', 'global', hash, range));
        assert.deepEqual(
          paths(await cache.queryable('ranges', 'global', hash, range)),
          expected,
          `range ${begin}..${end}`,
        );
      }
    }
  });

  it('asks Postgres while not listening, and drops every list when the connection was lost', async () => {
    await commitPartition(writer, partition('lost', 0), 0);
    await reader.changes.sync();
    assert.deepEqual(paths(await cache.queryable('lost', 'global', hash)), ['views/lost/0.parquet']);
    const before = reader.changes.version('orrery_partitions', 'lost');
    await writer.query('ALTER TABLE lakehouse_partitions DISABLE TRIGGER lakehouse_partitions_notify');
    try {
      await commitPartition(writer, partition('lost', 1), 0);
    } finally {
      await writer.query('ALTER TABLE lakehouse_partitions ENABLE TRIGGER lakehouse_partitions_notify');
    }
    // The listening connection dies (a server restart, a network cut): notifications were missed.
    const { rowCount } = await writer.query(
      "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE 'LISTEN orrery_partitions%'",
    );
    assert.equal(rowCount, 1);
    assert.ok(await waitFor(() => reader.changes.version('orrery_partitions', 'lost') !== before), 'the loss is seen');
    assert.deepEqual(paths(await cache.queryable('lost', 'global', hash)), [
      'views/lost/0.parquet',
      'views/lost/1.parquet',
    ]);
    assert.ok(
      await waitFor(() => reader.changes.version('orrery_partitions', 'lost') !== undefined),
      'listening again',
    );
    await commitPartition(writer, partition('lost', 2), 0);
    await reader.changes.sync();
    assert.equal((await cache.queryable('lost', 'global', hash)).length, 3);
  });

  it('a cache over a feed that never listens always asks Postgres', async () => {
    const quiet = await MetadataStore.open({ dataDir: data.dir, connectionString: reader.connectionString });
    try {
      const direct = new PartitionCache(quiet, quiet.changes);
      assert.deepEqual(await direct.queryable('quiet', 'global', hash), []);
      await quiet.query('ALTER TABLE lakehouse_partitions DISABLE TRIGGER lakehouse_partitions_notify');
      try {
        await commitPartition(writer, partition('quiet', 0), 0);
      } finally {
        await quiet.query('ALTER TABLE lakehouse_partitions ENABLE TRIGGER lakehouse_partitions_notify');
      }
      assert.deepEqual(paths(await direct.queryable('quiet', 'global', hash)), ['views/quiet/0.parquet']);
    } finally {
      await quiet.close();
    }
  });
});
