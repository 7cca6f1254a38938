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
export async function failedAudiences(
  db: MetadataQueries,
  audiences: readonly string[] | null,
): Promise<FailedAudience[]> {
  const { rows } = await db.query<Row>(
    `SELECT view_set_name, begin_ns::text, end_ns::text, audience, error, orrery_version, failed_at FROM failed_audiences
      ${audiences === null ? '' : 'WHERE audience = ANY($1)'} ORDER BY failed_at, view_set_name, begin_ns, audience`,
    audiences === null ? [] : [audiences],
  );
  return rows.map(fromRow);
}

/** Deletes the records (all, or those another version made) and returns what they held, for the ranges to be built again. */
export async function releaseFailedAudiences(
  db: MetadataQueries,
  otherThanVersion?: string,
): Promise<FailedAudience[]> {
  const { rows } = await db.query<Row>(
    `DELETE FROM failed_audiences ${otherThanVersion === undefined ? '' : 'WHERE orrery_version <> $1'}
     RETURNING view_set_name, begin_ns::text, end_ns::text, audience, error, orrery_version, failed_at`,
    otherThanVersion === undefined ? [] : [otherThanVersion],
  );
  return rows.map(fromRow);
}
