import duckdb from '@duckdb/node-bindings';
import {
  DuckDBBlobValue,
  DuckDBDataChunk,
  DuckDBDateValue,
  DuckDBDecimalValue,
  DuckDBTimeValue,
  type DuckDBAppender,
  type DuckDBValue,
} from '@duckdb/node-api';
import {
  DataType,
  DateUnit,
  Precision,
  TimeUnit,
  makeVector,
  type Data,
  type Decimal,
  type Field,
  type RecordBatch,
  type Time,
  type Timestamp,
} from 'apache-arrow';
import { engineErrors } from './errors.js';

// Arrow record batches appended to a DuckDB table (bulk ingest without the native addon): each
// Arrow type has the DuckDB type it lands in, and the batch goes to DuckDB's appender a chunk of
// 2048 rows at a time. Columns whose Arrow layout is DuckDB's (numbers, dates, timestamps staged
// in their own unit) are copied into the chunk whole, text and binary value by value without
// decoding, and the rest as DuckDB values.

/** DuckDB's vector size: the most rows one data chunk holds. */
const chunkRows = 2048;

const unitFactor: Record<TimeUnit, bigint> = {
  [TimeUnit.SECOND]: 1_000_000n,
  [TimeUnit.MILLISECOND]: 1_000n,
  [TimeUnit.MICROSECOND]: 1n,
  [TimeUnit.NANOSECOND]: 1n,
};

/** The DuckDB type an Arrow column is stored as; a type Orrery cannot ingest is INVALID_ARGUMENT naming the column. */
export function duckdbTypeOf(field: Field): string {
  const type = field.type as DataType;
  if (DataType.isDictionary(type)) return duckdbTypeOf({ ...field, type: type.dictionary } as Field);
  if (DataType.isInt(type)) {
    const names: Record<number, string> = { 8: 'TINYINT', 16: 'SMALLINT', 32: 'INTEGER', 64: 'BIGINT' };
    return `${type.isSigned ? '' : 'U'}${names[type.bitWidth]}`;
  }
  if (DataType.isFloat(type)) return type.precision === Precision.DOUBLE ? 'DOUBLE' : 'FLOAT';
  if (DataType.isBool(type)) return 'BOOLEAN';
  if (DataType.isUtf8(type) || DataType.isLargeUtf8(type)) return 'VARCHAR';
  if (DataType.isBinary(type) || DataType.isLargeBinary(type)) return 'BLOB';
  if (DataType.isDate(type)) return 'DATE';
  if (DataType.isTime(type)) return 'TIME';
  if (DataType.isDecimal(type)) return `DECIMAL(${(type as Decimal).precision}, ${(type as Decimal).scale})`;
  if (DataType.isTimestamp(type)) {
    const { unit, timezone } = type as Timestamp;
    return timezone ? 'TIMESTAMPTZ' : timestampTypes[unit];
  }
  throw engineErrors.error(
    'INGEST_TYPE_UNSUPPORTED',
    `column '${field.name}': Arrow type ${field.type.toString()} cannot be ingested`,
  );
}

/**
 * The DuckDB type a column is staged as before the INSERT that stores it: the stored type, but
 * a zoned timestamp in its own unit (DuckDB's TIMESTAMPTZ counts microseconds), so that its
 * values are copied as they are; the INSERT converts them.
 */
export function stagingTypeOf(field: Field): string {
  const type = field.type as DataType;
  return DataType.isTimestamp(type) ? timestampTypes[(type as Timestamp).unit] : duckdbTypeOf(field);
}

/** DuckDB's zone-less timestamp type of each unit. */
const timestampTypes: Record<TimeUnit, string> = {
  [TimeUnit.SECOND]: 'TIMESTAMP_S',
  [TimeUnit.MILLISECOND]: 'TIMESTAMP_MS',
  [TimeUnit.MICROSECOND]: 'TIMESTAMP',
  [TimeUnit.NANOSECOND]: 'TIMESTAMP_NS',
};

/** Appends every row of a batch whose columns are, in order, the appender's table columns (staged by stagingTypeOf). */
export function appendBatch(appender: DuckDBAppender, batch: RecordBatch): void {
  const fields = batch.schema.fields;
  const types = fields.map((_, i) => appender.columnType(i));
  const columns = fields.map((_, i) => batch.getChildAt(i)!.data[0] as Data);
  const widths = fields.map((f) => copiedWidth(f.type as DataType));
  for (let start = 0; start < batch.numRows; start += chunkRows) {
    const rows = Math.min(chunkRows, batch.numRows - start);
    const chunk = DuckDBDataChunk.create(types, rows);
    fields.forEach((field, i) => {
      const data = columns[i];
      const type = field.type as DataType;
      if (widths[i] > 0) {
        const vector = duckdb.data_chunk_get_vector(chunk.chunk, i);
        const values = data.values as ArrayBufferView;
        const width = widths[i];
        duckdb.copy_data_to_vector(
          vector,
          0,
          values.buffer as ArrayBuffer,
          values.byteOffset + start * width,
          rows * width,
        );
        copyValidity(vector, data, start, rows);
      } else if (DataType.isUtf8(type) || DataType.isBinary(type)) {
        const vector = duckdb.data_chunk_get_vector(chunk.chunk, i);
        const offsets = data.valueOffsets as Int32Array;
        const bytes = data.values as Uint8Array;
        for (let row = 0; row < rows; row++) {
          duckdb.vector_assign_string_element_len(
            vector,
            row,
            bytes.subarray(offsets[start + row], offsets[start + row + 1]),
          );
        }
        copyValidity(vector, data, start, rows);
      } else {
        chunk.setColumnValues(i, columnValues(field, data, start, rows));
      }
    });
    appender.appendDataChunk(chunk);
  }
}

/** Bytes per value of a column copied into DuckDB as it is, or 0 when it is converted. */
function copiedWidth(type: DataType): number {
  if (DataType.isInt(type)) return type.bitWidth / 8;
  if (DataType.isFloat(type))
    return type.precision === Precision.HALF ? 0 : type.precision === Precision.DOUBLE ? 8 : 4;
  if (DataType.isDate(type)) return type.unit === DateUnit.DAY ? 4 : 0;
  if (DataType.isTimestamp(type)) return 8;
  return 0;
}

/** Rows [start, start + rows) of a column's validity into a vector (left all valid without nulls). */
function copyValidity(vector: duckdb.Vector, data: Data, start: number, rows: number): void {
  if (data.nullCount === 0 || !data.nullBitmap) return;
  duckdb.vector_ensure_validity_writable(vector);
  const bit = data.offset + start;
  const bitmap = data.nullBitmap;
  if (bit % 8 === 0) {
    duckdb.copy_data_to_vector_validity(
      vector,
      0,
      bitmap.buffer as ArrayBuffer,
      bitmap.byteOffset + bit / 8,
      Math.ceil(rows / 8),
    );
    return;
  }
  const validity = duckdb.vector_get_validity(vector, Math.ceil(rows / 64) * 8);
  for (let row = 0; row < rows; row++) if (!data.getValid(start + row)) duckdb.validity_set_row_invalid(validity, row);
}

/** Rows [start, start + count) of one column as DuckDB values. */
function columnValues(field: Field, data: Data, start: number, count: number): DuckDBValue[] {
  const type = field.type as DataType;
  const out: DuckDBValue[] = new Array(count);
  const valid = (row: number): boolean => data.nullCount === 0 || data.getValid(row);
  const raw = data.values as ArrayLike<number | bigint>;
  const at = (row: number): number | bigint => raw[data.offset + row];
  let value: (row: number) => DuckDBValue;
  if (DataType.isDictionary(type) || DataType.isUtf8(type) || DataType.isLargeUtf8(type) || DataType.isBool(type)) {
    const get = getter(data);
    value = (row) => get(row) as DuckDBValue;
  } else if (DataType.isFloat(type)) {
    // Half floats (the other widths are copied): Arrow's getter decodes their bits.
    const get = getter(data);
    value = (row) => get(row) as number;
  } else if (DataType.isBinary(type) || DataType.isLargeBinary(type)) {
    const get = getter(data);
    value = (row) => new DuckDBBlobValue(get(row) as Uint8Array);
  } else if (DataType.isDate(type)) {
    // Date64 counts milliseconds (Date32's days are copied).
    value = (row) => new DuckDBDateValue(Math.floor(Number(at(row)) / 86_400_000));
  } else if (DataType.isTime(type)) {
    const { unit } = type as Time;
    value = (row) => {
      const v = BigInt(at(row));
      return new DuckDBTimeValue(unit === TimeUnit.NANOSECOND ? v / 1000n : v * unitFactor[unit]);
    };
  } else if (DataType.isDecimal(type)) {
    const { precision, scale } = type as Decimal;
    const words = data.values as Uint32Array;
    value = (row) => new DuckDBDecimalValue(decimal128(words, data.offset + row), precision, scale);
  } else {
    throw engineErrors.error(
      'INGEST_TYPE_UNSUPPORTED',
      `column '${field.name}': Arrow type ${field.type.toString()} cannot be ingested`,
    );
  }
  for (let i = 0; i < count; i++) out[i] = valid(start + i) ? value(start + i) : null;
  return out;
}

/** Arrow's own getter for a column's values (strings, booleans, binaries, dictionaries), by row of the column. */
function getter(data: Data): (row: number) => unknown {
  const vector = makeVector(data);
  return (row) => vector.get(row);
}

/** A signed 128-bit little-endian integer from four 32-bit words. */
function decimal128(words: Uint32Array, index: number): bigint {
  const base = index * 4;
  let value = 0n;
  for (let w = 3; w >= 0; w--) value = (value << 32n) | BigInt(words[base + w]);
  return BigInt.asIntN(128, value);
}
