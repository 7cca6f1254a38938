import { quoteIdentifier } from '../engine/index.js';
import type { RollupDefinition } from './rollup-sql.js';
import type { StoredColumns } from './stored-columns.js';

// `validate --online` (database-resources.md): every measure of a ready rollup, per bucket, against
// the same aggregate of the raw rows, over its most recent complete buckets. Exact measures within
// 1e-9 relative, sketches within 3 % (the median of a quantile sketch, the count of a distinct
// sketch), any_value (and first, arbitrary) present in the same buckets, anything else equal.

/** What validating one rollup found. */
export interface RollupValidation {
  readonly rollup: string;
  readonly status: 'ok' | 'mismatch' | 'skipped';
  /** The buckets compared: [from, to), as DuckDB writes timestamps; null when skipped. */
  readonly from: string | null;
  readonly to: string | null;
  readonly buckets: number;
  /** Why skipped, or the first mismatching rows as JSON. */
  readonly detail: string | null;
}

const numeric =
  /^(TINYINT|SMALLINT|INTEGER|BIGINT|HUGEINT|UTINYINT|USMALLINT|UINTEGER|UBIGINT|UHUGEINT|FLOAT|DOUBLE|DECIMAL.*)$/i;

/** How a stored measure is compared with raw: by the aggregate it stores, then by its type. */
function comparison(measure: string, type: string, stored: StoredColumns | null): (a: string, b: string) => string {
  const aggregate = stored?.measures.find((m) => m.name === measure.toLowerCase())?.aggregate;
  const fn = aggregate ? String(aggregate.function_name) : '';
  const within = (x: string, y: string, tolerance: string): string =>
    `(${x} IS NOT DISTINCT FROM ${y} OR abs(${x} - ${y}) <= ${tolerance} * greatest(abs(${x}), abs(${y})))`;
  // Which row any_value (ClickHouse's any) keeps is DuckDB's scan's: its threads meet a bucket's rows in no fixed
  // order, so a new aggregate of the same rows may keep another value (a bucket of 1 M rows: its first row's or the
  // 122,881st's). The spec asks only that such measures have matching buckets, which the join checks; any_value keeps
  // NULL only where every value is, so that much must match too. first and arbitrary may keep a NULL: buckets alone.
  if (fn === 'any_value') return (a, b) => `((${a}) IS NULL) = ((${b}) IS NULL)`;
  if (fn === 'first' || fn === 'arbitrary') return () => 'true';
  if (fn === 'percentile_sketch' || (fn === 'merge' && /ddsketch/i.test(type)))
    return (a, b) => within(`percentile(${a}, 0.5)`, `percentile(${b}, 0.5)`, '0.03');
  if (fn === 'distinct_sketch' || fn === 'merge')
    return (a, b) => within(`distinct_count(${a})::DOUBLE`, `distinct_count(${b})::DOUBLE`, '0.03');
  if (numeric.test(type)) return (a, b) => within(`${a}::DOUBLE`, `${b}::DOUBLE`, '1e-9');
  return (a, b) => `${a} IS NOT DISTINCT FROM ${b}`;
}

/**
 * The statement comparing a rollup's stored rows with the aggregate of raw rows over the same
 * buckets (both SELECTs with the rollup's columns): one row per mismatching bucket and group.
 */
export function mismatchesSql(
  definition: RollupDefinition,
  columnTypes: ReadonlyMap<string, string>,
  stored: StoredColumns | null,
  storedRows: string,
  rawRows: string,
): string {
  const groups = new Set(['bucket', 'audience', ...(stored ? [...stored.dimensions.values()] : [])]);
  const keys = definition.columns.filter((c) => groups.has(c.toLowerCase()));
  const measures = definition.columns.filter((c) => !groups.has(c.toLowerCase()));
  const q = quoteIdentifier;
  const checks = measures.map((m) => comparison(m, columnTypes.get(m) ?? '', stored)(`s.${q(m)}`, `r.${q(m)}`));
  const shown = [
    ...keys.map((k) => `coalesce(s.${q(k)}, r.${q(k)}) AS ${q(k)}`),
    ...measures.flatMap((m) => [`s.${q(m)} AS ${q(`${m} (rollup)`)}`, `r.${q(m)} AS ${q(`${m} (raw)`)}`]),
  ];
  const on = keys.map((k) => `s.${q(k)} IS NOT DISTINCT FROM r.${q(k)}`).join(' AND ');
  return (
    `SELECT ${shown.join(', ')} FROM (SELECT *, true AS __present FROM (${storedRows})) AS s ` +
    `FULL OUTER JOIN (SELECT *, true AS __present FROM (${rawRows})) AS r ON ${on} ` +
    `WHERE s.__present IS NULL OR r.__present IS NULL${checks.length > 0 ? ` OR NOT (${checks.join(' AND ')})` : ''}`
  );
}
