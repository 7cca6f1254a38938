import { DuckDBDateValue, DuckDBTimestampNanosecondsValue, type DuckDBPreparedStatement } from '@duckdb/node-api';
import { DataType, TimeUnit, type Table, type Timestamp } from 'apache-arrow';

/** The number of parameter rows of a bound parameter table (0 when none). */
export function parameterRowCount(parameters: Table | undefined): number {
  return parameters ? parameters.numRows : 0;
}

const perSecond: Record<TimeUnit, bigint> = {
  [TimeUnit.SECOND]: 1n,
  [TimeUnit.MILLISECOND]: 1_000n,
  [TimeUnit.MICROSECOND]: 1_000_000n,
  [TimeUnit.NANOSECOND]: 1_000_000_000n,
};

/** Binds row `row` of an Arrow parameter table to the `?` placeholders, column i to `?` i+1. */
export function bindRow(prepared: DuckDBPreparedStatement, parameters: Table, row: number): void {
  parameters.schema.fields.forEach((field, column) => {
    const index = column + 1;
    const vector = parameters.getChildAt(column);
    const value = vector?.get(row);
    if (value === null || value === undefined) return prepared.bindNull(index);
    const type = field.type;
    if (DataType.isInt(type)) {
      if (type.bitWidth === 64) return prepared.bindBigInt(index, BigInt(value as bigint));
      return prepared.bindBigInt(index, BigInt(value as number));
    }
    if (DataType.isFloat(type)) return prepared.bindDouble(index, Number(value));
    if (DataType.isBool(type)) return prepared.bindBoolean(index, Boolean(value));
    if (DataType.isUtf8(type) || DataType.isLargeUtf8(type)) return prepared.bindVarchar(index, String(value));
    if (DataType.isBinary(type) || DataType.isLargeBinary(type)) return prepared.bindBlob(index, value as Uint8Array);
    if (DataType.isTimestamp(type)) {
      // Every timestamp is an instant bound as TIMESTAMP_NS, whatever its zone (a naive one is
      // UTC, as DuckDB runs in UTC): that is the time columns' type, so the comparison binds,
      // and nanoseconds survive.
      const nanos = (rawInt64(parameters, column, row) * 1_000_000_000n) / perSecond[(type as Timestamp).unit];
      return prepared.bindTimestampNanoseconds(index, new DuckDBTimestampNanosecondsValue(nanos));
    }
    if (DataType.isDate(type)) {
      return prepared.bindDate(index, new DuckDBDateValue(Math.floor((value as number) / 86_400_000)));
    }
    return prepared.bindVarchar(index, String(value));
  });
}

/** The stored 64-bit integer of a value (arrow-js returns timestamps as lossy milliseconds). */
function rawInt64(table: Table, column: number, row: number): bigint {
  let offset = row;
  for (const data of table.getChildAt(column)!.data) {
    if (offset < data.length) return BigInt((data.values as BigInt64Array)[data.offset + offset]);
    offset -= data.length;
  }
  throw new RangeError(`parameter row ${row} out of range`);
}
