import type { MetadataQueries, MetadataStore } from '../metadata/index.js';
import type { ObjectStore } from './object-store.js';
import { nanosToPg, pgNanos } from './time.js';

// The lakehouse_partitions and temporary_files tables are written here and nowhere else: a
// partition leaves the first only by moving its file to the second, which queues the file's
// deletion once running queries are done with it.

/** A row of lakehouse_partitions: one Parquet file (or an empty range) of a view instance. */
export interface Partition {
  readonly viewSetName: string;
  readonly viewInstanceId: string;
  /** Insert-time range covered, half-open, nanoseconds. */
  readonly beginInsertTime: bigint;
  readonly endInsertTime: bigint;
  /** Event-time bounds of the rows; null when there are none. */
  readonly minEventTime: bigint | null;
  readonly maxEventTime: bigint | null;
  /** Object key of the Parquet file; null for a partition that records an empty range. */
  readonly filePath: string | null;
  readonly fileSize: number;
  readonly schemaHash: Buffer;
  /** Source row count the partition was made from. */
  readonly sourceCount: bigint;
  readonly numRows: number;
  readonly sortOrder: readonly string[] | null;
}

const columns = `view_set_name, view_instance_id, ${pgNanos('begin_insert_time')} AS begin_ns, ${pgNanos('end_insert_time')} AS end_ns,
  ${pgNanos('min_event_time')} AS min_ns, ${pgNanos('max_event_time')} AS max_ns, file_path, file_size, file_schema_hash,
  source_data_hash, num_rows, sort_order`;

interface PartitionRow {
  view_set_name: string;
  view_instance_id: string;
  begin_ns: string;
  end_ns: string;
  min_ns: string | null;
  max_ns: string | null;
  file_path: string | null;
  file_size: string | null;
  file_schema_hash: Buffer;
  source_data_hash: Buffer;
  num_rows: string;
  sort_order: string[] | null;
}

/**
 * A change to a view set's partitions, seen inside the transaction that makes it: the files it
 * retired and the files it registered (object keys). `mergedFrom` names the files a merge read to
 * write `added`; when those are exactly the files retired, the change moved rows without changing any.
 */
export interface PartitionChange {
  readonly viewSetName: string;
  readonly retired: readonly string[];
  readonly added: readonly string[];
  /** The partitions registered (with a file or empty), as their builder passed them. */
  readonly partitions?: readonly Partition[];
  readonly mergedFrom?: readonly string[];
  /** The lake's retention took `retired` away (by insert time): their rows are gone, not changed. */
  readonly expired?: boolean;
}

/** Runs in the transaction of every change to partitions that adds or removes rows (rollups follow view sets so). */
export type PartitionChangeHook = (tx: MetadataQueries, change: PartitionChange) => Promise<void>;

function fromRow(row: PartitionRow): Partition {
  return {
    viewSetName: row.view_set_name,
    viewInstanceId: row.view_instance_id,
    beginInsertTime: BigInt(row.begin_ns),
    endInsertTime: BigInt(row.end_ns),
    minEventTime: row.min_ns === null ? null : BigInt(row.min_ns),
    maxEventTime: row.max_ns === null ? null : BigInt(row.max_ns),
    filePath: row.file_path,
    fileSize: Number(row.file_size ?? 0),
    schemaHash: row.file_schema_hash,
    sourceCount: decodeCount(row.source_data_hash),
    numRows: Number(row.num_rows),
    sortOrder: row.sort_order,
  };
}

/** Source data hash: the source row count as 8 little-endian bytes (micromegas's convention). */
export function encodeCount(count: bigint): Buffer {
  const buffer = Buffer.alloc(8);
  buffer.writeBigInt64LE(count);
  return buffer;
}

export function decodeCount(hash: Buffer | null): bigint {
  return hash && hash.byteLength === 8 ? hash.readBigInt64LE(0) : -1n;
}

/** Partitions of a view instance with the given schema hash overlapping an insert range. */
export async function partitionsOverlapping(
  db: MetadataQueries,
  view: string,
  instance: string,
  schemaHash: Buffer,
  begin: bigint,
  end: bigint,
): Promise<Partition[]> {
  const { rows } = await db.query<PartitionRow>(
    `SELECT ${columns} FROM lakehouse_partitions
      WHERE view_set_name = $1 AND view_instance_id = $2 AND file_schema_hash = $3
        AND begin_insert_time < $5 AND end_insert_time > $4
      ORDER BY begin_insert_time, file_path`,
    [view, instance, schemaHash, nanosToPg(begin), nanosToPg(end)],
  );
  return rows.map(fromRow);
}

/** Non-empty partitions a query reads: current schema hash, optionally pruned by event time. */
export async function queryablePartitions(
  db: MetadataQueries,
  view: string,
  instance: string,
  schemaHash: Buffer,
  eventRange?: { begin?: bigint; end?: bigint },
): Promise<Partition[]> {
  const params: unknown[] = [view, instance, schemaHash];
  let where = '';
  if (eventRange?.end !== undefined) {
    params.push(nanosToPg(eventRange.end, 'ceil'));
    where += ` AND min_event_time <= $${params.length}`;
  }
  if (eventRange?.begin !== undefined) {
    params.push(nanosToPg(eventRange.begin, 'floor'));
    where += ` AND max_event_time >= $${params.length}`;
  }
  const { rows } = await db.query<PartitionRow>(
    `SELECT ${columns} FROM lakehouse_partitions
      WHERE view_set_name = $1 AND view_instance_id = $2 AND file_schema_hash = $3 AND file_path IS NOT NULL${where}
      ORDER BY begin_insert_time, file_path`,
    params,
  );
  return rows.map(fromRow);
}

/** Every partition, for list_partitions(). */
export async function allPartitions(db: MetadataQueries): Promise<Partition[]> {
  const { rows } = await db.query<PartitionRow>(
    `SELECT ${columns} FROM lakehouse_partitions ORDER BY view_set_name, view_instance_id, begin_insert_time`,
  );
  return rows.map(fromRow);
}

/** The partition whose file is `path` (an object key), null when none has it (retired, quarantined, never registered). */
export async function partitionOfFile(db: MetadataQueries, path: string): Promise<Partition | null> {
  const { rows } = await db.query<PartitionRow>(`SELECT ${columns} FROM lakehouse_partitions WHERE file_path = $1`, [
    path,
  ]);
  return rows.length === 0 ? null : fromRow(rows[0]);
}

/**
 * Registers a new partition and retires, in the same transaction, every partition of the
 * same view instance and schema whose insert range lies inside the new one. Retired files
 * are queued for deletion after `retireDelaySeconds`, so running queries can finish.
 * Returns the object keys retired.
 */
export async function commitPartition(
  metadata: MetadataStore,
  partition: Partition,
  retireDelaySeconds: number,
  onChange?: PartitionChangeHook,
  mergedFrom?: readonly string[],
): Promise<string[]> {
  return commitPartitions(
    metadata,
    [partition],
    { begin: partition.beginInsertTime, end: partition.endInsertTime },
    retireDelaySeconds,
    onChange,
    mergedFrom,
  );
}

/**
 * Registers partitions of one view instance and schema hash that together replace every
 * partition inside `replacing` (a wider partition split in pieces), in one transaction.
 */
export async function commitPartitions(
  metadata: MetadataStore,
  partitions: readonly Partition[],
  replacing: { begin: bigint; end: bigint },
  retireDelaySeconds: number,
  onChange?: PartitionChangeHook,
  mergedFrom?: readonly string[],
): Promise<string[]> {
  const [first] = partitions;
  return metadata.transaction(async (tx) => {
    await tx.query('SELECT pg_advisory_xact_lock(hashtext($1))', [
      `partition:${first.viewSetName}:${first.viewInstanceId}`,
    ]);
    const retired = await retireInside(
      tx,
      first.viewSetName,
      first.viewInstanceId,
      replacing.begin,
      replacing.end,
      retireDelaySeconds,
      first.schemaHash,
    );
    for (const partition of partitions) await insertPartition(tx, partition);
    await onChange?.(tx, {
      viewSetName: first.viewSetName,
      retired,
      added: partitions.flatMap((p) => (p.filePath === null ? [] : [p.filePath])),
      partitions,
      mergedFrom,
    });
    return retired;
  });
}

/**
 * Registers `replacement`, a new file holding the same rows as the partition whose file is `oldPath`
 * (rewritten with more columns), in that partition's place, retiring the old file; false, and nothing
 * changed, when no partition has that file any more (a merge or a rebuild replaced it meanwhile).
 */
export async function replacePartitionFile(
  metadata: MetadataStore,
  oldPath: string,
  replacement: Partition,
  retireDelaySeconds: number,
  onChange?: PartitionChangeHook,
): Promise<boolean> {
  return metadata.transaction(async (tx) => {
    await tx.query('SELECT pg_advisory_xact_lock(hashtext($1))', [
      `partition:${replacement.viewSetName}:${replacement.viewInstanceId}`,
    ]);
    const retired = await retireWhere(tx, 'file_path = $2', [oldPath], retireDelaySeconds);
    if (retired.partitions === 0) return false;
    await insertPartition(tx, replacement);
    const added = replacement.filePath === null ? [] : [replacement.filePath];
    // The same rows in another file: what follows the set's rows sees a move, not a change.
    await onChange?.(tx, { viewSetName: replacement.viewSetName, retired: [oldPath], added, mergedFrom: [oldPath] });
    return true;
  });
}

async function insertPartition(db: MetadataQueries, partition: Partition): Promise<void> {
  await db.query(
    `INSERT INTO lakehouse_partitions (view_set_name, view_instance_id, begin_insert_time, end_insert_time, min_event_time,
       max_event_time, updated, file_path, file_size, file_schema_hash, source_data_hash, num_rows, sort_order)
     VALUES ($1, $2, $3, $4, $5, $6, now(), $7, $8, $9, $10, $11, $12)`,
    [
      partition.viewSetName,
      partition.viewInstanceId,
      nanosToPg(partition.beginInsertTime),
      nanosToPg(partition.endInsertTime),
      partition.minEventTime === null ? null : nanosToPg(partition.minEventTime, 'floor'),
      partition.maxEventTime === null ? null : nanosToPg(partition.maxEventTime, 'ceil'),
      partition.filePath,
      partition.fileSize,
      partition.schemaHash,
      encodeCount(partition.sourceCount),
      partition.numRows,
      partition.sortOrder,
    ],
  );
}

/**
 * Deletes the partitions `where` selects (over lakehouse_partitions, parameters from $2 on) and
 * queues their files for deletion after `retireDelaySeconds`; returns the files retired, in
 * insert-time order, and how many partitions (empty ones included) went.
 */
async function retireWhere(
  db: MetadataQueries,
  where: string,
  params: unknown[],
  retireDelaySeconds: number,
): Promise<{ files: string[]; partitions: number; views: string[]; filesByView: Map<string, string[]> }> {
  const { rows } = await db.query<{ file_path: string | null; view_set_name: string }>(
    `WITH gone AS (DELETE FROM lakehouse_partitions WHERE ${where} RETURNING view_set_name, file_path, file_size, begin_insert_time)
     , queued AS (INSERT INTO temporary_files (file_path, file_size, expiration)
         SELECT file_path, coalesce(file_size, 0), now() + make_interval(secs => $1) FROM gone WHERE file_path IS NOT NULL)
     SELECT view_set_name, file_path FROM gone ORDER BY begin_insert_time, file_path`,
    [retireDelaySeconds, ...params],
  );
  const filesByView = new Map<string, string[]>();
  for (const r of rows)
    if (r.file_path !== null)
      filesByView.set(r.view_set_name, [...(filesByView.get(r.view_set_name) ?? []), r.file_path]);
  return {
    files: rows.flatMap((r) => (r.file_path === null ? [] : [r.file_path])),
    partitions: rows.length,
    views: [...new Set(rows.map((r) => r.view_set_name))],
    filesByView,
  };
}

/** Retires the partitions of a view instance inside an insert range (any schema hash unless given); returns their files. */
export async function retireInside(
  db: MetadataQueries,
  view: string,
  instance: string,
  begin: bigint,
  end: bigint,
  retireDelaySeconds: number,
  schemaHash?: Buffer,
): Promise<string[]> {
  const where = `view_set_name = $2 AND view_instance_id = $3 AND begin_insert_time >= $4 AND end_insert_time <= $5${schemaHash ? ' AND file_schema_hash = $6' : ''}`;
  const params: unknown[] = [view, instance, nanosToPg(begin), nanosToPg(end), ...(schemaHash ? [schemaHash] : [])];
  return (await retireWhere(db, where, params, retireDelaySeconds)).files;
}

/** Retires the partition of a view instance covering exactly [begin, end) (any schema hash unless given); answers its files, null when there is none. */
export async function retireExactly(
  db: MetadataQueries,
  view: string,
  instance: string,
  begin: bigint,
  end: bigint,
  retireDelaySeconds: number,
  schemaHash?: Buffer,
): Promise<string[] | null> {
  const params: unknown[] = [view, instance, nanosToPg(begin), nanosToPg(end)];
  let where = 'view_set_name = $2 AND view_instance_id = $3 AND begin_insert_time = $4 AND end_insert_time = $5';
  if (schemaHash) {
    where += ' AND file_schema_hash = $6';
    params.push(schemaHash);
  }
  const retired = await retireWhere(db, where, params, retireDelaySeconds);
  return retired.partitions > 0 ? retired.files : null;
}

/** Retires one partition as listed (its view instance, range and schema hash); false when it is already gone. */
export async function retirePartition(
  db: MetadataQueries,
  partition: Partition,
  retireDelaySeconds: number,
): Promise<boolean> {
  const where =
    'view_set_name = $2 AND view_instance_id = $3 AND file_schema_hash = $4 AND begin_insert_time = $5 AND end_insert_time = $6';
  const params = [
    partition.viewSetName,
    partition.viewInstanceId,
    partition.schemaHash,
    nanosToPg(partition.beginInsertTime),
    nanosToPg(partition.endInsertTime),
  ];
  return (await retireWhere(db, where, params, retireDelaySeconds)).partitions > 0;
}

/** Retires the partition whose file is `path`; answers its view set, null when no partition has it. */
export async function retireFile(
  db: MetadataQueries,
  path: string,
  retireDelaySeconds: number,
): Promise<string | null> {
  return (await retireWhere(db, 'file_path = $2', [path], retireDelaySeconds)).views[0] ?? null;
}

/** A partition file taken out of lakehouse_partitions because it could not be read. */
export interface QuarantinedPartition {
  readonly filePath: string;
  readonly viewSetName: string;
  readonly viewInstanceId: string;
  readonly beginInsertTime: bigint;
  readonly endInsertTime: bigint;
  readonly numRows: number;
  readonly error: string;
  readonly orreryVersion: string;
  readonly quarantinedAt: Date;
}

const quarantinedColumns = `file_path, view_set_name, view_instance_id, ${pgNanos('begin_insert_time')} AS begin_ns,
  ${pgNanos('end_insert_time')} AS end_ns, num_rows, error, orrery_version, quarantined_at`;

function quarantinedFromRow(r: {
  file_path: string;
  view_set_name: string;
  view_instance_id: string;
  begin_ns: string;
  end_ns: string;
  num_rows: string;
  error: string;
  orrery_version: string;
  quarantined_at: Date;
}): QuarantinedPartition {
  return {
    filePath: r.file_path,
    viewSetName: r.view_set_name,
    viewInstanceId: r.view_instance_id,
    beginInsertTime: BigInt(r.begin_ns),
    endInsertTime: BigInt(r.end_ns),
    numRows: Number(r.num_rows),
    error: r.error,
    orreryVersion: r.orrery_version,
    quarantinedAt: r.quarantined_at,
  };
}

/**
 * Takes the partition whose file is `path` out of lakehouse_partitions, records it as quarantined and
 * registers `rebuilt` (its range built again from source; none when it cannot be) in its place, in one
 * transaction, so no statement sees its range empty. The file is not queued for deletion. Returns the
 * record, or null when no partition has that file (already quarantined, retired or replaced).
 */
export async function quarantinePartitionFile(
  metadata: MetadataStore,
  path: string,
  error: string,
  version: string,
  rebuilt: readonly Partition[],
  onChange?: PartitionChangeHook,
): Promise<QuarantinedPartition | null> {
  return metadata.transaction(async (tx) => {
    const { rows: named } = await tx.query<{ view_set_name: string; view_instance_id: string }>(
      'SELECT view_set_name, view_instance_id FROM lakehouse_partitions WHERE file_path = $1',
      [path],
    );
    if (named.length === 0) return null;
    // The lock commitPartitions takes: a daemon's commit over the range waits for this one.
    await tx.query('SELECT pg_advisory_xact_lock(hashtext($1))', [
      `partition:${named[0].view_set_name}:${named[0].view_instance_id}`,
    ]);
    const { rows } = await tx.query<Parameters<typeof quarantinedFromRow>[0]>(
      `WITH gone AS (DELETE FROM lakehouse_partitions WHERE file_path = $1
           RETURNING view_set_name, view_instance_id, begin_insert_time, end_insert_time, num_rows, file_size)
       INSERT INTO quarantined_partitions (file_path, view_set_name, view_instance_id, begin_insert_time, end_insert_time,
           num_rows, file_size, error, orrery_version)
         SELECT $1, view_set_name, view_instance_id, begin_insert_time, end_insert_time, num_rows, file_size, $2, $3 FROM gone
       ON CONFLICT (file_path) DO NOTHING
       RETURNING ${quarantinedColumns}`,
      [path, error, version],
    );
    if (rows.length === 0) return null;
    for (const partition of rebuilt) await insertPartition(tx, partition);
    // Built from the same source as the file, the rebuilt partitions hold its rows: rows moved, none
    // changed (as in a merge), and the unreadable file is never read for what changed.
    await onChange?.(tx, {
      viewSetName: named[0].view_set_name,
      retired: [path],
      added: rebuilt.flatMap((p) => (p.filePath === null ? [] : [p.filePath])),
      partitions: rebuilt,
      mergedFrom: [path],
    });
    return quarantinedFromRow(rows[0]);
  });
}

/** A partition whose file cannot be read and whose range cannot be rebuilt (list_lost_partitions()). */
export interface LostPartition {
  readonly partition: Partition;
  /** Why its file cannot be read, as first found. */
  readonly error: string;
  readonly lostAt: Date;
}

/**
 * Records that the partition whose file is `path` cannot be read nor rebuilt, the first time it is found
 * (a partition every statement meets is written once).
 */
export async function markPartitionLost(db: MetadataQueries, path: string, error: string): Promise<void> {
  await db.query(
    'UPDATE lakehouse_partitions SET lost_error = $2, lost_at = now() WHERE file_path = $1 AND lost_at IS NULL',
    [path, error],
  );
}

/** Forgets that the partition whose file is `path` was lost: its file reads whole again (put back). */
export async function clearPartitionLost(db: MetadataQueries, path: string): Promise<void> {
  await db.query('UPDATE lakehouse_partitions SET lost_error = NULL, lost_at = NULL WHERE file_path = $1', [path]);
}

/** How many partitions each view set has recorded lost (the orrery_lost_partitions gauge). */
export async function lostPartitionCounts(db: MetadataQueries): Promise<Map<string, number>> {
  const { rows } = await db.query<{ view_set_name: string; n: number }>(
    'SELECT view_set_name, count(*)::int AS n FROM lakehouse_partitions WHERE lost_at IS NOT NULL GROUP BY view_set_name',
  );
  return new Map(rows.map((r) => [r.view_set_name, r.n]));
}

/** The partitions recorded lost and still registered, oldest finding first. */
export async function lostPartitions(db: MetadataQueries): Promise<LostPartition[]> {
  const { rows } = await db.query<PartitionRow & { lost_error: string; lost_at: Date }>(
    `SELECT ${columns}, lost_error, lost_at FROM lakehouse_partitions WHERE lost_at IS NOT NULL ORDER BY lost_at, file_path`,
  );
  return rows.map((row) => ({ partition: fromRow(row), error: row.lost_error, lostAt: row.lost_at }));
}

/** Every quarantined partition, oldest first. */
export async function quarantinedPartitions(db: MetadataQueries): Promise<QuarantinedPartition[]> {
  const { rows } = await db.query<Parameters<typeof quarantinedFromRow>[0]>(
    `SELECT ${quarantinedColumns} FROM quarantined_partitions ORDER BY quarantined_at, file_path`,
  );
  return rows.map(quarantinedFromRow);
}

/** How many partitions each view set has quarantined. */
export async function quarantinedPartitionCounts(db: MetadataQueries): Promise<Map<string, number>> {
  const { rows } = await db.query<{ view_set_name: string; n: number }>(
    'SELECT view_set_name, count(*)::int AS n FROM quarantined_partitions GROUP BY view_set_name',
  );
  return new Map(rows.map((r) => [r.view_set_name, r.n]));
}

/** Retires every partition of a view set, all instances and schemas (DROP MATERIALIZED VIEW); returns how many. */
export async function retireEverything(db: MetadataQueries, view: string, retireDelaySeconds: number): Promise<number> {
  return (await retireWhere(db, 'view_set_name = $2', [view], retireDelaySeconds)).partitions;
}

/**
 * Queues objects that are no partition's file (a resource's copies of partitions) for deletion after
 * `delaySeconds`, as retired files are: a statement planned before they were given up may still read them.
 */
export async function queueForDeletion(
  db: MetadataQueries,
  paths: readonly string[],
  delaySeconds: number,
): Promise<void> {
  await db.query(
    `INSERT INTO temporary_files (file_path, file_size, expiration)
       SELECT p, 0, now() + make_interval(secs => $2) FROM unnest($1::text[]) AS p`,
    [paths, delaySeconds],
  );
}

/**
 * Deletes the retired files whose delay has passed, from the store and then from temporary_files, so
 * that a process killed in between leaves rows the next run deletes again rather than files nothing
 * names; returns how many.
 */
export async function deleteExpiredFiles(db: MetadataQueries, store: ObjectStore): Promise<number> {
  const { rows } = await db.query<{ file_path: string }>(
    'SELECT file_path FROM temporary_files WHERE expiration < now()',
  );
  for (const row of rows) await store.delete(row.file_path);
  await db.query('DELETE FROM temporary_files WHERE file_path = ANY($1)', [rows.map((r) => r.file_path)]);
  return rows.length;
}

/**
 * Retention: retires the partitions whose insert range ended more than `days` ago with no delay (what
 * they cover is past retention, so no query may read it any more); deleteExpiredFiles then deletes
 * their files. Returns how many partitions went.
 */
export async function retirePartitionsOlderThan(
  metadata: MetadataStore,
  days: number,
  onChange?: PartitionChangeHook,
): Promise<number> {
  return metadata.transaction(async (tx) => {
    const gone = await retireWhere(tx, 'end_insert_time < now() - make_interval(days => $2)', [Math.floor(days)], 0);
    // Their files are deleted only after this commits, so the hook can still read the rows retention took.
    for (const [viewSetName, retired] of gone.filesByView)
      await onChange?.(tx, { viewSetName, retired, added: [], expired: true });
    return gone.partitions;
  });
}
