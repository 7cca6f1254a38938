import type { Table } from 'apache-arrow';
import type { Principal } from '../auth/index.js';
import type { QueryShape } from '../engine/index.js';
import {
  bucketConditions,
  jobsRelation,
  jobsRows,
  type LostBuckets,
  rollupErrors,
  type RollupJob,
  type RollupReadPoint,
  type RollupReadSetup,
  type Rollups,
} from '../rollups/index.js';
import { quoteIdentifier } from '../views/index.js';
import { scopeOf } from './lakehouse-session.js';
import type { RefusedReads } from './lakehouse-functions.js';
import { boundParameters } from './partition-pruning.js';

/**
 * The setup that makes the rollups a statement names readable for its caller (each a temporary
 * view of its own name, as of one DuckLake snapshot, filtered to the caller's audiences), and the
 * refresh jobs table when it is named; the snapshot the rollups are read at (null when none is), and
 * whether the setup reads a DuckLake table (see Rollups.readSetup).
 */
export async function rollupReadSetup(
  rollups: Rollups,
  shape: QueryShape,
  principal: Principal,
  /** Rollups the statement reads through the rewrite of its levels. */
  rewrittenOnto: readonly string[] = [],
  /** Where the rewrite read the rollups, to set them up as of the same snapshot. */
  point?: RollupReadPoint,
  /** A statement of a client's session reads no kept tail's table (see Rollups.readSetup). */
  inSession = false,
  /** The statement's parse tree, as it runs: its conditions on the buckets of the rollups it names. */
  tree?: { statements: Record<string, unknown>[] },
  /** Its bound parameters: each row a run of the same set-up. */
  parameters?: Table,
  /** The constant its now() may be fixed to, when it is not yet (see bucket-windows.ts). */
  clock?: Record<string, unknown>,
  /** Of these relations, those the caller may not read: their jobs are left out (see readableJobs). */
  refused?: RefusedReads,
): Promise<RollupReadSetup> {
  const names = shape.relations
    .filter((r) => !r.cte && r.catalog === '' && (r.schema === '' || r.schema.toLowerCase() === 'main'))
    .map((r) => r.name.toLowerCase());
  const rewrittenOnly = new Set(rewrittenOnto.filter((r) => !names.includes(r)));
  names.push(...rewrittenOnto);
  if (names.length === 0) return { statements: [], snapshot: null, lake: false, fixesClock: false };
  // In a client's session the statement's now() is its transaction's, which may be earlier than the set-up's.
  // One set-up serves every run of the statement (each row of its parameters): each run's values narrow it. One
  // bound as text takes the type its comparison gives it (TIMESTAMP for `bucket`), as a string literal does.
  const runs = Array.from({ length: Math.max(1, parameters?.numRows ?? 0) }, (_, row) =>
    parameters && row < parameters.numRows
      ? new Map(
          [...boundParameters(parameters, row).nodes].map(([n, node]) => [
            n,
            (node.cast_type as { id?: string }).id === 'VARCHAR' ? (node.child as Record<string, unknown>) : node,
          ]),
        )
      : new Map(),
  );
  const windows = tree ? bucketConditions(tree.statements, new Set(names), !inSession, runs, clock) : undefined;
  const setup = await rollups.readSetup(names, scopeOf(principal), point, rewrittenOnly, !inSession, windows);
  if (names.includes(jobsRelation))
    setup.statements.push(
      `CREATE OR REPLACE TEMP VIEW ${quoteIdentifier(jobsRelation)} AS ${jobsRows(await readableJobs(await rollups.jobs(), principal, refused))}`,
    );
  return setup;
}

/**
 * Refuses a statement of a client's transaction naming a rollup made or dropped since the transaction began, or its
 * materialized table (RollupReadPoint.changed): DuckDB would answer that no such table exists, or read a dropped
 * rollup's tables at the transaction's snapshot with no definition to read them by.
 */
export function checkUnchangedRollups(shape: QueryShape, point: RollupReadPoint | undefined): void {
  if (!point?.changed?.size) return;
  for (const r of shape.relations) {
    if (r.cte || r.catalog !== '' || !(r.schema === '' || r.schema.toLowerCase() === 'main')) continue;
    const name = r.name.toLowerCase();
    const rollup = point.changed.has(name) ? name : name.replace(/_materialized$/, '');
    const how = point.changed.get(rollup);
    if (how)
      throw rollupErrors.error(
        'ROLLUP_CHANGED_IN_TRANSACTION',
        `rollup '${rollup}' was ${how} after this transaction began: it cannot be read in it; read it in a new transaction`,
      );
  }
}

/**
 * The jobs a key is shown: not those of the rollups a deny rule closes to it (list_rollups leaves those out too)
 * and, to a key that is not an admin, the job as its own audiences' rows (and public ones) made it. A refresh
 * reads every audience's rows: its error may quote one (a cast of another audience's value), and that it held
 * some audience's buckets ('partial') is a fact of that audience's rows. So such a key is told the errors of its
 * own audiences alone (a refresh's, and what retention kept without their rows), 'partial' when one of them failed
 * and 'ok' when none did, whichever other audiences failed (a refresh holds every audience's buckets when each fails,
 * never failing whole on the data: see Rollups.refreshed), and of a refresh that failed whole (the system's fault)
 * only that it failed. The errors of the rows of no audience (a view set's), which admins alone read, are told to
 * admins alone.
 */
async function readableJobs(
  jobs: readonly RollupJob[],
  principal: Principal,
  refused?: RefusedReads,
): Promise<RollupJob[]> {
  const closed = await refused?.([...new Set(jobs.map((j) => j.target.toLowerCase()))]);
  // The rows of no audience (null) are admins' alone; an audience '' is no key's either (keys' audiences are not empty).
  const reads = (audience: string | null): boolean =>
    principal.admin || (audience !== null && (audience === 'public' || principal.audiences.includes(audience)));
  return jobs
    .filter((j) => !closed?.has(j.target.toLowerCase()))
    .map((j) => {
      const failed = (j.audienceErrors ?? []).filter(({ audience }) => reads(audience));
      const lines = [
        ...failed.map(({ audience, error }) => `${audienceLabel(audience)}: ${error}`),
        ...j.lostBuckets.filter((l) => reads(l.audience)).map(lostLine),
      ];
      const own = lines.length > 0 ? lines.join('\n') : null;
      if (principal.admin) return { ...j, lastError: j.lastError === null ? own : [j.lastError, ...lines].join('\n') };
      if (j.lastStatus === 'failed') return { ...j, lastError: [withheldError, ...lines].join('\n') };
      return {
        ...j,
        lastStatus: j.lastStatus === 'partial' && failed.length === 0 ? 'ok' : j.lastStatus,
        lastError: own,
      };
    });
}

/** An audience as a line of last_error names it (null: the rows of no audience; '' an audience of its own). */
const audienceLabel = (audience: string | null): string =>
  audience === null ? 'rows of no audience' : `audience ${audience === '' ? "''" : audience}`;

/**
 * A line of snouttime.jobs' last_error for buckets a rollup's base table's retention kept without an audience's rows,
 * or postponed (the audience's rows kept until a run stores them).
 */
function lostLine(lost: LostBuckets): string {
  const [first, last] = [lost.buckets[0], lost.buckets[lost.buckets.length - 1]];
  const which = lost.buckets.length === 1 ? `bucket ${first}` : `${lost.buckets.length} buckets, ${first} to ${last}`;
  const what = lost.postponed
    ? `postponed: this audience's rows of ${which} stay until a run stores them, for a week at most`
    : `kept ${which} without this audience's rows`;
  return `${audienceLabel(lost.audience)}: retention of ${lost.table} ${what}: ${lost.error}`;
}

const withheldError = 'withheld from keys that are not admins: the refresh reads the rows of every audience';
