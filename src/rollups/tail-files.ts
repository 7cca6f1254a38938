import type { MetadataQueries } from '../metadata/index.js';
import { quoteIdentifier } from '../engine/index.js';
import { lakeMetadataSchema } from '../tables/index.js';
import { quoteLiteral } from './rollup-sql.js';

// The rows of a series table from a rollup's watermark on (the never-stale read's tail), read by
// DuckDB's Parquet reader from the data files DuckLake lists for them rather than through
// DuckLake's scan, which over the same files cost 6x the time (bench/rollups/in-process.mjs: 42 ms
// against 6.8). Only when the files alone hold those rows exactly as DuckLake would give them:
// no delete file or inlined delete on them, no inlined row at or after the watermark, files written
// with the table's columns as they are (no column added, renamed or retyped since, no name mapping,
// no encryption, no partial file, no partition) and of types the Parquet reader gives back as they are typed.
// Anything else: null, and the read scans DuckLake as before.

/** The tail's rows as a SELECT of the table's columns (no WHERE): null when no file holds any (the tail is empty). */
export interface TailRows {
  readonly sql: string | null;
}

/** DuckLake column types DuckDB's Parquet reader reads back as the same DuckDB type. */
const plainTypes = new Set([
  'boolean',
  'int8',
  'int16',
  'int32',
  'int64',
  'uint8',
  'uint16',
  'uint32',
  'uint64',
  'float32',
  'float64',
  'varchar',
  'blob',
  'date',
  'timestamp',
  'timestamptz',
]);

/** How Postgres compares a time column's text (a file statistic, an inlined value) with the watermark ($3). */
function atOrAfter(type: string, value: string): string | null {
  if (type === 'timestamp') return `${value}::timestamp >= $3::timestamp`;
  if (type === 'timestamptz') return `${value}::timestamptz >= ($3::timestamp AT TIME ZONE 'UTC')`;
  if (/^u?int(8|16|32|64)$/.test(type)) return `${value}::numeric >= $3::numeric`;
  return null;
}

const live = (alias: string): string =>
  `${alias}.begin_snapshot <= $2 AND (${alias}.end_snapshot IS NULL OR ${alias}.end_snapshot > $2)`;

interface TableRow {
  table_id: string;
  data_path: string;
  schema_path: string;
  schema_relative: boolean;
  table_path: string;
  table_relative: boolean;
  columns: Array<{ name: string; type: string; begin: string; parent: string | null }>;
  inlined: string[];
  inlined_deletes: string | null;
}

/**
 * The tail of `table` (in schema main) at DuckLake snapshot `snapshot`: its rows with `timeColumn`
 * at or after `watermark` (DuckDB's text of it) are among those of the files returned, which hold
 * them exactly; null when they cannot be read so (see above).
 */
export async function tailRows(
  catalog: MetadataQueries,
  table: string,
  timeColumn: string,
  snapshot: bigint,
  watermark: string,
): Promise<TailRows | null> {
  const s = lakeMetadataSchema;
  const params = [table, String(snapshot), watermark];
  const {
    rows: [meta],
  } = await catalog.query<TableRow>(
    `SELECT t.table_id::text AS table_id,
            (SELECT value FROM ${s}.ducklake_metadata WHERE key = 'data_path' AND scope IS NULL) AS data_path,
            n.path AS schema_path, n.path_is_relative AS schema_relative, t.path AS table_path, t.path_is_relative AS table_relative,
            (SELECT json_agg(json_build_object('name', c.column_name, 'type', c.column_type, 'begin', c.begin_snapshot::text,
                                               'parent', c.parent_column::text) ORDER BY c.column_order)
               FROM ${s}.ducklake_column c WHERE c.table_id = t.table_id AND ${live('c')}) AS columns,
            ARRAY(SELECT i.table_name FROM ${s}.ducklake_inlined_data_tables i WHERE i.table_id = t.table_id) AS inlined,
            to_regclass(format('%I.%I', $4::text, 'ducklake_inlined_delete_' || t.table_id))::text AS inlined_deletes
       FROM ${s}.ducklake_table t
       JOIN ${s}.ducklake_schema n ON n.schema_id = t.schema_id AND n.schema_name = 'main' AND ${live('n')}
      WHERE t.table_name = $1 AND ${live('t')} AND $3::text IS NOT NULL`,
    [...params, s],
  );
  if (!meta || meta.data_path === null || !meta.columns) return null;
  const columns = meta.columns.filter((c) => c.parent === null);
  const time = columns.find((c) => c.name === timeColumn);
  if (!time || columns.length !== meta.columns.length || columns.some((c) => !plainTypes.has(c.type))) return null;
  const fileTimeAfter = atOrAfter(time.type, 'k.max_value');
  if (!fileTimeAfter) return null;
  const newestColumn = columns.reduce((most, c) => (BigInt(c.begin) > most ? BigInt(c.begin) : most), 0n);
  const { rows: files } = await catalog.query<{
    id: string;
    path: string;
    relative: boolean;
    plain: boolean;
    deleted: boolean;
  }>(
    `SELECT f.data_file_id::text AS id, f.path, f.path_is_relative AS relative,
            (f.begin_snapshot >= $4 AND f.partial_max IS NULL AND f.mapping_id IS NULL AND f.encryption_key IS NULL
             AND f.partition_id IS NULL AND f.file_format = 'parquet') AS plain,
            EXISTS (SELECT 1 FROM ${s}.ducklake_delete_file d WHERE d.data_file_id = f.data_file_id AND ${live('d')}) AS deleted
       FROM ${s}.ducklake_data_file f
       LEFT JOIN ${s}.ducklake_file_column_stats k ON k.data_file_id = f.data_file_id AND k.column_id = (
            SELECT c.column_id FROM ${s}.ducklake_column c WHERE c.table_id = f.table_id AND c.column_name = $1 AND ${live('c')})
      WHERE f.table_id = $5 AND ${live('f')} AND (k.max_value IS NULL OR ${fileTimeAfter})
      ORDER BY f.data_file_id`,
    [timeColumn, String(snapshot), watermark, String(newestColumn), meta.table_id],
  );
  if (files.some((f) => !f.plain || f.deleted)) return null;
  // Rows inlined in the catalog (small writes) and deletes of file rows inlined there: the tail
  // reads none of them, so any that it would see means DuckLake's scan.
  const checks = meta.inlined.map(
    (name) =>
      `SELECT 1 FROM ${s}.${quoteIdentifier(name)} r WHERE ${live('r')}
         AND (r.${quoteIdentifier(timeColumn)} IS NULL OR ${atOrAfter(time.type, `r.${quoteIdentifier(timeColumn)}`)!})`,
  );
  if (meta.inlined_deletes !== null && files.length > 0)
    checks.push(
      `SELECT 1 FROM ${meta.inlined_deletes} r WHERE r.begin_snapshot <= $2 AND r.file_id IN (${files.map((f) => f.id).join(', ')})`,
    );
  if (checks.length > 0) {
    const { rows } = await catalog.query<{ seen: boolean }>(
      `SELECT EXISTS (${checks.join(' UNION ALL ')}) AS seen FROM (SELECT $1::text, $2::bigint, $3::text) AS p`,
      params,
    );
    if (rows[0]?.seen !== false) return null;
  }
  if (files.length === 0) return { sql: null };
  const under = (base: string, path: string, relative: boolean): string => (relative ? base + path : path);
  const schemaPath = under(meta.data_path, meta.schema_path, meta.schema_relative);
  const tablePath = under(schemaPath, meta.table_path, meta.table_relative);
  const paths = files.map((f) => quoteLiteral(under(tablePath, f.path, f.relative)));
  const names = columns.map((c) => quoteIdentifier(c.name)).join(', ');
  return { sql: `SELECT ${names} FROM read_parquet([${paths.join(', ')}])` };
}
