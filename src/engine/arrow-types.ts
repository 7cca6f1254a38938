import {
  Binary,
  Bool,
  DateDay,
  Dictionary,
  Decimal,
  Field,
  Float32,
  Float64,
  Int16,
  Int32,
  Int64,
  Int8,
  List,
  Map_,
  Null,
  Struct,
  TimeMicrosecond,
  TimeNanosecond,
  TimestampNanosecond,
  Uint16,
  Uint32,
  Uint64,
  Uint8,
  Utf8,
  type DataType,
} from 'apache-arrow';
import { DuckDBTypeId, type DuckDBType } from '@duckdb/node-api';

export interface ArrowTypeOptions {
  /** When set, ENUM columns become dictionaries numbered from `next` (preserve_dictionary). */
  readonly dictionaryIds?: { next: number };
}

/**
 * The Arrow type a DuckDB column is sent as. ENUMs are decoded to text unless dictionaries
 * are asked for. Timestamps of every unit become nanoseconds
 * (what Grafana and micromegas clients assume); TIMESTAMPTZ carries the UTC zone.
 * Integers wider than 64 bits and decimals become Decimal128. Types without an Arrow
 * twin that every client reads (UUID, INTERVAL, BIT, UNION, ...) are sent as text.
 */
export function arrowType(type: DuckDBType, options: ArrowTypeOptions = {}): DataType {
  const child = (t: DuckDBType): DataType => arrowType(t, options);
  switch (type.typeId) {
    case DuckDBTypeId.BOOLEAN:
      return new Bool();
    case DuckDBTypeId.TINYINT:
      return new Int8();
    case DuckDBTypeId.SMALLINT:
      return new Int16();
    case DuckDBTypeId.INTEGER:
      return new Int32();
    case DuckDBTypeId.BIGINT:
      return new Int64();
    case DuckDBTypeId.UTINYINT:
      return new Uint8();
    case DuckDBTypeId.USMALLINT:
      return new Uint16();
    case DuckDBTypeId.UINTEGER:
      return new Uint32();
    case DuckDBTypeId.UBIGINT:
      return new Uint64();
    case DuckDBTypeId.FLOAT:
      return new Float32();
    case DuckDBTypeId.DOUBLE:
      return new Float64();
    case DuckDBTypeId.HUGEINT:
      return new Decimal(0, 38, 128);
    case DuckDBTypeId.DECIMAL: {
      const { width, scale } = type as unknown as { width: number; scale: number };
      return new Decimal(scale, width, 128);
    }
    case DuckDBTypeId.VARCHAR:
      return new Utf8();
    case DuckDBTypeId.ENUM:
      // Dictionary ids are numbered in column order, so describing a query twice gives equal schemas.
      return options.dictionaryIds ? new Dictionary(new Utf8(), new Int32(), options.dictionaryIds.next++) : new Utf8();
    case DuckDBTypeId.BLOB:
      return new Binary();
    case DuckDBTypeId.DATE:
      return new DateDay();
    case DuckDBTypeId.TIME:
      return new TimeMicrosecond();
    case DuckDBTypeId.TIME_NS:
      return new TimeNanosecond();
    case DuckDBTypeId.TIMESTAMP:
    case DuckDBTypeId.TIMESTAMP_S:
    case DuckDBTypeId.TIMESTAMP_MS:
    case DuckDBTypeId.TIMESTAMP_NS:
    case DuckDBTypeId.TIMESTAMP_TZ:
      return new TimestampNanosecond('UTC');
    case DuckDBTypeId.SQLNULL:
    case DuckDBTypeId.ANY:
      return new Null();
    case DuckDBTypeId.LIST: {
      const { valueType } = type as unknown as { valueType: DuckDBType };
      return new List(new Field('item', child(valueType), true));
    }
    case DuckDBTypeId.STRUCT: {
      const { entryNames, entryTypes } = type as unknown as { entryNames: string[]; entryTypes: DuckDBType[] };
      return new Struct(entryNames.map((name, i) => new Field(name, child(entryTypes[i]), true)));
    }
    case DuckDBTypeId.MAP: {
      const { keyType, valueType } = type as unknown as { keyType: DuckDBType; valueType: DuckDBType };
      const entries = new Struct([new Field('key', child(keyType), false), new Field('value', child(valueType), true)]);
      return new Map_(new Field('entries', entries, false));
    }
    default:
      return new Utf8();
  }
}
