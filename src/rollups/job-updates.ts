import type { DuckDBEngine } from '../engine/index.js';
import type { MetadataQueries } from '../metadata/index.js';
import { rollupErrors } from './errors.js';
import { quoteLiteral } from './rollup-sql.js';
import type { RefreshOutcome, RollupJob } from './rollups.js';
import { jobsRelation, snouttimeNames } from './snouttime-names.js';
import type { Node } from './tree.js';

// The spec's way to change a refresh job's schedule:
//   update snouttime.jobs set schedule = interval '10 minutes'
//   where kind = 'refresh' and target = 'metrics_hourly'::regclass;
// The jobs table is a view of Orrery's rollup_jobs, so the statement is read rather than run: its
// head here, the rest by DuckDB's parser as `SELECT <value> WHERE <condition>`, whose two
// expressions go into Orrery's own SELECT over the jobs (the targets it matches and their new
// schedules); each is then changed as set_job_schedule would. No fragment is pasted into SQL text.

const timestamp = (value: Date | null): string =>
  value === null ? 'NULL::TIMESTAMPTZ' : `${quoteLiteral(value.toISOString())}::TIMESTAMPTZ`;
const textOrNull = (value: string | null): string => (value === null ? 'NULL::VARCHAR' : quoteLiteral(value));

/** The jobs table as a SELECT of its rows (kind, target, schedule, last_run, next_run, last_status, last_error). */
export function jobsRows(jobs: readonly RollupJob[]): string {
  const rows = jobs.map(
    (j) =>
      `(${[quoteLiteral(j.kind), quoteLiteral(j.target), `${quoteLiteral(j.schedule)}::INTERVAL`, timestamp(j.lastRun), timestamp(j.nextRun), textOrNull(j.lastStatus), textOrNull(j.lastError)].join(', ')})`,
  );
  const columns = 'kind, target, schedule, last_run, next_run, last_status, last_error';
  return rows.length > 0
    ? `SELECT * FROM (VALUES ${rows.join(', ')}) AS jobs(${columns})`
    : `SELECT NULL::VARCHAR AS kind, NULL::VARCHAR AS target, NULL::INTERVAL AS schedule, NULL::TIMESTAMPTZ AS last_run, NULL::TIMESTAMPTZ AS next_run, NULL::VARCHAR AS last_status, NULL::VARCHAR AS last_error WHERE false`;
}

/**
 * A refresh job's audience_errors after a refresh: each failed audience's error (JSON for JSONB, see AudienceError),
 * or null when none failed. The rows of no audience (null) stay apart from an audience '', so that each is told
 * (to admins alone, who alone read either) as what it is.
 */
function audienceErrors(failed: RefreshOutcome['failedAudiences']): string | null {
  return failed.length > 0 ? JSON.stringify(failed.map(({ audience, error }) => ({ audience, error }))) : null;
}

/** A failed refresh is tried again this soon by the refresh jobs (or at its schedule, if sooner). */
export const retrySeconds = 10;

/**
 * SQL for when a job whose last run ended at `at` runs next under `schedule`: one schedule on, or within
 * retrySeconds when that run failed (`failed`, an SQL boolean). A run sets it, and so does a change of schedule.
 */
export const nextRunSql = (at: string, schedule: string, failed: string): string =>
  `${at} + CASE WHEN ${failed} THEN LEAST(${schedule}, ${retrySeconds} * INTERVAL '1 second') ELSE ${schedule} END`;

/** How a refresh ended: its outcome, or its error and the audiences whose own rows failed it (see Rollups.refresh). */
export type RefreshResult =
  | { readonly outcome: RefreshOutcome }
  | { readonly error: unknown; readonly failedAudiences: RefreshOutcome['failedAudiences'] };

/**
 * Records a refresh on its rollup's job, whoever ran it (a refresh job, refresh_rollup, a publication): last_status
 * ('ok'; 'partial' when some audiences' buckets were held, their errors in audience_errors; 'failed'), last_error and
 * audience_errors, so snouttime.jobs tells the state the rollup's last refresh left. A run of the job (`scheduled`)
 * also sets last_run and its next_run (a failed one's within retrySeconds); another refresh writes the row only
 * when what it records changes (most refreshes end as the one before).
 */
export async function recordRefresh(
  metadata: MetadataQueries,
  target: string,
  result: RefreshResult,
  scheduled: boolean,
): Promise<void> {
  const failed = 'outcome' in result ? result.outcome.failedAudiences : result.failedAudiences;
  const status = 'outcome' in result ? (failed.length > 0 ? 'partial' : 'ok') : 'failed';
  const error =
    'outcome' in result ? null : result.error instanceof Error ? result.error.message : String(result.error);
  const run = scheduled
    ? `, last_run = now(), next_run = ${nextRunSql('now()', 'schedule', 'outcome' in result ? 'false' : 'true')}`
    : '';
  const changed = scheduled
    ? ''
    : ' AND (last_status, last_error, audience_errors) IS DISTINCT FROM ($2::text, $3::text, $4::jsonb)';
  await metadata.query(
    `UPDATE rollup_jobs SET last_status = $2, last_error = $3, audience_errors = $4${run}
      WHERE kind = 'refresh' AND target = $1${changed}`,
    [target, status, error, audienceErrors(failed)],
  );
}

const head = /^\s*UPDATE\s+(?:(?:"snouttime"|snouttime)\s*\.\s*)?(?:"jobs"|jobs|"rollup_jobs"|rollup_jobs)\s+SET\s+/i;

/** The text after `SET` of an UPDATE of the jobs table (`snouttime.jobs`, `jobs`, `rollup_jobs`), or null for any other statement. */
export function jobsUpdate(text: string): string | null {
  const match = head.exec(text);
  return match ? text.slice(match[0].length).trim().replace(/;$/, '') : null;
}

const invalid = (message: string): Error => rollupErrors.error('ROLLUP_ARGUMENT_INVALID', message);

/**
 * The SELECT that answers, per job the UPDATE's condition matches, its target and the new schedule
 * (as text, NULL when the value is not an interval), over the jobs relation.
 */
export async function jobsUpdateQuery(
  engine: DuckDBEngine,
  assignments: string,
  jobs: readonly RollupJob[],
): Promise<string> {
  const assignment = /^("schedule"|schedule)\s*=\s*/i.exec(assignments);
  if (!assignment) {
    const column = /^("(?:[^"]|"")+"|[A-Za-z_][A-Za-z0-9_]*)/.exec(assignments)?.[1] ?? assignments.slice(0, 20);
    throw invalid(`UPDATE jobs: only schedule can be set, not ${column}`);
  }
  const tree = await engine.parseSelect(`SELECT ${assignments.slice(assignment[0].length)}`).catch(() => null);
  const node = tree?.statements.length === 1 ? (tree.statements[0].node as Node) : undefined;
  const list = node?.select_list as Node[] | undefined;
  if (
    !node ||
    node.type !== 'SELECT_NODE' ||
    (node.from_table as Node).type !== 'EMPTY' ||
    list?.length !== 1 ||
    (node.modifiers as unknown[]).length > 0 ||
    (node.group_expressions as unknown[]).length > 0 ||
    node.having !== null ||
    node.qualify !== null
  )
    throw invalid(
      "UPDATE jobs: write it as the spec does, update snouttime.jobs set schedule = interval '10 minutes' where kind = 'refresh' and target = 'r'",
    );
  const query = (await engine.parseSelect(
    `SELECT target, CAST(TRY_CAST(NULL AS INTERVAL) AS VARCHAR) AS schedule FROM (${jobsRows(jobs)}) AS ${jobsRelation}`,
  ))!;
  const select = query.statements[0].node as Node;
  const schedule = (select.select_list as Node[])[1];
  // CAST(TRY_CAST(<value> AS INTERVAL) AS VARCHAR): the value goes where the NULL is.
  (schedule.child as Node).child = { ...list[0], alias: '' };
  select.where_clause = node.where_clause;
  snouttimeNames(query);
  return engine.deparse(query);
}
