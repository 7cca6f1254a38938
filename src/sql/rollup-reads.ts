import type { Principal } from '../auth/index.js';
import type { QueryShape } from '../engine/index.js';
import { jobsRelation, type Rollups } from '../rollups/index.js';
import { quoteIdentifier, quoteLiteral } from '../views/index.js';
import { scopeOf } from './lakehouse-session.js';

const timestamp = (value: Date | null): string =>
  value === null ? 'NULL::TIMESTAMPTZ' : `${quoteLiteral(value.toISOString())}::TIMESTAMPTZ`;
const textOrNull = (value: string | null): string => (value === null ? 'NULL::VARCHAR' : quoteLiteral(value));

/**
 * The setup that makes the rollups a statement names readable for its caller (each a temporary
 * view of its own name, as of one DuckLake snapshot, filtered to the caller's audiences), and the
 * refresh jobs table when it is named.
 */
export async function rollupReadSetup(
  rollups: Rollups,
  shape: QueryShape,
  principal: Principal,
  /** Rollups the statement reads through the rewrite of its levels. */
  rewrittenOnto: readonly string[] = [],
): Promise<string[]> {
  const names = shape.relations
    .filter((r) => !r.cte && r.catalog === '' && (r.schema === '' || r.schema.toLowerCase() === 'main'))
    .map((r) => r.name.toLowerCase());
  names.push(...rewrittenOnto);
  if (names.length === 0) return [];
  const setup = await rollups.readSetup(names, scopeOf(principal));
  if (names.includes(jobsRelation)) {
    const rows = (await rollups.jobs()).map(
      (j) =>
        `(${[quoteLiteral(j.kind), quoteLiteral(j.target), `${quoteLiteral(j.schedule)}::INTERVAL`, timestamp(j.lastRun), timestamp(j.nextRun), textOrNull(j.lastStatus), textOrNull(j.lastError)].join(', ')})`,
    );
    const columns = 'kind, target, schedule, last_run, next_run, last_status, last_error';
    setup.push(
      `CREATE OR REPLACE TEMP VIEW ${quoteIdentifier(jobsRelation)} AS ` +
        (rows.length > 0
          ? `SELECT * FROM (VALUES ${rows.join(', ')}) AS jobs(${columns})`
          : `SELECT NULL::VARCHAR AS kind, NULL::VARCHAR AS target, NULL::INTERVAL AS schedule, NULL::TIMESTAMPTZ AS last_run, NULL::TIMESTAMPTZ AS next_run, NULL::VARCHAR AS last_status, NULL::VARCHAR AS last_error WHERE false`),
    );
  }
  return setup;
}
