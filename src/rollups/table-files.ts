import type { MetadataQueries } from '../metadata/index.js';
import { quoteIdentifier } from '../engine/index.js';
import { lakeMetadataSchema } from '../tables/index.js';
import { quoteLiteral } from './rollup-sql.js';

// Rows of a DuckLake table read by DuckDB's Parquet reader from the data files DuckLake lists for
// them rather than through DuckLake's scan, whose set-up (its catalog reads in the statement's
// transaction) and scan cost several times the reader's for the same rows (bench/rollups/in-process.mjs:
// the tail 42 ms against 6.8; a rollup's stored rows 25.4 against 5.6). Two uses: a series table's
// rows from a rollup's watermark on (the never-stale read's tail), and a rollup's stored rows (all of
// its `_materialized` table). Only when the files, less the rows their delete files list, hold those
// rows exactly as DuckLake would give them: no inlined delete on them, no inlined row among them, files
// written with the table's columns as they are (no column added, renamed or retyped since, no name
// mapping, no encryption, no partition; a partial file, one a flush of inlined rows wrote with each row's
// snapshot, only when none of its rows or deletes is after the snapshot read) and of types the Parquet reader gives back as
// they are typed (or, for HUGEINT, as DuckLake casts them back). Anything else: null, and the read
// scans DuckLake as before.

/** The rows as a SELECT of the table's columns (no WHERE): null when no file holds any (there are none). */
export interface FileRows {
  readonly sql: string | null;
  /** The files read, in DuckLake's order (see filesSql). */
  readonly files: readonly ListedFile[];
  /** The table's columns as the SELECT reads them. */
  readonly columns: string;
  /** What listing the files added since needs (see fileRowsSince). */
  readonly table: ListedTable;
}

/** A table's paths, id, time column's type and newest column's first snapshot, as a listing read them. */
interface ListedTable extends TablePaths {
  readonly table_id: string;
  readonly timeType: string;
  readonly newestColumn: bigint;
}

/** A data file of a table, with the delete file that applies to it at the snapshot listed (null: none). */
export interface ListedFile {
  readonly id: string;
  readonly path: string;
  readonly deletes: string | null;
}

/** The rows of `files` (see FileRows), `columns` of them; null when there are none. */
export function filesSql(columns: string, files: readonly ListedFile[]): string | null {
  if (files.length === 0) return null;
  const whole = files.filter((f) => f.deletes === null);
  const reads = [
    ...(whole.length > 0
      ? [`SELECT ${columns} FROM read_parquet([${whole.map((f) => quoteLiteral(f.path)).join(', ')}])`]
      : []),
    ...files.flatMap((f) =>
      f.deletes === null
        ? []
        : [
            `SELECT ${columns} FROM read_parquet([${quoteLiteral(f.path)}], file_row_number = true)
              WHERE file_row_number NOT IN (SELECT pos FROM read_parquet([${quoteLiteral(f.deletes)}]))`,
          ],
    ),
  ];
  return reads.join('\nUNION ALL ');
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

/** DuckLake's nested column types: read back as they are typed when every field is (see fileRows). */
const nestedTypes = new Set(['struct', 'map', 'list']);

/**
 * DuckLake column types DuckDB's Parquet writer stores as another type, and the cast that gives them
 * back as DuckLake's scan does (HUGEINT, a sum of BIGINTs, is written as DOUBLE).
 */
const castTypes = new Map([['int128', 'HUGEINT']]);

/** How Postgres compares a time column's text (a file statistic, an inlined value) with the bound (DuckDB's text of it). */
export function atOrAfter(type: string, value: string, bound = '$3'): string | null {
  if (type === 'timestamp') return `${value}::timestamp >= ${bound}::timestamp`;
  if (type === 'timestamptz') return `${value}::timestamptz >= (${bound}::timestamp AT TIME ZONE 'UTC')`;
  if (/^u?int(8|16|32|64)$/.test(type)) return `${value}::numeric >= ${bound}::numeric`;
  return null;
}

/** Whether a DuckLake catalog row (`alias`) is live at the snapshot (the parameter `at`). */
export const live = (alias: string, at = '$2'): string =>
  `${alias}.begin_snapshot <= ${at} AND (${alias}.end_snapshot IS NULL OR ${alias}.end_snapshot > ${at})`;

/** Where a DuckLake table's files are: the lake's data path, its schema's path and its own (each maybe relative). */
export interface TablePaths {
  data_path: string;
  schema_path: string;
  schema_relative: boolean;
  table_path: string;
  table_relative: boolean;
}

/** The location of one of a table's files (a data or delete file's path, maybe relative to the table's). */
export function tableFilePath(meta: TablePaths, file: { path: string; relative: boolean }): string {
  const under = (base: string, path: string, relative: boolean): string => (relative ? base + path : path);
  const schemaPath = under(meta.data_path, meta.schema_path, meta.schema_relative);
  return under(under(schemaPath, meta.table_path, meta.table_relative), file.path, file.relative);
}

interface TableRow extends TablePaths {
  table_id: string;
  columns: Array<{ name: string; type: string; begin: string; parent: string | null }>;
  inlined: string[];
  inlined_deletes: string | null;
}

/**
 * The rows of `schema.table` at DuckLake snapshot `snapshot` with `timeColumn` at or after `from`
 * (DuckDB's text of it; every row when null) are among those of the files returned, which hold them
 * exactly; null when they cannot be read so (see above).
 */
export async function fileRows(
  catalog: MetadataQueries,
  schema: string,
  table: string,
  timeColumn: string,
  snapshot: bigint,
  from: string | null,
): Promise<FileRows | null> {
  const s = lakeMetadataSchema;
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
            to_regclass(format('%I.%I', $3::text, 'ducklake_inlined_delete_' || t.table_id))::text AS inlined_deletes
       FROM ${s}.ducklake_table t
       JOIN ${s}.ducklake_schema n ON n.schema_id = t.schema_id AND n.schema_name = $4 AND ${live('n')}
      WHERE t.table_name = $1 AND ${live('t')}`,
    [table, String(snapshot), s, schema],
  );
  if (!meta || meta.data_path === null || !meta.columns) return null;
  const columns = meta.columns.filter((c) => c.parent === null);
  const time = columns.find((c) => c.name === timeColumn);
  // Nested columns (a sketch's STRUCT of a MAP) of plain fields read back as they are typed too.
  const fields = meta.columns.filter((c) => c.parent !== null);
  if (
    !time ||
    columns.some((c) => !plainTypes.has(c.type) && !castTypes.has(c.type) && !nestedTypes.has(c.type)) ||
    fields.some((c) => !plainTypes.has(c.type) && !nestedTypes.has(c.type))
  )
    return null;
  // Rows with the time column at or after `from` ($3; every row when it is null), in Postgres.
  if (!atOrAfter(time.type, '')) return null;
  const after = (value: string): string => `($3::text IS NULL OR ${atOrAfter(time.type, value)!})`;
  const params = [timeColumn, String(snapshot), from];
  const newestColumn = meta.columns.reduce((most, c) => (BigInt(c.begin) > most ? BigInt(c.begin) : most), 0n);
  const listed: ListedTable = { ...meta, timeType: time.type, newestColumn };
  const files = await listFiles(catalog, listed, timeColumn, snapshot, from, null);
  if (!files) return null;
  // Rows inlined in the catalog (small writes) and deletes of file rows inlined there: the read
  // takes none of them, so any that it would see means DuckLake's scan.
  const checks = meta.inlined.map(
    (name) =>
      `SELECT 1 FROM ${s}.${quoteIdentifier(name)} r WHERE ${live('r')}
         AND (r.${quoteIdentifier(timeColumn)} IS NULL OR ${after(`r.${quoteIdentifier(timeColumn)}`)})`,
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
  const names = columns
    .map((c) => {
      const name = quoteIdentifier(c.name);
      const cast = castTypes.get(c.type);
      return cast ? `CAST(${name} AS ${cast}) AS ${name}` : name;
    })
    .join(', ');
  return { sql: filesSql(names, files), files, columns: names, table: listed };
}

/**
 * The files of a listing's table (fileRows) at `snapshot` with `timeColumn` at or after `from`, those
 * added after snapshot `since` alone when given; null when one cannot be read as it is (see above).
 */
async function listFiles(
  catalog: MetadataQueries,
  table: ListedTable,
  timeColumn: string,
  snapshot: bigint,
  from: string | null,
  since: bigint | null,
): Promise<ListedFile[] | null> {
  const s = lakeMetadataSchema;
  const after = (value: string): string => `($3::text IS NULL OR ${atOrAfter(table.timeType, value)!})`;
  const { rows: files } = await catalog.query<{
    id: string;
    path: string;
    relative: boolean;
    plain: boolean;
    deletes: Array<{ path: string; relative: boolean; plain: boolean }> | null;
  }>(
    `SELECT f.data_file_id::text AS id, f.path, f.path_is_relative AS relative,
            (f.begin_snapshot >= $4 AND (f.partial_max IS NULL OR f.partial_max <= $2) AND f.mapping_id IS NULL
             AND f.encryption_key IS NULL AND f.partition_id IS NULL AND f.file_format = 'parquet') AS plain,
            (SELECT json_agg(json_build_object('path', d.path, 'relative', d.path_is_relative,
                                               'plain', d.format = 'parquet' AND d.encryption_key IS NULL
                                                        AND (d.partial_max IS NULL OR d.partial_max <= $2)))
               FROM ${s}.ducklake_delete_file d WHERE d.data_file_id = f.data_file_id AND ${live('d')}) AS deletes
       FROM ${s}.ducklake_data_file f
       LEFT JOIN ${s}.ducklake_file_column_stats k ON k.data_file_id = f.data_file_id AND k.column_id = (
            SELECT c.column_id FROM ${s}.ducklake_column c WHERE c.table_id = f.table_id AND c.column_name = $1 AND ${live('c')})
      WHERE f.table_id = $5 AND ${live('f')} AND (k.max_value IS NULL OR ${after('k.max_value')})
        AND ($6::bigint IS NULL OR f.begin_snapshot > $6::bigint)
      ORDER BY f.data_file_id`,
    [
      timeColumn,
      String(snapshot),
      from,
      String(table.newestColumn),
      table.table_id,
      since === null ? null : String(since),
    ],
  );
  // A delete file lists the positions (from 0, in file order) of every row deleted from its data
  // file up to its snapshot: one is live per data file at a snapshot.
  if (files.some((f) => !f.plain || (f.deletes !== null && (f.deletes.length !== 1 || !f.deletes[0].plain))))
    return null;
  return files.map((f) => ({
    id: f.id,
    path: tableFilePath(table, f),
    deletes: f.deletes === null ? null : tableFilePath(table, f.deletes[0]),
  }));
}

/**
 * The rows of a listing's table (`listing`, at snapshot `since`) at the later snapshot `snapshot`, when
 * the snapshots between only added data files to it (no row inlined in the catalog, no delete, no
 * column changed: LakeChanges tells): the listing's files and those added, listed alone (one Postgres
 * query instead of three). Null when an added file cannot be read as it is.
 */
export async function fileRowsSince(
  catalog: MetadataQueries,
  listing: FileRows,
  timeColumn: string,
  since: bigint,
  snapshot: bigint,
  from: string | null,
): Promise<FileRows | null> {
  const added = await listFiles(catalog, listing.table, timeColumn, snapshot, from, since);
  if (!added) return null;
  if (added.length === 0) return listing;
  const files = [...listing.files, ...added];
  return { ...listing, sql: filesSql(listing.columns, files), files };
}

/**
 * The rows at DuckLake snapshot `snapshot` of the tables `schema.<name>` (of `tables`) whose rows are all
 * inlined in the catalog, `columns` as DuckDB's text of them (DuckLake inlines a small insert there, a time
 * as that text, a number as a number; not VARCHAR or BLOB columns, inlined as bytes): read in Postgres, with no DuckLake scan to set up (a rollup's one-row state, read
 * again at each new snapshot). A table any of whose rows is in a data file at the snapshot, or that does
 * not exist then, is not in the map.
 */
export async function inlinedRows(
  catalog: MetadataQueries,
  schema: string,
  tables: readonly string[],
  columns: readonly string[],
  snapshot: bigint,
): Promise<Map<string, Array<Array<string | null>>>> {
  const s = lakeMetadataSchema;
  const { rows: found } = await catalog.query<{ table_name: string; inlined: string[]; filed: boolean }>(
    `SELECT t.table_name,
            ARRAY(SELECT i.table_name FROM ${s}.ducklake_inlined_data_tables i WHERE i.table_id = t.table_id) AS inlined,
            EXISTS (SELECT 1 FROM ${s}.ducklake_data_file f WHERE f.table_id = t.table_id AND ${live('f')}) AS filed
       FROM ${s}.ducklake_table t
       JOIN ${s}.ducklake_schema n ON n.schema_id = t.schema_id AND n.schema_name = $3 AND ${live('n')}
      WHERE t.table_name = ANY($1::text[]) AND ${live('t')}`,
    [tables, String(snapshot), schema],
  );
  const inlined = found.filter((t) => !t.filed);
  const out = new Map(inlined.map((t) => [t.table_name, [] as Array<Array<string | null>>]));
  const reads = inlined.flatMap((t) =>
    t.inlined.map(
      (name) =>
        `SELECT ${quoteLiteral(t.table_name)} AS __table, ${columns.map((c, i) => `r.${quoteIdentifier(c)}::text AS c${i}`).join(', ')}
           FROM ${s}.${quoteIdentifier(name)} r WHERE ${live('r', '$1::bigint')}`,
    ),
  );
  if (reads.length === 0) return out;
  const { rows } = await catalog.query<Record<string, string | null>>(reads.join(' UNION ALL '), [String(snapshot)]);
  for (const row of rows) out.get(row.__table!)!.push(columns.map((_, i) => row[`c${i}`]));
  return out;
}
