import type { MetadataQueries } from '../metadata/index.js';
import { pgNanos } from '../lakehouse/index.js';

// Quarantined blocks: blocks whose payload a view set's extract could not read. They are left out of
// that set (its extract and its source count) so the rest of their window materializes, until they are
// released: by retry_quarantined_blocks(), or by a daemon of another version at its start.

/** A quarantined block, with what identifies it to an admin. */
export interface QuarantinedBlock {
  readonly blockId: string;
  readonly viewSetName: string;
  /** Null once retention deleted the block itself (its quarantine row goes at the same pass). */
  readonly processId: string | null;
  readonly streamId: string | null;
  readonly audience: string | null;
  /** Nanoseconds since the epoch. */
  readonly insertTime: bigint;
  readonly error: string;
  readonly orreryVersion: string;
  readonly quarantinedAt: Date;
}

/** Records a block as unreadable for a view set (once: a second failure keeps the first record). */
export async function quarantine(
  db: MetadataQueries,
  block: { blockId: string; insertTime: string },
  viewSet: string,
  error: string,
  version: string,
): Promise<void> {
  await db.query(
    `INSERT INTO quarantined_blocks (block_id, view_set_name, insert_time, error, orrery_version) VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT (block_id, view_set_name) DO NOTHING`,
    [block.blockId, viewSet, block.insertTime, error, version],
  );
}

/** Every quarantined block, oldest first. */
export async function quarantinedBlocks(db: MetadataQueries): Promise<QuarantinedBlock[]> {
  const { rows } = await db.query<{
    block_id: string;
    view_set_name: string;
    process_id: string | null;
    stream_id: string | null;
    audience: string | null;
    insert_time: string;
    error: string;
    orrery_version: string;
    quarantined_at: Date;
  }>(
    `SELECT q.block_id::text, q.view_set_name, b.process_id::text, b.stream_id::text, b.audience, (${pgNanos('q.insert_time')})::text AS insert_time,
            q.error, q.orrery_version, q.quarantined_at
       FROM quarantined_blocks q LEFT JOIN blocks b ON b.block_id = q.block_id
      ORDER BY q.quarantined_at, q.block_id, q.view_set_name`,
  );
  return rows.map((r) => ({
    blockId: r.block_id,
    viewSetName: r.view_set_name,
    processId: r.process_id,
    streamId: r.stream_id,
    audience: r.audience,
    insertTime: BigInt(r.insert_time),
    error: r.error,
    orreryVersion: r.orrery_version,
    quarantinedAt: r.quarantined_at,
  }));
}

/** How many blocks each view set has quarantined. */
export async function quarantineCounts(db: MetadataQueries): Promise<Map<string, number>> {
  const { rows } = await db.query<{ view_set_name: string; n: number }>(
    'SELECT view_set_name, count(*)::int AS n FROM quarantined_blocks GROUP BY view_set_name',
  );
  return new Map(rows.map((r) => [r.view_set_name, r.n]));
}

/** Deletes quarantine records (all, or those another version made) and returns what they held. */
export async function release(
  db: MetadataQueries,
  otherThanVersion?: string,
): Promise<Array<{ blockId: string; viewSetName: string; insertTime: bigint }>> {
  const { rows } = await db.query<{ block_id: string; view_set_name: string; insert_time: string }>(
    `DELETE FROM quarantined_blocks ${otherThanVersion === undefined ? '' : 'WHERE orrery_version <> $1'}
     RETURNING block_id::text, view_set_name, (${pgNanos('insert_time')})::text AS insert_time`,
    otherThanVersion === undefined ? [] : [otherThanVersion],
  );
  return rows.map((r) => ({ blockId: r.block_id, viewSetName: r.view_set_name, insertTime: BigInt(r.insert_time) }));
}
