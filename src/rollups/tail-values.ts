import type { TableScope } from '../tables/index.js';
import { audienceFilter } from './rollup-sql.js';

// A rollup's never-stale read aggregates the rows after its watermark at every read. When those rows
// come from files alone (table-files.ts), the files listed, less their delete files, are all of them:
// the same listing is the same rows, so their aggregate is made once (Rollups.keptTail), kept, and read
// by the statements that follow until the base table's files or the watermark change (a refresh, an
// ingest into the table). Reading it from files cost each read a Parquet scan (the last row group of a
// bulk file, every file since: 2-4 ms of a ~10 ms read, bench/rollups/explain.mjs). It is kept as a
// table of DuckDB's in-memory database `memory` (every connection of the engine sees it; DuckDB scans
// a table for ~0.1 ms where the same rows as constant VALUES cost 2-4 ms): every audience's rows, and
// each reader's statement reads its own audiences' rows of it through its temporary view, as it reads
// the stored rows' files. No statement may name the table (its name is refused in every statement's
// text, namesLakeInternals, and a non-admin may not name a relation outside the orrery catalog nor
// one starting with `__`). A table's rows never change: a new aggregate is a new table, and the old
// one is dropped once no statement set up to read it can still run.

/** The most rows (every audience's) of a tail's aggregate kept. */
export const maxKeptRows = 100_000;

/**
 * How long a kept tail's table outlives the aggregate that replaced it: a statement set up to read it
 * may still be run (a GetFlightInfo's plan waits up to a minute for its DoGet); one running already
 * reads it to its end (DuckDB's catalog is versioned).
 */
export const keptTailDropMs = 3 * 60_000;

let tables = 0;

/** A new name for a kept tail's table (never used twice in a process, so no statement meets a dropped one of its name). */
export function keptTailTable(): string {
  return `memory.main.__orrery_tail_${++tables}`;
}

/** The statement keeping the aggregate `aggregate` (a SELECT) as `table`, one row past the most kept. */
export function keepTailSql(table: string, aggregate: string): string {
  return `CREATE TABLE ${table} AS SELECT * FROM (${aggregate}) AS __tail LIMIT ${maxKeptRows + 1}`;
}

/** A kept tail as a relation for a scope: its audiences' rows. */
export function tailRows(table: string, scope: TableScope): string {
  const filter = audienceFilter(scope);
  return `SELECT * FROM ${table}${filter ? ` WHERE ${filter}` : ''}`;
}
