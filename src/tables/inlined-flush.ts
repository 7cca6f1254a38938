// DuckLake inlines a small write (an INSERT or DELETE of up to 10 rows, its default limit) in its catalog in Postgres
// instead of writing a Parquet file; the reads that read a lake table's files directly (a series table's text index
// pruning, rollups' raw edges, tail and stored rows: src/rollups/table-files.ts) go through DuckLake's scan while any
// of the table's rows or deletes are there. Writing them to files (ducklake_flush_inlined_data) changes no row: the
// file keeps each row's snapshot (its data file begins at the first row's, with the last's as partial_max), so time
// travel and ducklake_table_changes() see the rows as they were written, and the flush's own snapshot
// (`inline_flush:<table id>`, with `deleted_from_table` for the deletes it moved) shows no change (rollups'
// LakeChanges skips it). One DuckLake commit per table, like a client's write: refused on a conflict (a client
// deleting the same inlined rows meanwhile), nothing lost, tried again by the next call.
import { quoteIdentifier, type DuckDBEngine } from '../engine/index.js';
import type { MetadataQueries } from '../metadata/index.js';
import { lakeCatalog, lakeMetadataSchema } from './lake-catalog.js';

/** What a flush did to a lake table: the inlined rows it wrote to files, or the error it failed with. */
export type FlushOutcome =
  { readonly table: string; readonly rows: number } | { readonly table: string; readonly error: unknown };

const quoteLiteral = (text: string): string => `'${text.replaceAll("'", "''")}'`;

/**
 * Which of the tables `names` of the lake's schema `schema` have rows or deletes inlined in DuckLake's catalog, read
 * in Postgres: the rows of their inlined data tables (one per schema version of a table; a flush empties them) and
 * of their inlined deletes' table (DuckLake makes it with a table's first inlined delete).
 */
export async function inlinedTables(
  metadata: MetadataQueries,
  schema: string,
  names: readonly string[],
): Promise<string[]> {
  if (names.length === 0) return [];
  const s = lakeMetadataSchema;
  const { rows } = await metadata.query<{ name: string; inlined: string[]; deletes: string | null }>(
    `SELECT t.table_name AS name,
            ARRAY(SELECT i.table_name FROM ${s}.ducklake_inlined_data_tables i WHERE i.table_id = t.table_id) AS inlined,
            to_regclass(format('%I.%I', $2::text, 'ducklake_inlined_delete_' || t.table_id))::text AS deletes
       FROM ${s}.ducklake_table t
       JOIN ${s}.ducklake_schema n ON n.schema_id = t.schema_id AND n.schema_name = $3 AND n.end_snapshot IS NULL
      WHERE t.table_name = ANY($1::text[]) AND t.end_snapshot IS NULL
        -- Not a table with an inlined data table of a schema version older than its columns' (an ADD, DROP or RENAME
        -- COLUMN since it was made): a flush drops that table in Postgres with no new schema version, under the query
        -- engine's DuckLake, which keeps a table's inlined data tables per schema version: every read of the table
        -- then failed (relation ... does not exist) until the server restarted. Its rows stay inlined, read as before.
        AND NOT EXISTS (
            SELECT 1 FROM ${s}.ducklake_inlined_data_tables i
             WHERE i.table_id = t.table_id AND i.schema_version < (
                   SELECT p.schema_version FROM ${s}.ducklake_snapshot p WHERE p.snapshot_id = (
                          SELECT greatest(t.begin_snapshot, max(c.begin_snapshot), max(c.end_snapshot))
                            FROM ${s}.ducklake_column c WHERE c.table_id = t.table_id)))`,
    [names, s, schema],
  );
  const reads = rows.flatMap((t) =>
    [...t.inlined.map((name) => `${s}.${quoteIdentifier(name)}`), ...(t.deletes === null ? [] : [t.deletes])].map(
      (from) => `SELECT ${quoteLiteral(t.name)} AS name WHERE EXISTS (SELECT 1 FROM ${from})`,
    ),
  );
  if (reads.length === 0) return [];
  const { rows: found } = await metadata.query<{ name: string }>(
    `SELECT DISTINCT name FROM (${reads.join(' UNION ALL ')}) f ORDER BY name`,
  );
  return found.map((r) => r.name);
}

/** Writes the rows and deletes of `schema.table` inlined in DuckLake's catalog to files, in one DuckLake commit. */
export async function flushTable(engine: DuckDBEngine, schema: string, table: string): Promise<FlushOutcome> {
  try {
    const rows = await engine.values(
      `CALL ducklake_flush_inlined_data(${quoteLiteral(lakeCatalog)}, schema_name => ${quoteLiteral(schema)}, table_name => ${quoteLiteral(table)})`,
    );
    return { table, rows: rows.reduce((sum, row) => sum + Number(row[2] ?? 0), 0) };
  } catch (error) {
    return { table, error };
  }
}
