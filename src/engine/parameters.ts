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

/** A parameter's value as it is bound, by the DuckDB type it is bound as. */
type Bound =
  | { readonly type: 'BIGINT'; readonly value: bigint }
  | { readonly type: 'DOUBLE'; readonly value: number }
  | { readonly type: 'BOOLEAN'; readonly value: boolean }
  | { readonly type: 'VARCHAR'; readonly value: string }
  | { readonly type: 'BLOB'; readonly value: Uint8Array }
  /** Nanoseconds since the epoch. */
  | { readonly type: 'TIMESTAMP_NS'; readonly value: bigint }
  /** Days since the epoch. */
  | { readonly type: 'DATE'; readonly value: number };

/** Column `column` of row `row` of a parameter table as it is bound; null for a NULL. */
function boundValue(parameters: Table, column: number, row: number): Bound | null {
  const value: unknown = parameters.getChildAt(column)?.get(row);
  if (value === null || value === undefined) return null;
  const type = parameters.schema.fields[column].type;
  if (DataType.isInt(type)) return { type: 'BIGINT', value: BigInt(value as bigint | number) };
  if (DataType.isFloat(type)) return { type: 'DOUBLE', value: Number(value) };
  if (DataType.isBool(type)) return { type: 'BOOLEAN', value: Boolean(value) };
  if (DataType.isUtf8(type) || DataType.isLargeUtf8(type)) return { type: 'VARCHAR', value: String(value as string) };
  if (DataType.isBinary(type) || DataType.isLargeBinary(type)) return { type: 'BLOB', value: value as Uint8Array };
  // Every timestamp is an instant bound as TIMESTAMP_NS, whatever its zone (a naive one is
  // UTC, as DuckDB runs in UTC): that is the time columns' type, so the comparison binds,
  // and nanoseconds survive.
  if (DataType.isTimestamp(type))
    return {
      type: 'TIMESTAMP_NS',
      value: (rawInt64(parameters, column, row) * 1_000_000_000n) / perSecond[(type as Timestamp).unit],
    };
  if (DataType.isDate(type)) return { type: 'DATE', value: Math.floor((value as number) / 86_400_000) };
  return { type: 'VARCHAR', value: String(value as string) };
}

/** Binds row `row` of an Arrow parameter table to the `?` placeholders, column i to `?` i+1. */
export function bindRow(prepared: DuckDBPreparedStatement, parameters: Table, row: number): void {
  parameters.schema.fields.forEach((_field, column) => {
    const index = column + 1;
    const bound = boundValue(parameters, column, row);
    if (bound === null) return prepared.bindNull(index);
    switch (bound.type) {
      case 'BIGINT':
        return prepared.bindBigInt(index, bound.value);
      case 'DOUBLE':
        return prepared.bindDouble(index, bound.value);
      case 'BOOLEAN':
        return prepared.bindBoolean(index, bound.value);
      case 'VARCHAR':
        return prepared.bindVarchar(index, bound.value);
      case 'BLOB':
        return prepared.bindBlob(index, bound.value);
      case 'TIMESTAMP_NS':
        return prepared.bindTimestampNanoseconds(index, new DuckDBTimestampNanosecondsValue(bound.value));
      case 'DATE':
        return prepared.bindDate(index, new DuckDBDateValue(bound.value));
    }
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

/** A bound parameter's value as text DuckDB casts back to it exactly, and the type it is bound as. */
export interface BoundText {
  readonly type: 'BIGINT' | 'DOUBLE' | 'BOOLEAN' | 'VARCHAR' | 'TIMESTAMP_NS' | 'DATE';
  readonly text: string;
}

const iso = (millis: number): string => new Date(millis).toISOString();

/** Nanoseconds since the epoch as DuckDB's TIMESTAMP_NS text (years 0-9999; DuckDB's cast refuses others). */
function timestampText(nanos: bigint): string {
  const second = nanos / 1_000_000_000n - (nanos % 1_000_000_000n < 0n ? 1n : 0n);
  const fraction = (nanos - second * 1_000_000_000n).toString().padStart(9, '0');
  return `${iso(Number(second) * 1000)
    .slice(0, 19)
    .replace('T', ' ')}.${fraction}`;
}

/**
 * Row `row` of a parameter table as bindRow binds it, `$n` (and the n-th `?`) at index n-1, as text: null
 * for a NULL, undefined for a value with no such text (a blob, a float that is not finite).
 */
export function boundTexts(parameters: Table, row: number): Array<BoundText | null | undefined> {
  return parameters.schema.fields.map((_field, column): BoundText | null | undefined => {
    const bound = boundValue(parameters, column, row);
    if (bound === null) return null;
    switch (bound.type) {
      case 'BLOB':
        return undefined;
      case 'DOUBLE':
        return Number.isFinite(bound.value) ? { type: 'DOUBLE', text: String(bound.value) } : undefined;
      case 'TIMESTAMP_NS':
        return { type: 'TIMESTAMP_NS', text: timestampText(bound.value) };
      case 'DATE':
        return { type: 'DATE', text: iso(bound.value * 86_400_000).slice(0, 10) };
      default:
        return { type: bound.type, text: String(bound.value) };
    }
  });
}
