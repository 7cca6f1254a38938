import type { TableScope } from '../tables/index.js';
import { quoteIdentifier } from '../engine/index.js';
import { quoteLiteral } from './rollup-sql.js';

// A rollup's never-stale read aggregates the rows after its watermark at every read. When those rows
// come from files alone (table-files.ts), the files listed, less their delete files, are all of them:
// the same listing is the same rows, so their aggregate is made once (Rollups.keptTail), kept, and read
// as constant rows (VALUES) by the statements that follow until the base table's files or the watermark
// change (a refresh, an ingest into the table). Reading it from files cost each read a Parquet scan (the last row group of a
// bulk file, every file since: 2-4 ms of a ~10 ms read, bench/rollups/explain.mjs). Only aggregates
// of at most maxInlinedRows rows of scalar types, whose text DuckDB casts back to the same value, are
// kept; a reader's statement holds only its audiences' rows (the view's text, unlike its files' names,
// would otherwise show other audiences' values).

/** The most rows (every audience's) of a tail's aggregate kept and inlined into statements. */
export const maxInlinedRows = 1000;

/** DuckDB types whose VARCHAR text casts back to the same value (doubles print as their shortest exact text). */
const exactText =
  /^(BOOLEAN|TINYINT|SMALLINT|INTEGER|BIGINT|HUGEINT|UTINYINT|USMALLINT|UINTEGER|UBIGINT|UHUGEINT|FLOAT|DOUBLE|DECIMAL\(\d+,\d+\)|VARCHAR|BLOB|DATE|TIME|TIMESTAMP|TIMESTAMP_NS|TIMESTAMP WITH TIME ZONE|INTERVAL|UUID)$/;

/** A tail's aggregate, kept: its rows as SQL constants, with each row's audience. */
export interface InlinedTail {
  readonly rows: ReadonlyArray<{ readonly audience: string | null; readonly values: string }>;
}

/** The statement reading the text and type of every column of `aggregate` (a SELECT), one row past the limit. */
export function tailValuesQuery(aggregate: string): string {
  return `SELECT CAST(COLUMNS(*) AS VARCHAR), typeof(COLUMNS(*)) FROM (${aggregate}) AS __tail LIMIT ${maxInlinedRows + 1}`;
}

/**
 * tailValuesQuery's answer for an aggregate of `columns` (its last the audience) as constant rows,
 * or null when it cannot be kept (too many rows, a type whose text is not exact).
 */
export function inlinedTail(rows: ReadonlyArray<readonly unknown[]>, columns: readonly string[]): InlinedTail | null {
  if (rows.length > maxInlinedRows) return null;
  const n = columns.length;
  const kept = [];
  for (const row of rows) {
    if (row.length !== 2 * n) return null;
    const values = [];
    for (let i = 0; i < n; i++) {
      const [text, type] = [row[i], row[n + i]];
      if (typeof type !== 'string' || !exactText.test(type) || (text !== null && typeof text !== 'string')) return null;
      values.push(`CAST(${text === null ? 'NULL' : quoteLiteral(text)} AS ${type})`);
    }
    const audience = row[n - 1] as string | null;
    kept.push({ audience, values: `(${values.join(', ')})` });
  }
  return { rows: kept };
}

/** A kept tail as a relation of `columns` for a scope (its audiences' rows), or null when it has none for it. */
export function tailValues(tail: InlinedTail, columns: readonly string[], scope: TableScope): string | null {
  const audiences = scope.kind === 'all' ? null : new Set([...scope.audiences, 'public']);
  const rows = tail.rows.filter((r) => !audiences || (r.audience !== null && audiences.has(r.audience)));
  if (rows.length === 0) return null;
  return `SELECT * FROM (VALUES ${rows.map((r) => r.values).join(', ')}) AS __tail(${columns.map(quoteIdentifier).join(', ')})`;
}
