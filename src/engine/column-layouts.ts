import { DuckDBTypeId, type DuckDBType } from '@duckdb/node-api';

// How DuckDB lays out the values of the column types whose Arrow form is a plain
// transformation of DuckDB's memory. Shared by the JavaScript converter and the native exporter.

/** Bytes per value of the types DuckDB and Arrow store alike (little-endian, same width). */
export const fixedWidths: Partial<Record<DuckDBTypeId, number>> = {
  [DuckDBTypeId.TINYINT]: 1,
  [DuckDBTypeId.SMALLINT]: 2,
  [DuckDBTypeId.INTEGER]: 4,
  [DuckDBTypeId.BIGINT]: 8,
  [DuckDBTypeId.UTINYINT]: 1,
  [DuckDBTypeId.USMALLINT]: 2,
  [DuckDBTypeId.UINTEGER]: 4,
  [DuckDBTypeId.UBIGINT]: 8,
  [DuckDBTypeId.FLOAT]: 4,
  [DuckDBTypeId.DOUBLE]: 8,
  [DuckDBTypeId.DATE]: 4,
  [DuckDBTypeId.TIME]: 8,
  [DuckDBTypeId.TIME_NS]: 8,
};

/** Factor from each DuckDB timestamp unit to nanoseconds (every timestamp is sent in nanoseconds). */
export const timestampFactors: Partial<Record<DuckDBTypeId, bigint>> = {
  [DuckDBTypeId.TIMESTAMP_S]: 1_000_000_000n,
  [DuckDBTypeId.TIMESTAMP_MS]: 1_000_000n,
  [DuckDBTypeId.TIMESTAMP]: 1000n,
  [DuckDBTypeId.TIMESTAMP_TZ]: 1000n,
  [DuckDBTypeId.TIMESTAMP_NS]: 1n,
};

/** Bytes of the integer DuckDB stores a DECIMAL (or HUGEINT) in. */
export function decimalStorageWidth(type: DuckDBType): 2 | 4 | 8 | 16 {
  if (type.typeId === DuckDBTypeId.HUGEINT) return 16;
  const width = (type as unknown as { width: number }).width;
  return width <= 4 ? 2 : width <= 9 ? 4 : width <= 18 ? 8 : 16;
}
