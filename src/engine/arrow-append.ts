import {
  DuckDBBlobValue,
  DuckDBDataChunk,
  DuckDBDateValue,
  DuckDBDecimalValue,
  DuckDBTimeValue,
  DuckDBTimestampMillisecondsValue,
  DuckDBTimestampNanosecondsValue,
  DuckDBTimestampSecondsValue,
  DuckDBTimestampTZValue,
  DuckDBTimestampValue,
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

// Arrow record batches appended to a DuckDB table (bulk ingest): each Arrow type has the DuckDB
// type it lands in, and each value is handed to DuckDB's appender a chunk of 2048 rows at a time.

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
    if (timezone) return 'TIMESTAMPTZ';
    return {
      [TimeUnit.SECOND]: 'TIMESTAMP_S',
      [TimeUnit.MILLISECOND]: 'TIMESTAMP_MS',
      [TimeUnit.MICROSECOND]: 'TIMESTAMP',
      [TimeUnit.NANOSECOND]: 'TIMESTAMP_NS',
    }[unit];
  }
  throw engineErrors.error(
    'INGEST_TYPE_UNSUPPORTED',
    `column '${field.name}': Arrow type ${field.type.toString()} cannot be ingested`,
  );
}

/** Appends every row of a batch whose columns are, in order, the appender's table columns. */
export function appendBatch(appender: DuckDBAppender, batch: RecordBatch): void {
  const fields = batch.schema.fields;
  const types = fields.map((_, i) => appender.columnType(i));
  const columns = fields.map((_, i) => batch.getChildAt(i)!.data[0] as Data);
  for (let start = 0; start < batch.numRows; start += chunkRows) {
    const rows = Math.min(chunkRows, batch.numRows - start);
    const chunk = DuckDBDataChunk.create(types, rows);
    fields.forEach((field, i) => chunk.setColumnValues(i, columnValues(field, columns[i], start, rows)));
    appender.appendDataChunk(chunk);
  }
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
  } else if (DataType.isInt(type)) {
    value = type.bitWidth === 64 ? (row) => BigInt(at(row)) : (row) => Number(at(row));
  } else if (DataType.isFloat(type)) {
    value = (row) => Number(at(row));
  } else if (DataType.isBinary(type) || DataType.isLargeBinary(type)) {
    const get = getter(data);
    value = (row) => new DuckDBBlobValue(get(row) as Uint8Array);
  } else if (DataType.isDate(type)) {
    // Date32 counts days; Date64 milliseconds.
    value =
      type.unit === DateUnit.DAY
        ? (row) => new DuckDBDateValue(Number(at(row)))
        : (row) => new DuckDBDateValue(Math.floor(Number(at(row)) / 86_400_000));
  } else if (DataType.isTime(type)) {
    const { unit } = type as Time;
    value = (row) => {
      const v = BigInt(at(row));
      return new DuckDBTimeValue(unit === TimeUnit.NANOSECOND ? v / 1000n : v * unitFactor[unit]);
    };
  } else if (DataType.isTimestamp(type)) {
    value = timestampValue(type as Timestamp, at);
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

function timestampValue(type: Timestamp, at: (row: number) => number | bigint): (row: number) => DuckDBValue {
  if (type.timezone) {
    const unit = type.unit;
    return (row) => {
      const v = BigInt(at(row));
      return new DuckDBTimestampTZValue(unit === TimeUnit.NANOSECOND ? v / 1000n : v * unitFactor[unit]);
    };
  }
  switch (type.unit) {
    case TimeUnit.SECOND:
      return (row) => new DuckDBTimestampSecondsValue(BigInt(at(row)));
    case TimeUnit.MILLISECOND:
      return (row) => new DuckDBTimestampMillisecondsValue(BigInt(at(row)));
    case TimeUnit.MICROSECOND:
      return (row) => new DuckDBTimestampValue(BigInt(at(row)));
    default:
      return (row) => new DuckDBTimestampNanosecondsValue(BigInt(at(row)));
  }
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
