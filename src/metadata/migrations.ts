import type pg from 'pg';
import { MetadataError, messageOf } from './errors.js';
import type { MetadataLog } from './metadata-log.js';
import { initialSchema } from './migration-1-initial-schema.js';
import { logStatsDefinition } from './migration-2-log-stats-definition.js';
import { quarantinedBlocks } from './migration-3-quarantined-blocks.js';
import { partitionNotifications } from './migration-4-partition-notifications.js';
import { quarantinedPartitions } from './migration-5-quarantined-partitions.js';
import { payloadFiles } from './migration-6-payload-files.js';
import { lostPartitions } from './migration-7-lost-partitions.js';
import { ingestMarks } from './migration-8-ingest-marks.js';
import { ingestMarksUntil } from './migration-9-ingest-marks-until.js';
import { failedAudiences } from './migration-10-failed-audiences.js';
import { insertBlocks } from './migration-11-insert-blocks.js';
import { ingestDeletes } from './migration-12-ingest-deletes.js';
import { failedAudiencesOfNoAudience } from './migration-13-failed-audiences-of-no-audience.js';
import { transaction } from './transaction.js';

/** One schema change. Runs inside a transaction, so it may not use CREATE INDEX CONCURRENTLY and the like. */
export interface Migration {
  /** Position in the list: 1, 2, 3, … never reused. */
  readonly version: number;
  readonly name: string;
  readonly sql: string;
}

/** Orrery's schema, oldest first. Append only: an applied migration is never edited. */
export const migrations: readonly Migration[] = [
  { version: 1, name: 'telemetry and lakehouse tables', sql: initialSchema },
  { version: 2, name: 'log_stats as a stored view set definition', sql: logStatsDefinition },
  { version: 3, name: 'quarantined blocks', sql: quarantinedBlocks },
  { version: 4, name: 'partition change notifications', sql: partitionNotifications },
  { version: 5, name: 'quarantined partitions', sql: quarantinedPartitions },
  { version: 6, name: 'payloads in commit-group files', sql: payloadFiles },
  { version: 7, name: 'lost partitions', sql: lostPartitions },
  { version: 8, name: 'ingest replay marks', sql: ingestMarks },
  { version: 9, name: 'ingest replay mark windows', sql: ingestMarksUntil },
  { version: 10, name: 'failed audiences of view sets defined in SQL', sql: failedAudiences },
  { version: 11, name: 'block inserts as one function call', sql: insertBlocks },
  { version: 12, name: 'a count of process and stream deletes', sql: ingestDeletes },
  { version: 13, name: 'failed audiences of rows of no audience apart', sql: failedAudiencesOfNoAudience },
];

/**
 * Brings the database up to date: in one transaction holding an advisory lock (so two
 * processes starting together migrate once), applies the migrations not yet recorded in
 * `orrery_migrations`, in order. All or nothing. Returns the versions it applied.
 */
export async function migrate(
  pool: pg.Pool,
  log: MetadataLog = () => {},
  list: readonly Migration[] = migrations,
): Promise<number[]> {
  checkList(list);
  const applied: number[] = [];
  await transaction(pool, async (client) => {
    await client.query(`SELECT pg_advisory_xact_lock(hashtextextended('orrery_migrations', 0))`);
    await client.query(`CREATE TABLE IF NOT EXISTS orrery_migrations (
      version    INT PRIMARY KEY,
      name       TEXT NOT NULL,
      applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
    )`);
    const { rows } = await client.query<{ version: number }>('SELECT version FROM orrery_migrations');
    const recorded = new Set(rows.map((row) => row.version));
    const unknown = [...recorded].filter((version) => !list.some((m) => m.version === version)).sort((a, b) => a - b);
    if (unknown.length > 0) {
      throw new MetadataError(
        'SCHEMA_TOO_NEW',
        `the database has schema migration(s) ${unknown.join(', ')} that this version of Orrery does not know (it knows 1 to ${list.length}); run a newer Orrery`,
      );
    }
    for (const migration of list) {
      if (recorded.has(migration.version)) continue;
      try {
        await client.query(migration.sql);
      } catch (error) {
        throw new MetadataError(
          'MIGRATION_FAILED',
          `schema migration ${migration.version} (${migration.name}) failed: ${messageOf(error)}`,
          {
            cause: error,
          },
        );
      }
      await client.query('INSERT INTO orrery_migrations (version, name) VALUES ($1, $2)', [
        migration.version,
        migration.name,
      ]);
      applied.push(migration.version);
    }
  });
  if (applied.length > 0) log('info', `applied schema migration(s) ${applied.join(', ')}`);
  return applied;
}

/** Our own list must be 1, 2, 3, … */
function checkList(list: readonly Migration[]): void {
  list.forEach((migration, index) => {
    if (migration.version !== index + 1)
      throw new Error(
        `migration list out of order: '${migration.name}' has version ${migration.version}, expected ${index + 1}`,
      );
  });
}
