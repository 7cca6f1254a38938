import type { MetadataQueries } from '../metadata/index.js';
import type { InsertRange } from '../views/index.js';

// The audiences a view set defined in SQL left out of a range (migration 10): its extract failed on the data,
// so each audience's rows were extracted alone, and these audiences' failed. Their error quotes their own rows
// only (their sources were limited to them), so a key of that audience may read it (list_failed_audiences()).

/** An audience whose rows a range of a set defined in SQL does not hold, and why. */
export interface FailedAudience {
  readonly viewSetName: string;
  readonly range: InsertRange;
  /** Null: the rows of no known audience (admins' alone), apart from an audience ''. */
  readonly audience: string | null;
  readonly error: string;
  readonly orreryVersion: string;
  readonly failedAt: Date;
}

/**
 * Records which audiences a range of a set was built without (none: it holds every audience's rows), in place
 * of what was recorded for ranges overlapping it.
 */
export async function recordFailedAudiences(
  db: MetadataQueries,
  viewSet: string,
  range: InsertRange,
  failed: ReadonlyArray<{ audience: string | null; error: string }>,
  version: string,
): Promise<void> {
  await db.query('DELETE FROM failed_audiences WHERE view_set_name = $1 AND begin_ns < $3 AND end_ns > $2', [
    viewSet,
    String(range.begin),
    String(range.end),
  ]);
  for (const { audience, error } of failed)
    await db.query(
      `INSERT INTO failed_audiences (view_set_name, begin_ns, end_ns, audience, error, orrery_version)
       VALUES ($1, $2, $3, $4, $5, $6)`,
      [viewSet, String(range.begin), String(range.end), audience, error, version],
    );
}

/**
 * Retention: forgets the records of ranges that ended more than `days` ago, as their partitions and sources go (no
 * build will hold those rows again).
 */
export async function forgetExpiredFailedAudiences(db: MetadataQueries, days: number): Promise<void> {
  await db.query(
    `DELETE FROM failed_audiences
      WHERE end_ns < (extract(epoch FROM now() - make_interval(days => $1)) * 1000000000)::bigint`,
    [Math.floor(days)],
  );
}

interface Row {
  view_set_name: string;
  begin_ns: string;
  end_ns: string;
  audience: string | null;
  error: string;
  orrery_version: string;
  failed_at: Date;
}

const fromRow = (r: Row): FailedAudience => ({
  viewSetName: r.view_set_name,
  range: { begin: BigInt(r.begin_ns), end: BigInt(r.end_ns) },
  audience: r.audience,
  error: r.error,
  orreryVersion: r.orrery_version,
  failedAt: r.failed_at,
});

/** The records of these audiences (null: every audience, and the rows of no audience), oldest first. */
export function failedAudiences(db: MetadataQueries, audiences: readonly string[] | null): Promise<FailedAudience[]> {
  return records(db, audiences === null ? ['', []] : ['WHERE audience = ANY($1)', [audiences]]);
}

/**
 * The records (all, or those another version made), for their ranges to be built again. They stay until a build
 * of the range commits (which records what it leaves out in their place): a retry that dies first leaves them listed.
 */
export function audiencesToRetry(db: MetadataQueries, otherThanVersion?: string): Promise<FailedAudience[]> {
  return records(db, otherThanVersion === undefined ? ['', []] : ['WHERE orrery_version <> $1', [otherThanVersion]]);
}

async function records(db: MetadataQueries, [where, values]: [string, unknown[]]): Promise<FailedAudience[]> {
  const { rows } = await db.query<Row>(
    `SELECT view_set_name, begin_ns::text, end_ns::text, audience, error, orrery_version, failed_at FROM failed_audiences
      ${where} ORDER BY failed_at, view_set_name, begin_ns, audience`,
    values,
  );
  return rows.map(fromRow);
}
