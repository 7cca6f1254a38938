import type { XdbcTypeInfo } from '../flight/index.js';

// The DuckDB types offered to JDBC's getTypeInfo, with XDBC (JDBC-compatible) type codes.
const searchable = 3;
const nullable = 1;

function type(
  typeName: string,
  dataType: number,
  columnSize: number | null,
  extra: Partial<XdbcTypeInfo> = {},
): XdbcTypeInfo {
  return {
    typeName,
    dataType,
    columnSize,
    literalPrefix: null,
    literalSuffix: null,
    createParams: null,
    nullable,
    caseSensitive: false,
    searchable,
    unsignedAttribute: null,
    fixedPrecScale: false,
    autoIncrement: false,
    localTypeName: typeName,
    minimumScale: null,
    maximumScale: null,
    sqlDataType: dataType,
    datetimeSubcode: null,
    numPrecRadix: null,
    intervalPrecision: null,
    ...extra,
  };
}

const numeric = (unsigned: boolean) => ({ unsignedAttribute: unsigned, numPrecRadix: 10 });
const quoted = { literalPrefix: "'", literalSuffix: "'" };

export const xdbcTypes: XdbcTypeInfo[] = [
  type('BOOLEAN', -7, 1),
  type('TINYINT', -6, 3, numeric(false)),
  type('BIGINT', -5, 19, numeric(false)),
  type('BLOB', -3, null, quoted),
  type('DECIMAL', 3, 38, {
    ...numeric(false),
    createParams: ['precision', 'scale'],
    fixedPrecScale: true,
    minimumScale: 0,
    maximumScale: 38,
  }),
  type('INTEGER', 4, 10, numeric(false)),
  type('SMALLINT', 5, 5, numeric(false)),
  type('FLOAT', 6, 7, { numPrecRadix: 2 }),
  type('DOUBLE', 8, 15, { numPrecRadix: 2 }),
  type('VARCHAR', 12, null, { ...quoted, caseSensitive: true }),
  type('DATE', 91, 10, { ...quoted, sqlDataType: 9, datetimeSubcode: 1 }),
  type('TIME', 92, 15, { ...quoted, sqlDataType: 9, datetimeSubcode: 2 }),
  type('TIMESTAMP', 93, 29, { ...quoted, sqlDataType: 9, datetimeSubcode: 3 }),
  type('TIMESTAMP WITH TIME ZONE', 93, 35, { ...quoted, sqlDataType: 9, datetimeSubcode: 3 }),
];
