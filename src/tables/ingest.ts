import type { RecordBatch, Schema } from 'apache-arrow';
import { duckdbTypeOf, quoteIdentifier, type DuckDBEngine, type EngineSession } from '../engine/index.js';
import { seriesStatementError, tableErrors } from './errors.js';
import { SeriesTables, audienceColumn, lakeTable, type SeriesTable, type Writer } from './series-tables.js';

/** What to do when the table exists, or does not (Flight SQL's TableDefinitionOptions, as ADBC's ingest modes set them). */
export interface IngestMode {
  /** 1 = create it, 2 (or unspecified) = fail. */
  readonly ifNotExist: number;
  /** 2 = append, 3 = replace, 1 (or unspecified) = fail. */
  readonly ifExists: number;
}

export interface IngestData {
  readonly schema: Schema;
  readonly batches: AsyncIterable<RecordBatch>;
}

/**
 * Bulk ingest into a series table, inside `session`'s transaction (the caller commits or rolls
 * back): creates or replaces the table as the mode says, checks the stream's columns against the
 * table's before any row is written, then streams the batches into the DuckLake table with one
 * INSERT (the engine's insertBatches: memory holds a few batches whatever the upload's size).
 * Returns the rows written.
 */
export async function ingest(
  engine: DuckDBEngine,
  tables: SeriesTables,
  writer: Writer,
  name: string,
  mode: IngestMode,
  data: IngestData,
  session: EngineSession,
): Promise<number> {
  // micromegas's bulk_ingest targets its replication tables (processes, streams, blocks): view sets here.
  if (tables.isReserved(name))
    throw seriesStatementError(
      `ingest: '${name}' is a view set or static table, not a series table (bulk ingest writes series tables only)`,
    );
  const existing = (await tables.list(session)).get(name);
  let table: SeriesTable;
  if (existing && mode.ifExists === 3) {
    if (!writer.admin)
      throw tableErrors.error(
        'SERIES_TABLE_ADMIN_ONLY',
        `permission denied: replacing series table '${name}' needs an admin key`,
      );
    await tables.checkDroppable(name);
    await engine.execute(`DROP TABLE ${lakeTable(name)}`, { session });
    table = await createFor(engine, tables, name, data.schema, session);
  } else if (existing) {
    if (mode.ifExists !== 2)
      throw tableErrors.error(
        'SERIES_TABLE_EXISTS',
        `series table '${name}' already exists (ingest with mode append or create_append to add rows)`,
      );
    table = existing;
  } else {
    if (mode.ifNotExist !== 1)
      throw tableErrors.error(
        'SERIES_TABLE_NOT_FOUND',
        `series table '${name}' does not exist (ingest with mode create to create it)`,
      );
    if (!writer.admin)
      throw tableErrors.error(
        'SERIES_TABLE_ADMIN_ONLY',
        `permission denied: creating series table '${name}' needs an admin key`,
      );
    table = await createFor(engine, tables, name, data.schema, session);
  }

  session.written.add(table.name);
  const targets = await checkColumns(engine, table, data.schema, session);
  const sources = data.schema.fields.map((f) => quoteIdentifier(f.name));
  const stamped = !writer.admin || !targets.includes(audienceColumn);
  const columnList = [
    ...targets.filter((c) => !(stamped && c === audienceColumn)),
    ...(stamped ? [audienceColumn] : []),
  ];
  const selectList = [
    ...sources.filter((_, i) => !(stamped && targets[i] === audienceColumn)),
    ...(stamped ? [`'${(writer.admin ? 'public' : writer.audience).replaceAll("'", "''")}'`] : []),
  ];
  return engine.insertBatches(
    session,
    data.schema,
    data.batches,
    (relation) =>
      `INSERT INTO ${lakeTable(table.name)} (${columnList.map(quoteIdentifier).join(', ')}) SELECT ${selectList.join(', ')} FROM ${relation}`,
  );
}

/**
 * A series table with the stream's columns. Its time column is its first timestamp column: an
 * ingest has no WITH clause to name one (ALTER and CREATE TABLE ... WITH can, before ingesting).
 */
async function createFor(
  engine: DuckDBEngine,
  tables: SeriesTables,
  name: string,
  schema: Schema,
  session: EngineSession,
): Promise<SeriesTable> {
  const fields = schema.fields.filter((f) => f.name !== audienceColumn);
  const columns = fields.map((f) => `${quoteIdentifier(f.name)} ${duckdbTypeOf(f)}`);
  const timeColumn = fields.find((f) => duckdbTypeOf(f).startsWith('TIMESTAMP'))?.name;
  const statement = {
    kind: 'create' as const,
    table: name,
    ifNotExists: false,
    columns: columns.join(', '),
    timeColumn,
  };
  const created = await tables.create(statement, session, { inTransaction: true });
  if (!created) {
    throw tableErrors.error(
      'INGEST_COLUMNS_MISMATCH',
      `cannot create series table '${name}': the stream has no timestamp column to be its time column`,
    );
  }
  return (await tables.list(session)).get(name)!;
}

/**
 * The table column each stream column fills, in stream order; a column the table lacks, or
 * whose type DuckDB will not convert implicitly, is INVALID_ARGUMENT naming it.
 */
async function checkColumns(
  engine: DuckDBEngine,
  table: SeriesTable,
  schema: Schema,
  session: EngineSession,
): Promise<string[]> {
  const byName = new Map(table.columns.map((c) => [c.name.toLowerCase(), c]));
  const targets = schema.fields.map((field) => {
    const column = byName.get(field.name.toLowerCase());
    if (!column)
      throw tableErrors.error(
        'INGEST_COLUMNS_MISMATCH',
        `column '${field.name}' is not in series table '${table.name}'`,
      );
    return { field, column };
  });
  const checks = targets.map(
    ({ field, column }) => `can_cast_implicitly(NULL::${duckdbTypeOf(field)}, NULL::${column.type})`,
  );
  if (checks.length > 0) {
    const [row] = await engine.values(`SELECT ${checks.join(', ')}`, session);
    row.forEach((castable, i) => {
      const { field, column } = targets[i];
      const source = duckdbTypeOf(field);
      if (!castable && source !== column.type) {
        throw tableErrors.error(
          'INGEST_COLUMNS_MISMATCH',
          `column '${field.name}': ${source} (Arrow ${String(field.type)}) cannot be stored in ${column.type}`,
        );
      }
    });
  }
  return targets.map(({ column }) => column.name);
}
