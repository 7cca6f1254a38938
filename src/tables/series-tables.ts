import { quoteIdentifier, type DuckDBEngine, type EngineSession } from '../engine/index.js';
import type { MetadataStore } from '../metadata/index.js';
import { lakeCatalog, lakeMetadataSchema } from './lake-catalog.js';
import { flushTable, inlinedTables, type FlushOutcome } from './inlined-flush.js';
import { seriesStatementError, tableErrors } from './errors.js';
import { splitTopLevel, unquote, type SeriesStatement } from './series-statements.js';

/** The column Orrery adds to every series table: who may read a row. */
export const audienceColumn = 'audience';

/**
 * How the stored columns of column entries are named (`__orr_<hash>`, src/resources/stored-columns.ts). On a series
 * table they are DuckLake columns clients neither see nor write: a table's columns, its `*` and an INSERT without a
 * column list leave them out.
 */
export const isStoredColumn = (name: string): boolean => name.toLowerCase().startsWith('__orr_');

export interface SeriesColumn {
  readonly name: string;
  /** DuckDB's type name. */
  readonly type: string;
}

/** A series table as the DuckLake catalog holds it; Orrery's settings ride in the table comment. */
export interface SeriesTable {
  readonly name: string;
  readonly columns: readonly SeriesColumn[];
  /** The stored columns of column entries DuckLake holds for it (isStoredColumn), which clients do not see. */
  readonly storedColumns?: readonly SeriesColumn[];
  readonly timeColumn: string;
  /** set_retention: an interval (`30 days`) for a time column, a count for an integer one. */
  readonly retention?: string;
}

/** Who writes: admins may set the audience; others' rows get their first audience. */
export interface Writer {
  readonly admin: boolean;
  readonly audience: string;
}

/**
 * What depends on a series table, by kind ('rollup', ...): names of the objects that read it and
 * would break if it were dropped. Components that build on series tables register one.
 */
export type DependentsSource = (table: string) => Promise<readonly string[]>;

/** What retention did to a series table: the rows it deleted, or the error it failed with. */
type RetentionOutcome =
  { readonly table: string; readonly deleted: number } | { readonly table: string; readonly error: unknown };

/**
 * How retention deletes a table's expired rows (`rowsGone`, a filter over its columns): by running
 * `deleting(rows)`, the DELETE of the rows a filter selects (`rowsGone`, or fewer), answering how many rows it
 * deleted. Rollups on the table run it in a transaction that first keeps their buckets of those rows (Rollups.retain).
 */
export type RetentionDelete = (table: string, rowsGone: string, deleting: (rows: string) => string) => Promise<number>;

/** The rows a reader sees: every row, or those of its audiences. */
export type TableScope =
  { readonly kind: 'all' } | { readonly kind: 'audiences'; readonly audiences: readonly string[] };

interface TableSettings {
  time_column: string;
  retention?: string;
}

const timeTypes = /^(TIMESTAMP(_S|_MS|_NS)?|TIMESTAMP WITH TIME ZONE|TIMESTAMPTZ|DATE)$/i;
/** How many of a table's newest data files its rate is told from (see rate). */
const rateFiles = 64;

const integerTypes = /^(TINYINT|SMALLINT|INTEGER|BIGINT|UTINYINT|USMALLINT|UINTEGER|UBIGINT|HUGEINT)$/i;

const quoteLiteral = (text: string): string => `'${text.replaceAll("'", "''")}'`;

/** A DuckLake snapshot and its schema version. */
export interface LakeVersion {
  readonly snapshot: bigint;
  readonly schemaVersion: bigint;
}

/** DuckLake's latest snapshot (`snapshot`) and its schema version (`schema`), as text: one indexed row in Postgres. */
export const lakeVersionSql = `SELECT snapshot_id::text AS snapshot, schema_version::text AS schema
  FROM ${lakeMetadataSchema}.ducklake_snapshot ORDER BY snapshot_id DESC LIMIT 1`;

/** A series table's name in the DuckLake catalog. */
export const lakeTable = (name: string): string => `${lakeCatalog}.main.${quoteIdentifier(name)}`;

/**
 * The table's columns as clients see them: in the lake's order with the audience column last, where
 * CREATE TABLE put it (a column added later lands after it in DuckLake), its stored columns left out;
 * an INSERT without a column list fills them in this order.
 */
export const tableColumnsSelect = `COLUMNS(lambda c: c <> '${audienceColumn}' AND NOT starts_with(lower(c), '__orr_')), ${audienceColumn}`;

/**
 * A series table's rows a scope reads (its audiences' and public ones), through DuckLake's scan; as of a snapshot
 * when given. The columns in the order of tableColumnsSelect.
 */
export function tableRows(name: string, scope: TableScope, snapshot?: bigint): string {
  return `SELECT ${tableColumnsSelect} FROM ${lakeTable(name)}${snapshot === undefined ? '' : ` AT (VERSION => ${snapshot})`}${scopeFilter(scope)}`;
}

/** The WHERE by which a scope reads a series table's rows (its audiences' and public ones); '' for every row. */
export const scopeFilter = (scope: TableScope): string =>
  scope.kind === 'all'
    ? ''
    : ` WHERE ${audienceColumn} IN (${[...new Set([...scope.audiences, 'public'])].map(quoteLiteral).join(', ')})`;

/**
 * Series tables: tables clients write, kept in DuckLake (catalog in Orrery's Postgres, Parquet
 * under the lake), read through views filtered by audience. Every process attached to the same
 * catalog sees the same tables: the list is kept only for the DuckLake snapshot it was read at
 * (any change to any table, from any process, is a new snapshot).
 */
export class SeriesTables {
  private readonly dependents: Array<{ kind: string; source: DependentsSource }> = [];
  private listed: { schemaVersion: bigint; tables: ReadonlyMap<string, SeriesTable> } | undefined;
  private unquotedKeywords: Promise<ReadonlySet<string>> | undefined;

  constructor(
    private readonly engine: DuckDBEngine,
    private readonly metadata: MetadataStore,
    /** Names taken by view sets and static tables. */
    private readonly reservedNames: () => ReadonlySet<string>,
  ) {}

  /** Whether a view set or static table has this name (so no series table can). */
  isReserved(name: string): boolean {
    return this.reservedNames().has(name);
  }

  /**
   * DuckLake's latest snapshot id, read from its catalog table in Postgres: one indexed max over
   * the pool, where DuckDB's `current_snapshot()` costs a round of DuckLake catalog queries.
   */
  async currentSnapshot(): Promise<bigint> {
    return (await this.currentVersion()).snapshot;
  }

  /** DuckLake's latest snapshot and its schema version (which every change of a table's columns or comment moves). */
  async currentVersion(): Promise<LakeVersion> {
    const { rows } = await this.metadata.query<{ snapshot: string; schema: string }>(lakeVersionSql);
    return { snapshot: BigInt(rows[0].snapshot), schemaVersion: BigInt(rows[0].schema) };
  }

  /** Registers what depends on series tables (`kind` names it in errors: 'rollup'); DROP TABLE is refused while any does. */
  addDependents(kind: string, source: DependentsSource): void {
    this.dependents.push({ kind, source });
  }

  /**
   * Throws, naming each one (`rollup 'cpu_5m'`), when something registered depends on the table:
   * DROP TABLE calls it before dropping, and ALTER TABLE before a change other than ADD COLUMN
   * (a dropped, renamed or retyped column, or a renamed table, breaks what reads it).
   */
  async checkDroppable(table: string, change?: string): Promise<void> {
    const found: string[] = [];
    for (const { kind, source } of this.dependents) {
      for (const name of await source(table)) found.push(`${kind} '${name}'`);
    }
    if (found.length > 0) {
      const what = change === undefined ? `drop series table '${table}'` : `alter series table '${table}' (${change})`;
      throw tableErrors.error(
        'SERIES_TABLE_HAS_DEPENDENTS',
        `cannot ${what}: ${found.join(', ')} ${found.length > 1 ? 'depend' : 'depends'} on it; drop ${found.length > 1 ? 'them' : 'it'} first`,
      );
    }
  }

  /**
   * Every series table, by name: as a transaction sees them, or else as of the latest snapshot
   * (read from DuckDB's catalog once per snapshot: a statement over series tables lists them).
   */
  async list(session?: EngineSession): Promise<ReadonlyMap<string, SeriesTable>> {
    if (session) return this.read(session);
    return (await this.listAt()).tables;
  }

  /**
   * list() as of the latest snapshot, with that snapshot's id: one Postgres query while no table changes
   * (none when the caller has just read the latest snapshot's version: `latest`). The listing is read
   * from DuckDB once per schema version (a table's columns and settings, its comment, are schema), not
   * again at each snapshot a write or a rollup's refresh makes.
   */
  async listAt(
    latest?: LakeVersion,
  ): Promise<{ readonly snapshot: bigint; readonly tables: ReadonlyMap<string, SeriesTable> }> {
    const { snapshot, schemaVersion } = latest ?? (await this.currentVersion());
    if (this.listed?.schemaVersion === schemaVersion) return { snapshot, tables: this.listed.tables };
    // Read at this version or a later one: a later list kept under an older version is re-read next time.
    const tables = await this.read();
    this.listed = { schemaVersion, tables };
    return { snapshot, tables };
  }

  private async read(session?: EngineSession): Promise<ReadonlyMap<string, SeriesTable>> {
    const rows = await this.engine.values(
      `SELECT t.table_name, t.comment, c.column_name, c.data_type
       FROM duckdb_tables() t JOIN duckdb_columns() c USING (database_name, schema_name, table_name)
       WHERE t.database_name = '${lakeCatalog}' AND t.schema_name = 'main'
       ORDER BY t.table_name, c.column_index`,
      session,
    );
    const tables = new Map<string, { columns: SeriesColumn[]; stored: SeriesColumn[]; settings: TableSettings }>();
    for (const [name, comment, column, type] of rows as string[][]) {
      let entry = tables.get(name);
      if (!entry) tables.set(name, (entry = { columns: [], stored: [], settings: settingsOf(comment) }));
      (isStoredColumn(column) ? entry.stored : entry.columns).push({ name: column, type });
    }
    // In the order of tableColumnsSelect.
    const audienceLast = (columns: SeriesColumn[]): SeriesColumn[] => [
      ...columns.filter((c) => c.name !== audienceColumn),
      ...columns.filter((c) => c.name === audienceColumn),
    ];
    return new Map(
      [...tables].map(([name, { columns, stored, settings }]) => [
        name,
        {
          name,
          columns: audienceLast(columns),
          ...(stored.length > 0 ? { storedColumns: stored } : {}),
          timeColumn: settings.time_column,
          retention: settings.retention,
        },
      ]),
    );
  }

  /**
   * Temporary views that make the tables readable under their own names, filtered for the scope;
   * as of a DuckLake snapshot when given (a statement that also reads rollups reads both there).
   */
  readViews(tables: Iterable<SeriesTable>, scope: TableScope, snapshot?: bigint): string[] {
    return [...tables].map(
      (table) =>
        `CREATE OR REPLACE TEMP VIEW ${quoteIdentifier(table.name)} AS ${tableRows(table.name, scope, snapshot)}`,
    );
  }

  /**
   * CREATE TABLE of a series table, in its own transaction (DuckDBEngine.transaction): the table with the audience column
   * added, its time column checked and recorded. Returns false, changing nothing, for a table
   * without a time column (not a series table), which then runs as an ordinary statement.
   */
  async create(
    statement: Extract<SeriesStatement, { kind: 'create' }>,
    session: EngineSession,
    { inTransaction = false }: { inTransaction?: boolean } = {},
  ): Promise<boolean> {
    const { table } = statement;
    if (this.isReserved(table))
      throw seriesStatementError(
        `'${table}' is the name of a view set or static table; give the series table another name`,
      );
    const existing = await this.list(session);
    if (existing.has(table)) {
      if (statement.ifNotExists) return true;
      throw tableErrors.error('SERIES_TABLE_EXISTS', `series table '${table}' already exists`);
    }
    const names = splitTopLevel(statement.columns).map((c) => unquote(c.trim().split(/\s+/)[0] ?? ''));
    const stored = names.find(isStoredColumn);
    if (stored !== undefined)
      throw seriesStatementError(
        `CREATE TABLE ${table}: names starting with __orr_ are the stored columns of published column entries; name '${stored}' otherwise`,
      );
    if (names.includes(audienceColumn)) {
      throw seriesStatementError(
        `CREATE TABLE ${table}: the '${audienceColumn}' column is added by Orrery; leave it out`,
      );
    }
    const work = async (): Promise<boolean> => {
      await this.run(
        `CREATE TABLE ${lakeTable(table)} (${statement.columns}, ${audienceColumn} VARCHAR NOT NULL DEFAULT 'public')`,
        session,
      );
      const created = (await this.list(session)).get(table)!;
      await this.checkColumnNames(created);
      const timeColumn = pickTimeColumn(created, statement.timeColumn);
      if (!timeColumn) return false;
      await this.writeSettings(table, { time_column: timeColumn }, session);
      return true;
    };
    if (inTransaction) {
      // The caller's transaction goes on: a table refused here is dropped in it, as one that is not a series table.
      const dropped = () => this.run(`DROP TABLE IF EXISTS ${lakeTable(table)}`, session);
      const created = await work().catch(async (error: unknown) => {
        await dropped();
        throw error;
      });
      if (created) return true;
      await dropped();
      return false;
    }
    return this.engine.transaction(session, work, (created) => created);
  }

  /**
   * The columns DuckLake sorts the table's new files by (SET SORTED BY, which index entries of resources files
   * set: series-indexes.ts), in order, read from its catalog in Postgres; unquoted, as DuckLake keeps plain names.
   */
  async sortedBy(table: string): Promise<string[]> {
    const s = lakeMetadataSchema;
    const { rows } = await this.metadata.query<{ expression: string }>(
      `SELECT e.expression FROM ${s}.ducklake_sort_info i
         JOIN ${s}.ducklake_sort_expression e ON e.sort_id = i.sort_id AND e.table_id = i.table_id
         JOIN ${s}.ducklake_table t ON t.table_id = i.table_id AND t.end_snapshot IS NULL
         JOIN ${s}.ducklake_schema n ON n.schema_id = t.schema_id AND n.schema_name = 'main' AND n.end_snapshot IS NULL
        WHERE t.table_name = $1 AND i.end_snapshot IS NULL ORDER BY e.sort_key_index`,
      [table],
    );
    return rows.map((r) => unquote(r.expression));
  }

  /**
   * The rate the table's rows came at while they were written, in rows per unit of its time column (seconds for a
   * time column): the median over its newest rateFiles data files of each one's rows over the time it covers (its
   * least to its greatest value of the time column, from DuckLake's file statistics in Postgres), the gaps between
   * writes left out. A median, and of the newest files: one file's stray row (a clock at 1970) makes that file's rate
   * next to nothing without moving the median, and a rate that changed shows once half the newest files were
   * written at it. Files whose range has an infinite end (a row at 'infinity': its statistics tell no span) and files
   * of one instant are left out; undefined when no file is left.
   */
  async rate(table: SeriesTable): Promise<number | undefined> {
    const s = lakeMetadataSchema;
    const integer = integerTypes.test(table.columns.find((c) => c.name === table.timeColumn)?.type ?? '');
    const span = integer
      ? 'c.max_value::numeric - c.min_value::numeric'
      : `CASE WHEN isfinite(c.min_value::timestamptz) AND isfinite(c.max_value::timestamptz)
          THEN extract(epoch FROM c.max_value::timestamptz - c.min_value::timestamptz) END`;
    // The time column's statistics first (MATERIALIZED): a condition on the span pushed down to the statistics of
    // every column would cast other columns' values.
    const { rows } = await this.metadata.query<{ rate: number | null }>(
      `WITH c AS MATERIALIZED (
         SELECT d.data_file_id, d.record_count, c.min_value, c.max_value FROM ${s}.ducklake_table t
           JOIN ${s}.ducklake_schema n ON n.schema_id = t.schema_id AND n.schema_name = 'main' AND n.end_snapshot IS NULL
           JOIN ${s}.ducklake_column col ON col.table_id = t.table_id AND col.column_name = $2 AND col.end_snapshot IS NULL
           JOIN ${s}.ducklake_data_file d ON d.table_id = t.table_id AND d.end_snapshot IS NULL
           JOIN ${s}.ducklake_file_column_stats c ON c.data_file_id = d.data_file_id AND c.column_id = col.column_id
          WHERE t.table_name = $1 AND t.end_snapshot IS NULL)
       SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY f.record_count / f.span) AS rate FROM (
         SELECT c.record_count::float8 AS record_count, (${span})::float8 AS span FROM c
          WHERE (${span}) > 0 ORDER BY c.data_file_id DESC LIMIT ${rateFiles}) f`,
      [table.name, table.timeColumn],
    );
    return rows[0]?.rate ?? undefined;
  }

  /** ALTER TABLE, keeping the audience column and the time column (a renamed time column is followed). */
  async alter(table: SeriesTable, action: string, session: EngineSession): Promise<void> {
    const drop = /^DROP\s+(?:COLUMN\s+)?(?:IF\s+EXISTS\s+)?("(?:[^"]|"")+"|\w+)/i.exec(action);
    const rename = /^RENAME\s+(?:COLUMN\s+)?("(?:[^"]|"")+"|\w+)\s+TO\s+("(?:[^"]|"")+"|\w+)\s*$/i.exec(action);
    const add = /^ADD\s+(?:COLUMN\s+)?(?:IF\s+NOT\s+EXISTS\s+)?("(?:[^"]|"")+"|\w+)/i.exec(action);
    const touched = drop ? unquote(drop[1]) : rename ? unquote(rename[1]) : undefined;
    const named = [touched, add && unquote(add[1]), rename && unquote(rename[2])].find((c) => c && isStoredColumn(c));
    if (named)
      throw seriesStatementError(
        `'${named}': names starting with __orr_ are the stored columns of published column entries; name the column otherwise`,
      );
    if (touched === audienceColumn)
      throw seriesStatementError(`the '${audienceColumn}' column of a series table cannot be dropped or renamed`);
    if (drop && touched === table.timeColumn) {
      throw seriesStatementError(`'${touched}' is the time column of '${table.name}' and cannot be dropped`);
    }
    if (!rename && !drop && !/^ADD\b/i.test(action))
      throw seriesStatementError('ALTER TABLE on a series table: ADD, DROP or RENAME COLUMN');
    // Renamed, DuckLake would follow, but the entries sorting by it name the old column: status would call the table
    // unsorted and a publish omit them ('not a column').
    if (touched !== undefined && (await this.sortedBy(table.name)).includes(touched))
      throw seriesStatementError(
        `'${touched}' sorts '${table.name}' for index entries of published resources files (DuckLake sorts its new files by it): it can be ${drop ? 'dropped' : 'renamed'} once no publication declares them and prune has dropped them`,
      );
    await this.engine.transaction(session, async () => {
      await this.run(`ALTER TABLE ${lakeTable(table.name)} ${action}`, session);
      await this.checkColumnNames((await this.list(session)).get(table.name)!);
      if (rename && touched === table.timeColumn) {
        await this.writeSettings(table.name, { time_column: unquote(rename[2]), retention: table.retention }, session);
      }
    });
  }

  /**
   * set_retention: rows older than `keep` are deleted by the daemon (`applyRetention`). `keep` is
   * an interval for a time column, a count of its units for an integer one; null keeps every row.
   */
  async setRetention(name: string, keep: string | number | bigint | null): Promise<string> {
    const table = (await this.list()).get(name);
    if (!table)
      throw tableErrors.error('SERIES_TABLE_NOT_FOUND', `set_retention: series table '${name}' does not exist`);
    const column = table.columns.find((c) => c.name === table.timeColumn);
    const integer = column !== undefined && integerTypes.test(column.type);
    let retention: string | undefined;
    if (keep !== null) {
      if (integer) {
        if (!/^[1-9]\d*$/.test(String(keep)))
          throw seriesStatementError(
            `set_retention: '${name}' keeps integer time (${table.timeColumn}): give a positive count`,
          );
        retention = String(keep);
      } else {
        if (typeof keep !== 'string')
          throw seriesStatementError(
            `set_retention: '${name}' keeps time in ${table.timeColumn}: give an interval such as '30 days'`,
          );
        const [[positive]] = await this.engine.values(
          `SELECT TRY_CAST(${quoteLiteral(keep)} AS INTERVAL) > INTERVAL 0 SECOND`,
        );
        if (positive !== true) throw seriesStatementError(`set_retention: '${keep}' is not a positive interval`);
        retention = keep;
      }
    }
    const session = await this.engine.openSession();
    try {
      await this.engine.transaction(session, () =>
        this.writeSettings(name, { time_column: table.timeColumn, retention }, session),
      );
    } finally {
      session.close();
    }
    return retention === undefined
      ? `${name} keeps every row`
      : `${name} keeps ${integer ? `the last ${retention} of ${table.timeColumn}` : retention}`;
  }

  /**
   * Deletes, as ordinary DELETEs (which DuckLake's change feed shows), the rows past each table's retention: each
   * table's how many, or why not (a table's failure leaves the others' retention to go on).
   */
  async applyRetention(
    remove: RetentionDelete = (_table, rowsGone, deleting) => this.engine.execute(deleting(rowsGone)),
  ): Promise<RetentionOutcome[]> {
    const out: RetentionOutcome[] = [];
    for (const table of (await this.list()).values()) {
      if (!table.retention) continue;
      const column = table.columns.find((c) => c.name === table.timeColumn);
      if (!column) continue;
      const target = lakeTable(table.name);
      const time = quoteIdentifier(table.timeColumn);
      const horizon = integerTypes.test(column.type)
        ? `(SELECT max(${time}) FROM ${target}) - ${BigInt(table.retention)}`
        : `now() - INTERVAL ${quoteLiteral(table.retention)}`;
      const rowsGone = `${time} < ${horizon}`;
      try {
        out.push({
          table: table.name,
          deleted: await remove(table.name, rowsGone, (rows) => `DELETE FROM ${target} WHERE ${rows}`),
        });
      } catch (error) {
        out.push({ table: table.name, error });
      }
    }
    return out;
  }

  /**
   * Writes each series table's rows and deletes DuckLake keeps inlined in its catalog to files (see
   * inlined-flush.ts): each table's count of rows written, or why not (a table's failure leaves the others' to go
   * on). Tables without any are left alone, so a run that finds none makes no snapshot. It takes no lock of ours:
   * it changes no row (so no rollup's refresh lock, as retention takes), and is one DuckLake commit like a client's
   * write. Tables with stored columns of column entries (series-columns.ts) are left alone too: after a flush of such
   * a table (a column added by ALTER TABLE since its first rows), every read of it failed ("Attempting to fetch from
   * an unsuccessful query result", DuckLake's catalog in Postgres; series-inlined-flush), where its rows read inlined
   * do not.
   */
  async flushInlined(): Promise<FlushOutcome[]> {
    const out: FlushOutcome[] = [];
    const names = [...(await this.list()).values()].filter((t) => !t.storedColumns).map((t) => t.name);
    for (const table of await inlinedTables(this.metadata, 'main', names))
      out.push(await flushTable(this.engine, 'main', table));
    return out;
  }

  /**
   * The SQL that runs a write on the DuckLake table. INSERT bodies are wrapped so that the
   * audience column of a non-admin's rows is its audience, whatever the body says.
   */
  rewrite(statement: SeriesStatement, table: SeriesTable, writer: Writer, bodyWidth: number): string {
    const target = lakeTable(table.name);
    switch (statement.kind) {
      case 'drop':
        return `DROP TABLE ${target}`;
      case 'update':
        return `UPDATE ${target} ${statement.rest}`;
      case 'delete':
        return `DELETE FROM ${target}${statement.rest}`;
      case 'truncate':
        return `DELETE FROM ${target}`;
      case 'insert':
        return insertSql(statement, table, writer, bodyWidth);
      default:
        throw new Error(`rewrite: ${statement.kind} is not rewritten`);
    }
  }

  /**
   * Why DuckLake's catalog cannot store one of these columns of `owner` (a message), or undefined when it
   * can: DuckLake writes a name DuckDB does not know as a keyword unquoted into the Postgres statement
   * that makes the table of its inlined rows, where a word Postgres reserves (current_timestamp,
   * current_date, current_user, ...) fails the commit with a raw syntax error. Asked before the commit,
   * so nothing of a refused statement remains.
   */
  async catalogRefusal(owner: string, columns: readonly string[]): Promise<string | undefined> {
    this.unquotedKeywords ??= this.readUnquotedKeywords();
    const refused = await this.unquotedKeywords;
    const bad = columns.find((c) => refused.has(c));
    return bad === undefined
      ? undefined
      : `column '${bad}' of '${owner}': the lake's catalog (Postgres) reserves the word '${bad}'; name the column otherwise`;
  }

  private async checkColumnNames(table: SeriesTable): Promise<void> {
    const refusal = await this.catalogRefusal(
      table.name,
      table.columns.map((c) => c.name),
    );
    if (refusal) throw seriesStatementError(refusal);
  }

  /** Postgres's reserved words that cannot name a column, less DuckDB's keywords (which DuckLake quotes). */
  private async readUnquotedKeywords(): Promise<ReadonlySet<string>> {
    const { rows } = await this.metadata.query<{ word: string }>(
      "SELECT word FROM pg_get_keywords() WHERE catcode IN ('R', 'T')",
    );
    const duckdb = new Set((await this.engine.values('SELECT keyword_name FROM duckdb_keywords()')).map(([w]) => w));
    return new Set(rows.map((r) => r.word).filter((word) => !duckdb.has(word)));
  }

  private async writeSettings(table: string, settings: TableSettings, session: EngineSession): Promise<void> {
    await this.run(`COMMENT ON TABLE ${lakeTable(table)} IS ${quoteLiteral(JSON.stringify(settings))}`, session);
  }

  private async run(sql: string, session: EngineSession): Promise<void> {
    await this.engine.execute(sql, { session });
  }
}

function settingsOf(comment: string | null): TableSettings {
  try {
    const parsed = JSON.parse(comment ?? '') as TableSettings;
    if (typeof parsed.time_column === 'string') return parsed;
  } catch {
    // a table whose comment is not Orrery's: no time column known
  }
  return { time_column: '' };
}

/** The time column: the one named (which must be a timestamp, date or integer), else the only timestamp. */
function pickTimeColumn(table: SeriesTable, named: string | undefined): string | null {
  if (named !== undefined) {
    const column =
      table.columns.find((c) => c.name === named) ??
      table.columns.find((c) => c.name.toLowerCase() === named.toLowerCase());
    if (!column) throw seriesStatementError(`time_column '${named}' is not a column of '${table.name}'`);
    if (!timeTypes.test(column.type) && !integerTypes.test(column.type)) {
      throw seriesStatementError(
        `time_column '${named}' is ${column.type}: it must be a TIMESTAMP, TIMESTAMPTZ, DATE or integer column`,
      );
    }
    return column.name;
  }
  const candidates = table.columns.filter((c) => /^TIMESTAMP/i.test(c.type));
  if (candidates.length > 1) {
    throw seriesStatementError(
      `'${table.name}' has several timestamp columns (${candidates.map((c) => c.name).join(', ')}): name one with WITH (time_column = '...')`,
    );
  }
  return candidates[0]?.name ?? null;
}

/**
 * INSERT INTO the lake table. The body's columns are named after the target columns they fill
 * (the list given, or the table's columns in order); for a non-admin the audience column is then
 * replaced, or added, with the writer's audience.
 */
function insertSql(
  statement: Extract<SeriesStatement, { kind: 'insert' }>,
  table: SeriesTable,
  writer: Writer,
  bodyWidth: number,
): string {
  const known = new Map(table.columns.map((c) => [c.name.toLowerCase(), c.name]));
  const named = (statement.columns ?? table.columns.slice(0, bodyWidth).map((c) => c.name)).map((c) => {
    const column = known.get(c.toLowerCase());
    if (!column) throw seriesStatementError(`column '${c}' is not in series table '${table.name}'`);
    return column;
  });
  if (named.length !== bodyWidth) {
    throw seriesStatementError(
      `INSERT INTO ${table.name}: ${named.length} columns named but the values have ${bodyWidth}`,
    );
  }
  const target = lakeTable(table.name);
  const list = (names: readonly string[]): string => names.map(quoteIdentifier).join(', ');
  if (writer.admin)
    return `INSERT INTO ${target} (${list(named)}) SELECT * FROM (${statement.body}) AS __values(${list(named)})`;
  const stamped = quoteLiteral(writer.audience);
  const hasAudience = named.includes(audienceColumn);
  const select = hasAudience ? `* REPLACE (${stamped} AS ${audienceColumn})` : `*, ${stamped}`;
  const columns = hasAudience ? named : [...named, audienceColumn];
  return `INSERT INTO ${target} (${list(columns)}) SELECT ${select} FROM (${statement.body}) AS __values(${list(named)})`;
}
