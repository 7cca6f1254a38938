import { fileURLToPath } from 'node:url';
import protobuf from 'protobufjs';

const protoDir = fileURLToPath(new URL('../../../proto/', import.meta.url));
const root = protobuf.loadSync([`${protoDir}Flight.proto`, `${protoDir}FlightSql.proto`]);

const flight = (name: string): protobuf.Type => root.lookupType(`arrow.flight.protocol.${name}`);
const sql = (name: string): protobuf.Type => root.lookupType(`arrow.flight.protocol.sql.${name}`);

/** Flight RPC message types (proto/Flight.proto). */
export const Flight = {
  HandshakeRequest: flight('HandshakeRequest'),
  HandshakeResponse: flight('HandshakeResponse'),
  Criteria: flight('Criteria'),
  Empty: flight('Empty'),
  Action: flight('Action'),
  ActionType: flight('ActionType'),
  Result: flight('Result'),
  SchemaResult: flight('SchemaResult'),
  FlightDescriptor: flight('FlightDescriptor'),
  FlightInfo: flight('FlightInfo'),
  PollInfo: flight('PollInfo'),
  Ticket: flight('Ticket'),
  FlightData: flight('FlightData'),
  PutResult: flight('PutResult'),
  CancelFlightInfoRequest: flight('CancelFlightInfoRequest'),
  CancelFlightInfoResult: flight('CancelFlightInfoResult'),
  SetSessionOptionsRequest: flight('SetSessionOptionsRequest'),
  SetSessionOptionsResult: flight('SetSessionOptionsResult'),
  GetSessionOptionsResult: flight('GetSessionOptionsResult'),
  CloseSessionResult: flight('CloseSessionResult'),
} as const;

/** Flight SQL command types (proto/FlightSql.proto), by message name. */
export const FlightSql = Object.fromEntries(
  [
    'CommandGetSqlInfo',
    'CommandGetXdbcTypeInfo',
    'CommandGetCatalogs',
    'CommandGetDbSchemas',
    'CommandGetTables',
    'CommandGetTableTypes',
    'CommandGetPrimaryKeys',
    'CommandGetExportedKeys',
    'CommandGetImportedKeys',
    'CommandGetCrossReference',
    'ActionCreatePreparedStatementRequest',
    'ActionCreatePreparedSubstraitPlanRequest',
    'ActionCreatePreparedStatementResult',
    'ActionClosePreparedStatementRequest',
    'ActionBeginTransactionRequest',
    'ActionBeginSavepointRequest',
    'ActionBeginTransactionResult',
    'ActionBeginSavepointResult',
    'ActionEndTransactionRequest',
    'ActionEndSavepointRequest',
    'CommandStatementQuery',
    'CommandStatementSubstraitPlan',
    'TicketStatementQuery',
    'CommandPreparedStatementQuery',
    'CommandStatementUpdate',
    'CommandPreparedStatementUpdate',
    'CommandStatementIngest',
    'DoPutUpdateResult',
    'DoPutPreparedStatementResult',
    'ActionCancelQueryRequest',
    'ActionCancelQueryResult',
  ].map((name) => [name, sql(name)]),
) as Record<string, protobuf.Type>;

const sqlPackage = 'arrow.flight.protocol.sql.';
const typeUrlPrefix = `type.googleapis.com/${sqlPackage}`;

/** Encodes a message as the bytes of a protobuf Message (no Any). */
export function encode(type: protobuf.Type, value: Record<string, unknown>): Uint8Array {
  return type.encode(type.fromObject(value)).finish();
}

/** Packs a Flight SQL message into google.protobuf.Any bytes. */
export function packAny(messageName: string, value: Record<string, unknown>): Uint8Array {
  const body = encode(FlightSql[messageName], value);
  return anyWriter()
    .uint32(10)
    .string(typeUrlPrefix + messageName)
    .uint32(18)
    .bytes(body)
    .finish();
}

function anyWriter(): protobuf.Writer {
  return protobuf.Writer.create();
}

export interface UnpackedAny {
  /** Message name of a Flight SQL type URL (`…/arrow.flight.protocol.sql.X` gives `X`); otherwise the full name. */
  readonly name: string;
  readonly value: Uint8Array;
}

/** Reads google.protobuf.Any bytes; null when the bytes are not an Any. */
export function unpackAny(bytes: Uint8Array): UnpackedAny | null {
  try {
    const reader = protobuf.Reader.create(bytes);
    let typeUrl: string | undefined;
    let value: Uint8Array = new Uint8Array(0);
    while (reader.pos < reader.len) {
      const tag = reader.uint32();
      if (tag === 10) typeUrl = reader.string();
      else if (tag === 18) value = reader.bytes();
      else return null;
    }
    if (typeUrl === undefined || !typeUrl.includes('/')) return null;
    const fullName = typeUrl.slice(typeUrl.lastIndexOf('/') + 1);
    const name = fullName.startsWith(sqlPackage) ? fullName.slice(sqlPackage.length) : fullName;
    return { name, value };
  } catch {
    return null;
  }
}

/** Decodes a Flight SQL message body to a plain object (bytes as Uint8Array, int64 as bigint-safe numbers). */
export function decodeSql<T>(messageName: string, value: Uint8Array): T {
  const type = FlightSql[messageName];
  return type.toObject(type.decode(value), { longs: Number, defaults: false, arrays: true }) as T;
}
