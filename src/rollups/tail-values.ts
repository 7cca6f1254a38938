import { quoteIdentifier, type DuckDBEngine } from '../engine/index.js';
import type { TableScope } from '../tables/index.js';
import { argOrderState } from './entry-shape.js';
import { mergeOf } from './query-rewrite.js';
import { audienceFilter, type RollupDefinition } from './rollup-sql.js';
import { cast, integer, key, type Node } from './tree.js';

// A rollup's never-stale read aggregates the rows after its watermark at every read. When those rows
// come from files alone (table-files.ts), the files listed, less their delete files, are all of them:
// the same listing is the same rows, so their aggregate is made once (Rollups.keptTail), kept, and read
// by the statements that follow until the base table's files or the watermark change (a refresh, an
// ingest into the table). Reading it from files cost each read a Parquet scan (the last row group of a
// bulk file, every file since: 2-4 ms of a ~10 ms read, bench/rollups/explain.mjs). It is kept as a
// row of a table of an in-memory database of its own (the rollup's ring, below; keptTailTable: every
// connection of the engine sees it; DuckDB scans a table for ~0.1 ms where the same rows as constant
// VALUES cost 2-4 ms): every audience's rows, and each reader's statement reads its own audiences' rows
// of it through its temporary view, as it reads the stored rows' files. No statement may name the table
// (its name is refused in every statement's text, namesLakeInternals, and a non-admin may not name a
// relation outside the orrery catalog nor one starting with `__`). A kept aggregate's row never changes:
// a new aggregate is a new row, and the old one is deleted once no statement set up to read it can
// still run.
//
// Under steady ingestion every read meets a new listing: the files kept plus those written since. The
// tail's aggregate is then the kept one merged with the aggregate of the new files alone, column by
// column (a count's or a sum's parts add up, a min's and a max's give theirs, sketches merge, an arg_max's
// by the extreme stored beside it), when every aggregate of the rollup merges so (tailMerge; not avg,
// count(distinct), percentile_cont, an arg_max stored alone...: those read every file as before). Exact: the rows of the files kept and of the new ones are the rows of the
// listing, when the files kept are all still there with the same delete file each (else the listing is
// aggregated whole again). Each reader merges its own audiences' rows of both parts.

/** The most rows (every audience's) of a tail's aggregate kept. */
export const maxKeptRows = 100_000;

/**
 * The most bytes (kept-size.ts) a kept table of a rollup's stored rows may take. maxKeptRows bounds rows, not their
 * width: a distinct sketch is up to 64 KiB, a group key's text any length, so 100,000 stored rows could hold gigabytes
 * from every other statement's memory_limit until the next refresh.
 */
export const maxKeptBytes = 64 * 1024 * 1024;

/**
 * How long a kept tail's row (a ring, a kept table of stored rows) outlives the aggregate that replaced
 * it, so that the statements set up to read it meanwhile run (a GetFlightInfo's DoGet follows it at once;
 * DuckDB holds a prepared statement for its run 10 s at most). One running already reads it to its end (a
 * deleted row, a detached database stay readable to the transactions that read them); one run later (a
 * DoGet long after its GetFlightInfo, a prepared statement kept) meets it gone and is planned again
 * (namesDroppedTail), as a plan that expired is. Under steady ingestion a row is made per write or so: the
 * rows kept are those of the last few seconds, not minutes.
 */
export const keptTailDropMs = 10_000;

/**
 * How many files written since a kept aggregate's make a new one of them all (merged: the kept one's
 * rows and those files' aggregate), so that a read under steady ingestion aggregates a few files.
 */
export const rebaseFiles = 4;

let tables = 0;
const tablePrefix = '__orrery_tail_';

/**
 * A new name for a kept table (never used twice in a process, so no statement meets a dropped one of its
 * name): the table `<name>.main.<name>` of an in-memory database `<name>` of its own. DuckDB 1.5.5 binds a
 * prepared statement again at every run (~25 ms against 5 for a kept read's) once a table of a database it
 * read is made or dropped; each kept table in a database of its own, made or dropped whole (ATTACH,
 * DETACH), changes no database another statement reads. A rollup's kept tails are rows of one such table
 * (its ring, below); its stored rows kept (Rollups.keptStored) a table each, `stored` naming them apart.
 */
export function keptTailTable(stored = false): string {
  const name = `${tablePrefix}${stored ? 's' : ''}${++tables}`;
  return `${name}.main.${name}`;
}

let rows = 0;

/** A new id for a kept tail's row in its ring (never used twice in a process). */
export const keptTailRowId = (): number => ++rows;

/** A kept tail: its row in the ring table (keptTailTable) of its rollup and shape. */
export interface TailRow {
  readonly table: string;
  readonly id: number;
}

/**
 * The message of the error a statement meets when the kept tail's row it was set up to read was deleted since
 * (tailRows): planned again, it reads the tail kept now (namesDroppedTail).
 */
const goneMessage = (table: string): string => `kept tail ${databaseOf(table)} is gone`;

/**
 * Whether DuckDB refused a statement because a kept tail it was set up with was dropped since (its row
 * deleted, its database detached): planned again, it reads the tail kept now.
 */
export const namesDroppedTail = (message: string): boolean =>
  /^(?:Binder Error: (?:Catalog "__orrery_tail_s?\d+" does not exist|Prepared statement requires database __orrery_tail_s?\d+ but it was not attached)|Invalid Input Error: kept tail __orrery_tail_\d+ is gone)/.test(
    message,
  );

/** The database of a kept table (keptTailTable). */
export const databaseOf = (table: string): string => table.slice(0, table.indexOf('.'));

/**
 * Whether statements (a read's setup) read a kept tail's table: the engine that made it alone has it,
 * so such a statement stays in its lane (query-lanes.ts: the heavy lane's engine is another).
 */
export const readsKeptTail = (statements: readonly string[] = []): boolean =>
  statements.some((s) => s.includes(tablePrefix));

/**
 * The statements keeping the aggregate `aggregate` (a SELECT) as `table`, one row past the most kept:
 * its database attached, then the table made in it.
 */
export function keepTailSql(table: string, aggregate: string): { attach: string; create: string } {
  return {
    attach: `ATTACH ':memory:' AS ${databaseOf(table)}`,
    create: `CREATE TABLE ${table} AS SELECT * FROM (${aggregate}) AS __tail LIMIT ${maxKeptRows + 1}`,
  };
}

/** The statement dropping a kept table (its database). */
export const dropTailSql = (table: string): string => `DETACH DATABASE IF EXISTS ${databaseOf(table)}`;

// A rollup's kept tails are the rows of one table, its ring (one per shape of its tail aggregate: a refresh
// moving the watermark makes another), a row per kept tail: its id and its aggregate's rows as a list. A
// statement's setup names the ring alone and its run picks the row (see tailRows), so the setup's text, the
// connection set up with it and the prepared statement kept on it serve the reads after every write: only the
// row they read changes. A ring's rows change under a prepared statement kept, which DuckDB planned with the
// table's statistics then (a filter it found always false then is left out of the plan for good): the rows
// are read through a list unnested, whose values carry no statistics, so no plan depends on what they were.

/**
 * The most rows a ring is given before the next kept tail starts another (the old one dropped as a replaced kept
 * table is, keptTailDropMs later). A statement reads one row of its ring, but DuckDB scans every row's list to find
 * it, deleted ones too (an in-memory table is never vacuumed): bench/rollups' never-stale read in DuckDB alone
 * (tail-read.mjs) paid 0.24 ms for its row in a ring of 8 rows, 0.26 of 32, 0.81 of 200 and 1.40 of 1,000, and a
 * ring lives until the watermark moves (an hour at steady ingestion: a row or more per write). A new ring is a new
 * text for the statements reading it, set up and prepared once more: one read in 32 pays that.
 */
export const ringRows = 32;

/** The statements making a ring for the rows of `aggregate` (none of its rows): its database, its table. */
export function tailRingSql(table: string, aggregate: string): { attach: string; create: string } {
  return {
    attach: `ATTACH ':memory:' AS ${databaseOf(table)}`,
    create: `CREATE TABLE ${table} AS SELECT 0::BIGINT AS __id, list(__t) AS __rows FROM (SELECT * FROM (${aggregate}) AS __tail LIMIT 0) AS __t LIMIT 0`,
  };
}

/**
 * The statement keeping the rows of `aggregate` as row `id` of a ring: none when more than the most kept. `returning`:
 * an expression of the row it answers with (its bytes, kept-size.ts's keptRowBytes), none when not kept.
 */
export const keepTailRowSql = (table: string, id: number, aggregate: string, returning?: string): string =>
  `INSERT INTO ${table} SELECT ${id}, list(__t) FROM (SELECT * FROM (${aggregate}) AS __tail LIMIT ${maxKeptRows + 1}) AS __t HAVING count(*) <= ${maxKeptRows}${returning ? ` RETURNING ${returning}` : ''}`;

/** The statement dropping a kept tail's row. */
export const dropTailRowSql = (row: TailRow): string => `DELETE FROM ${row.table} WHERE __id = ${row.id}`;

/** The temporary table whose columns, one per ring, give the row of each a statement reads (tailReadsSql). */
const tailReads = '__orrery_tail_reads';

/**
 * A statement's reads of kept tails: the setup statement making the temporary table naming their rings (before
 * the views reading them, the same at every read of the same rings), and the statement filling it with the rows
 * the statement reads, run on its connection before it is prepared or run (RunOptions.fill). Without the native
 * addon's __orrery_tail_row (see tailReadsByRing).
 */
export function tailReadsSql(reads: ReadonlyMap<string, number>): { setup: string; fill: string } {
  const rings = [...reads.keys()].sort();
  return {
    setup: `CREATE TEMP TABLE IF NOT EXISTS ${tailReads} AS SELECT ${rings.map((t) => `NULL::BIGINT AS ${databaseOf(t)}`).join(', ')}`,
    fill: `UPDATE ${tailReads} SET ${rings.map((t) => `${databaseOf(t)} = ${reads.get(t)}`).join(', ')}`,
  };
}

/**
 * A statement's reads of kept tails by ring database, as the native addon's __orrery_tail_row answers them
 * (RunOptions.tailReads, native/tail-rows.cc): told to the statement's connection without a statement, and read by
 * a filter in the ring's scan instead of a join with a temporary table (a fill and a join cost ~1 ms a read in
 * DuckDB, 1.5 of bench/rollups' never-stale read's 2.4 against the materialized read's 0.8, tail-read.mjs).
 */
export const tailReadsByRing = (reads: ReadonlyMap<string, number>): Map<string, number> =>
  new Map([...reads].map(([table, id]) => [databaseOf(table), id]));

/** How a statement's views are told which row of a ring they read: its fill (tailReadsSql), or natively (tailReadsByRing). */
export type TailChoice = 'fill' | 'native';

/**
 * A kept tail as a relation for a scope: its audiences' rows. `chosen`: its row is the one the statement is told
 * (TailChoice), else its id is written in. A row deleted since fails the statement (goneMessage).
 */
export function tailRows(row: TailRow, scope: TableScope, chosen?: TailChoice): string {
  const filter = audienceFilter(scope);
  const rows =
    chosen === 'native'
      ? // The addon's init fails the run when its row was deleted (tail-rows.cc), so no join is needed to see it.
        `SELECT __row.* FROM (SELECT unnest(__rows) AS __row FROM ${row.table} WHERE __id = __orrery_tail_row('${databaseOf(row.table)}'))`
      : joinedRows(row, chosen === 'fill');
  return filter ? `SELECT * FROM (${rows}) WHERE ${filter}` : rows;
}

/** A kept tail's rows read through a join with one row naming it: none (a row deleted since) fails the statement. */
function joinedRows(row: TailRow, filled: boolean): string {
  // One row naming the ring's row read, joined to it (ids are never used twice: at most one row matches). A join,
  // not a scalar subquery and an aggregate checking the count: DuckDB runs each of those as a pipeline of its own.
  const id = filled ? `SELECT ${databaseOf(row.table)} AS __id FROM ${tailReads}` : `SELECT ${row.id} AS __id`;
  return `SELECT __row.* FROM (SELECT unnest(CASE WHEN __ring.__id IS NULL THEN error('${goneMessage(row.table)}') ELSE __ring.__rows END) AS __row FROM (${id}) AS __read LEFT JOIN ${row.table} AS __ring ON __ring.__id = __read.__id)`;
}

/**
 * Each column of a rollup's aggregate: its name and how its values over parts of the rows merge (the
 * aggregate function merging them, `count` for a count's sum; null: a group column); an arg_max's (arg_min's)
 * merges by the column storing the extreme it chose by (`by`: see argOrderState).
 */
export type TailMerge = ReadonlyArray<{ readonly name: string; readonly merge: string | null; readonly by?: string }>;

/**
 * How a rollup's aggregate merges over parts of its rows (see above): null when an aggregate of its
 * select list does not merge, or its statement cannot be read back.
 */
export async function tailMerge(engine: DuckDBEngine, definition: RollupDefinition): Promise<TailMerge | null> {
  const node = (await engine.parseSelect(definition.query))?.statements[0]?.node as Node | undefined;
  if (node?.type !== 'SELECT_NODE') return null;
  const items = node.select_list as Node[];
  const groups = new Set((node.group_expressions as Node[]).map((g) => key(g, new Set())));
  if (items.length !== definition.columns.length) return null;
  const out: Array<{ name: string; merge: string | null; by?: string }> = [];
  const keys = items.map((item) => key(item, new Set()));
  for (const [i, item] of items.entries()) {
    const name = definition.columns[i];
    if (groups.has(keys[i])) {
      out.push({ name, merge: null });
      continue;
    }
    // arg_max(x, y) merges by the extreme stored beside it (a resources entry's `<measure>__order`); without it, not.
    const order = argOrderState(item);
    if (order) {
      const by = keys.indexOf(key(order.state, new Set()));
      if (by < 0) return null;
      out.push({ name, merge: order.merge, by: definition.columns[by] });
      continue;
    }
    const fn = item.class === 'FUNCTION' ? String(item.function_name).toLowerCase() : '';
    const merge = mergeOf[fn];
    const ordered = ((item.order_bys as Node | undefined)?.orders as unknown[] | undefined)?.length ?? 0;
    if (merge === undefined || item.distinct === true || ordered > 0) return null;
    out.push({ name, merge: fn === 'count' || fn === 'count_star' ? 'count' : merge });
  }
  return out;
}

/** The aggregates whose value over one row (rowPartials) merges as a part of the rows' aggregate does. */
const ofOneRow: Record<string, (argument: Node | undefined) => Node | undefined> = {
  count_star: () => cast(integer(1), { id: 'BIGINT', type_info: null }),
  count: (x) =>
    x &&
    cast(
      { class: 'OPERATOR', type: 'OPERATOR_IS_NOT_NULL', alias: '', children: [x] },
      { id: 'BIGINT', type_info: null },
    ),
  sum: (x) => x,
  min: (x) => x,
  max: (x) => x,
};

/**
 * A rollup's statement with each aggregate's value over a single row instead (count(*): 1, count(x): whether x is
 * not null, sum, min and max: x) and no GROUP BY: a row per source row, which merges (mergedTail) with parts of the
 * aggregate as the rows' own aggregate would. Merged with a kept tail, the files written since are aggregated once
 * (with it) instead of twice (on their own, then with it): a hash aggregate less per read, ~1-2 ms of DuckDB's
 * ~4 for a few hundred rows. Null when an aggregate has no such value (a FILTER, a sketch, an arg_max...).
 */
export async function rowPartials(engine: DuckDBEngine, definition: RollupDefinition): Promise<string | null> {
  const tree = await engine.parseSelect(definition.query);
  const node = tree?.statements[0]?.node as Node | undefined;
  if (!tree || node?.type !== 'SELECT_NODE' || node.having || node.qualify) return null;
  const items = node.select_list as Node[];
  const groups = new Set((node.group_expressions as Node[]).map((g) => key(g, new Set())));
  if (items.length !== definition.columns.length) return null;
  const partials: Node[] = [];
  for (const [i, item] of items.entries()) {
    if (groups.has(key(item, new Set()))) {
      partials.push(item);
      continue;
    }
    const fn = item.class === 'FUNCTION' ? String(item.function_name).toLowerCase() : '';
    const children = item.children as Node[] | undefined;
    const ordered = ((item.order_bys as Node | undefined)?.orders as unknown[] | undefined)?.length ?? 0;
    const one = fn in ofOneRow && (children?.length ?? 0) <= 1 && !item.filter && !item.distinct && ordered === 0;
    const partial = one ? ofOneRow[fn](children?.[0]) : undefined;
    if (!partial) return null;
    partials.push({ ...partial, alias: definition.columns[i] });
  }
  node.select_list = partials;
  node.group_expressions = [];
  node.group_sets = [];
  return engine.deparse(tree);
}

/** The merge of parts of a rollup's aggregate (`parts`, a SELECT of its columns in order) into one row per bucket and group. */
export function mergedTail(merge: TailMerge, parts: string): string {
  const columns = merge.map(({ name, merge: how, by }) => {
    const column = quoteIdentifier(name);
    if (how === null) return column;
    // The parts' own columns (a FROM column is bound before an alias of the select list).
    if (by !== undefined) return `${how}(${column}, ${quoteIdentifier(by)}) AS ${column}`;
    // A sum of counts is a HUGEINT: the count's own type is BIGINT.
    return how === 'count' ? `CAST(sum(${column}) AS BIGINT) AS ${column}` : `${how}(${column}) AS ${column}`;
  });
  const groups = merge.filter((c) => c.merge === null).map((c) => quoteIdentifier(c.name));
  return `SELECT ${columns.join(', ')} FROM (${parts}) AS __parts GROUP BY ${groups.join(', ')}`;
}
