// Column entries of resources files on series tables (issue 13): the stored column `__orr_<hash>` is a DuckLake column
// of the table (ALTER TABLE ADD COLUMN), which clients neither see nor write (isStoredColumn: a table's columns, its
// `*` and an INSERT without a column list leave it out). Publication fills it with the expression's value by UPDATEs,
// a day of the time column at a time, newest first, then checks at one snapshot that every row holds its value and
// records that snapshot and the table's next row id (resource_series_fills). Clients' writes do not compute it; a
// read instead tells the rows the fill reached by their DuckLake row ids, which are kept through UPDATE and merges
// and grow for rows added: a statement reading the column (src/sql/series-column-reads.ts) reads it for rows below
// the recorded next row id and computes the expression for the others, as long as every snapshot since the fill
// only added rows or only deleted them. One that may have changed rows (an UPDATE, a transaction deleting and
// adding), a change of the table's columns, or the table made again: the expression is computed for every row until
// the next publication fills the column again. So answers never depend on how far a fill got.
import { quoteIdentifier, type DuckDBEngine } from '../engine/index.js';
import type { MetadataQueries } from '../metadata/index.js';
import {
  ensureLedger,
  forgetColumn,
  recordColumn,
  withStoredColumns,
  type InstallContext,
  type InstalledColumn,
  type ResourceInstaller,
  type ValidEntry,
} from '../resources/index.js';
import { lakeCatalogWrites, lakeMetadataSchema } from './lake-catalog.js';
import {
  lakeTable,
  scopeFilter,
  tableColumnsSelect,
  type SeriesTable,
  type SeriesTables,
  type TableScope,
} from './series-tables.js';

type ColumnEntry = ValidEntry & { readonly kind: 'column' };

/** A stored column filled: every row of the table (DuckLake's `tableId`) at `snapshot` held it; rows added since have row ids from `nextRowId`. */
export interface SeriesFill {
  readonly column: string;
  readonly tableId: string;
  readonly snapshot: bigint;
  readonly nextRowId: bigint;
}

/** The fills recorded of a table's stored columns, by column name. */
export async function seriesFills(db: MetadataQueries, table: string): Promise<Map<string, SeriesFill>> {
  await ensureLedger(db);
  const { rows } = await db.query<{ column_name: string; table_id: string; snapshot: string; next_row_id: string }>(
    `SELECT column_name, table_id::text, snapshot::text, next_row_id::text FROM resource_series_fills WHERE table_name = $1`,
    [table],
  );
  return new Map(
    rows.map((r) => [
      r.column_name,
      { column: r.column_name, tableId: r.table_id, snapshot: BigInt(r.snapshot), nextRowId: BigInt(r.next_row_id) },
    ]),
  );
}

/** What DuckLake records of a snapshot that only adds rows to a table, or only deletes rows of it. */
const onlyAdds = new Set(['inserted_into_table', 'inlined_insert']);
const onlyDeletes = new Set(['deleted_from_table', 'inlined_delete']);

/**
 * Why the table's rows at `snapshot` below a fill's next row id may not hold the column as the fill left them (null:
 * they do): the table made again since, its columns changed, or a snapshot since that may have changed rows.
 */
export async function fillBroken(
  db: MetadataQueries,
  table: string,
  fill: SeriesFill,
  snapshot: bigint,
): Promise<string | null> {
  if (snapshot < fill.snapshot) return 'the statement reads the table as it was before the column was filled';
  const s = lakeMetadataSchema;
  const { rows } = await db.query<{ id: string | null; changes: string[] | null }>(
    `SELECT (SELECT t.table_id::text FROM ${s}.ducklake_table t
               JOIN ${s}.ducklake_schema n ON n.schema_id = t.schema_id AND n.schema_name = 'main'
                AND n.begin_snapshot <= $3 AND (n.end_snapshot IS NULL OR n.end_snapshot > $3)
              WHERE t.table_name = $1 AND t.begin_snapshot <= $3 AND (t.end_snapshot IS NULL OR t.end_snapshot > $3)) AS id,
            ARRAY(SELECT changes_made FROM ${s}.ducklake_snapshot_changes
                   WHERE snapshot_id > $2 AND snapshot_id <= $3 ORDER BY snapshot_id) AS changes`,
    [table, String(fill.snapshot), String(snapshot)],
  );
  if (rows[0]?.id !== fill.tableId) return 'the table was made again since the column was filled';
  for (const made of rows[0].changes ?? []) {
    const kinds = new Set(
      made
        .split(',')
        .map((change) => change.split(':'))
        .filter(([, subject]) => subject === fill.tableId)
        .map(([kind]) => kind),
    );
    if ([...kinds].every((k) => onlyAdds.has(k)) || [...kinds].every((k) => onlyDeletes.has(k))) continue;
    return 'rows of the table may have changed since the column was filled (an UPDATE; publish again to fill it)';
  }
  return null;
}

/**
 * The view through which a statement reads series table `table` at DuckLake snapshot `snapshot` with the stored
 * columns `columns` beside its own: read for the rows every one's fill reached (`fills`, checked at that snapshot by
 * the caller: null for a column whose fill does not hold there), computed for the others.
 */
export function seriesColumnsView(
  table: SeriesTable,
  columns: ReadonlyArray<{ readonly column: InstalledColumn; readonly fill: SeriesFill | null }>,
  scope: TableScope,
  snapshot: bigint,
): string {
  const source = `${lakeTable(table.name)} AT (VERSION => ${snapshot})`;
  const installed = columns.map((c) => c.column);
  const fills = columns.map((c) => c.fill);
  // Rows below the least next row id hold every column as its fill left it.
  const filled = fills.every((f) => f !== null)
    ? fills.reduce((least, f) => (f.nextRowId < least ? f.nextRowId : least), fills[0].nextRowId)
    : null;
  const rows =
    filled === null
      ? withStoredColumns(`SELECT ${tableColumnsSelect} FROM ${source}`, installed)
      : `SELECT ${tableColumnsSelect}, ${installed.map((c) => quoteIdentifier(c.name)).join(', ')} FROM ${source}
          WHERE rowid < ${filled}
         UNION ALL ${withStoredColumns(`SELECT ${tableColumnsSelect} FROM ${source} WHERE rowid >= ${filled}`, installed)}`;
  return `CREATE OR REPLACE TEMP VIEW ${quoteIdentifier(table.name)} AS SELECT * FROM (${rows})${scopeFilter(scope)}`;
}

/** How many times a fill checks its rows and fills those written meanwhile before it gives up (a table written to fast). */
const fillRounds = 5;

/** The installer of column entries: on a series table as above, on anything else `viewSets`' (partition files). */
export function seriesColumnInstaller(
  tables: SeriesTables,
  engine: DuckDBEngine,
  viewSets: ResourceInstaller,
): ResourceInstaller {
  const tableOf = async (name: string) => (await tables.list()).get(name);

  async function* fill(entry: ColumnEntry, table: SeriesTable, ctx: InstallContext) {
    const target = lakeTable(table.name);
    const name = quoteIdentifier(entry.storedName);
    const value = `CAST((${entry.expression}) AS ${entry.storedType!})`;
    const stale = `${name} IS DISTINCT FROM ${value}`;
    const time = quoteIdentifier(table.timeColumn);
    const type = table.columns.find((c) => c.name === table.timeColumn)?.type ?? '';
    // Days of a time column, newest first; an integer one is filled whole by the rounds below.
    const days = /^(TIMESTAMP|DATE)/i.test(type)
      ? (
          await engine.values(
            `SELECT DISTINCT CAST(${time} AS DATE)::VARCHAR AS d FROM ${target} WHERE ${time} IS NOT NULL ORDER BY d DESC`,
          )
        ).map(([d]) => String(d))
      : [];
    // A publication that stopped part way goes on from the day it reached (the rounds below fill any row left).
    const reached = ctx.row.backfilledBegin?.toISOString().slice(0, 10);
    const todo = reached === undefined ? days : days.filter((d) => d < reached);
    const what = `stored column ${entry.key} (${entry.storedName} ${entry.storedType!}) on series table ${table.name}`;
    yield `backfill ${what}: ${todo.length} day(s) to fill, newest first${todo.length < days.length ? ` (${days.length - todo.length} filled before)` : ''}`;
    const started = Date.now();
    let rows = 0;
    for (const [i, day] of todo.entries()) {
      rows += await engine.execute(
        `UPDATE ${target} SET ${name} = ${value}
          WHERE ${time} >= DATE '${day}' AND ${time} < DATE '${day}' + INTERVAL 1 DAY AND ${stale}`,
      );
      await ctx.progress({
        backfilledBegin: new Date(`${day}T00:00:00Z`),
        backfilledEnd: new Date(Date.parse(`${todo[0]}T00:00:00Z`) + 86_400_000),
      });
      const left = ((Date.now() - started) / (i + 1)) * (todo.length - i - 1);
      yield `  ${entry.key}: ${rows} row(s) filled, reached ${day}, about ${Math.ceil(left / 1000)} s left`;
    }
    // Every row at one snapshot holding its value (rows written meanwhile filled by another round): the fill.
    for (let round = 0; round < fillRounds; round++) {
      const snapshot = await tables.currentSnapshot();
      const [[left, next]] = await engine.values(
        `SELECT count(*) FILTER (WHERE ${stale})::BIGINT::VARCHAR, (coalesce(max(rowid), -1) + 1)::VARCHAR
           FROM ${target} AT (VERSION => ${snapshot})`,
      );
      if (Number(left) === 0) {
        const { rows: ids } = await ctx.db.query<{ id: string }>(
          `SELECT t.table_id::text AS id FROM ${lakeMetadataSchema}.ducklake_table t
             JOIN ${lakeMetadataSchema}.ducklake_schema n ON n.schema_id = t.schema_id AND n.schema_name = 'main'
              AND n.begin_snapshot <= $2 AND (n.end_snapshot IS NULL OR n.end_snapshot > $2)
            WHERE t.table_name = $1 AND t.begin_snapshot <= $2 AND (t.end_snapshot IS NULL OR t.end_snapshot > $2)`,
          [table.name, String(snapshot)],
        );
        await ctx.db.query(
          `INSERT INTO resource_series_fills (table_name, column_name, table_id, snapshot, next_row_id)
           VALUES ($1, $2, $3, $4, $5) ON CONFLICT (table_name, column_name)
           DO UPDATE SET table_id = EXCLUDED.table_id, snapshot = EXCLUDED.snapshot, next_row_id = EXCLUDED.next_row_id`,
          [table.name, entry.storedName, ids[0].id, String(snapshot), String(next)],
        );
        yield `  ${entry.key}: every row of ${table.name} holds ${entry.storedName} at snapshot ${snapshot}; rows written since are computed when read`;
        return;
      }
      rows += await engine.execute(`UPDATE ${target} SET ${name} = ${value} WHERE ${stale}`);
      yield `  ${entry.key}: ${rows} row(s) filled (rows written meanwhile)`;
    }
    throw new Error(`${what}: rows were still being written without it after ${fillRounds} rounds; publish again`);
  }

  return {
    // The column is added to the table in DuckLake's catalog; column entries on view sets write what `viewSets` says.
    async writes(db, entries) {
      for (const e of entries)
        if (e.kind === 'column' && (await tableOf(e.table.toLowerCase()))) return lakeCatalogWrites(db);
      return (await viewSets.writes?.(db, entries)) ?? { tables: [], schemas: [] };
    },
    satisfied: async (entry) =>
      (await tableOf(entry.physical)) ? null : ((await viewSets.satisfied?.(entry)) ?? null),
    async unsupported(entry, entries) {
      if (entry.kind !== 'column' || !(await tableOf(entry.physical)))
        return (await viewSets.unsupported?.(entry, entries)) ?? null;
      return null;
    },
    async *install(entry, ctx) {
      const table = entry.kind === 'column' ? await tableOf(entry.physical) : undefined;
      if (!table || entry.kind !== 'column') {
        yield* viewSets.install(entry, ctx);
        return;
      }
      if (entry.storedType === null) return;
      await engine.execute(
        `ALTER TABLE ${lakeTable(table.name)} ADD COLUMN IF NOT EXISTS ${quoteIdentifier(entry.storedName)} ${entry.storedType}`,
      );
      await recordColumn(ctx.db, entry);
      yield* fill(entry, table, ctx);
    },
    serve: viewSets.serve && ((entry, ctx) => viewSets.serve!(entry, ctx)),
    async drift(row, db) {
      const table = row.kind === 'column' ? await tableOf(row.physicalTable) : undefined;
      if (!table || row.declaration.kind !== 'column') return viewSets.drift?.(row, db);
      const column = row.declaration.storedName;
      return table.storedColumns?.some((c) => c.name === column)
        ? null
        : `missing stored column ${column} of series table ${table.name}: not installed (publish again to repair)`;
    },
    async drop(row, ctx) {
      const table = row.kind === 'column' ? await tableOf(row.physicalTable) : undefined;
      if (!table || row.declaration.kind !== 'column') return viewSets.drop(row, ctx);
      const column = row.declaration.storedName;
      await ensureLedger(ctx.db);
      await forgetColumn(ctx.db, table.name, column);
      await ctx.db.query('DELETE FROM resource_series_fills WHERE table_name = $1 AND column_name = $2', [
        table.name,
        column,
      ]);
      await engine.execute(`ALTER TABLE ${lakeTable(table.name)} DROP COLUMN IF EXISTS ${quoteIdentifier(column)}`);
      return `${column} dropped from series table ${table.name}`;
    },
  };
}
