// Block inserts still running, as the maintenance daemon's passes need to know of them: a block's insert time is
// its transaction's start (now()), and its rows become visible only at commit, which may come seconds later
// (a lock wait, a slow WAL flush, a starved machine). A pass that counted a second as done while such an insert
// was running would leave its block to a coarser pass, a minute or more later.
import type { MetadataQueries } from './transaction.js';

/**
 * The comment every statement that inserts blocks starts with: how pg_stat_activity tells them from the rest
 * (readers and other writers do not hold a pass back).
 */
export const blockInsertTag = '/* orrery: block insert */';

/**
 * The starts of the transactions of this database running a block insert (their rows' insert time), in whole
 * seconds since the epoch, each second once. Read from pg_stat_activity, which shows another session's
 * statement to the same role (or to members of pg_read_all_stats); inserts of other roles are not seen. The tag
 * is passed as a parameter, so this statement's own text does not carry it.
 */
export async function blockInsertsRunning(db: MetadataQueries): Promise<bigint[]> {
  const { rows } = await db.query<{ start: string }>(
    `SELECT DISTINCT floor(extract(epoch FROM xact_start))::bigint::text AS start FROM pg_stat_activity
      WHERE datname = current_database() AND pid <> pg_backend_pid() AND state <> 'idle'
        AND starts_with(query, $1) AND xact_start IS NOT NULL`,
    [blockInsertTag],
  );
  return rows.map((r) => BigInt(r.start));
}
