import {
  Field,
  Schema,
  Timestamp,
  type DataType,
  DataType as ArrowDataType,
  List,
  Struct,
  Map_,
  TimestampMillisecond,
} from 'apache-arrow';
import { derivedSchema } from '../arrow/index.js';
import { invalidArgument } from './errors.js';

// Timestamps as each client can read them. Results carry `timestamp[ns, UTC]`, which ADBC,
// pyarrow and arrow-go read as UTC instants. The Arrow Flight SQL JDBC driver before 19.0
// maps any zoned timestamp to java.sql.Types.TIMESTAMP_WITH_TIMEZONE, and Avatica's
// ResultSet.getObject(i) throws (an unsupported-operation error) for that type (19.0 answers it through
// getTimestamp); for a zone-less timestamp getObject, getTimestamp and getString all work. So
// those drivers, recognised by a bare grpc-java user agent (19.0 prefixes "JDBC Flight SQL
// Driver"), get the same nanosecond values without the zone, which Orrery means as UTC. The
// `timestamp_zone` header (`UTC` or `none`, a JDBC URL parameter becomes one) overrides the choice.

/** Whether a call's results keep their timestamps' UTC zone; INVALID_ARGUMENT for a timestamp_zone header of another value. */
export function zonedTimestamps(headers: ReadonlyMap<string, string>): boolean {
  const choice = headers.get('timestamp_zone')?.trim().toLowerCase();
  if (choice === 'none') return false;
  if (choice === 'utc') return true;
  if (choice !== undefined && choice !== '')
    throw invalidArgument(`header timestamp_zone: expected UTC or none, got '${headers.get('timestamp_zone')}'`);
  return !/^grpc-java/i.test(headers.get('user-agent') ?? '');
}

/**
 * The schema as sent to a client: unchanged, or with every timestamp's zone removed. The zone-less one is made once
 * per schema (derivedSchema): a new object each call was encoded again at each of a JDBC statement's three calls (#10).
 */
export function schemaForClient(schema: Schema, zoned: boolean): Schema {
  if (zoned || !schema.fields.some((f) => hasZone(f.type))) return schema;
  return derivedSchema(schema, 'zone-less', () => new Schema(schema.fields.map(withoutZone), schema.metadata));
}

/**
 * The parameter schema announced to every client: timestamps in milliseconds. The JDBC driver (18.x and 19.0)
 * writes java.sql.Timestamp milliseconds into a parameter vector of any unit unscaled, so a
 * nanosecond parameter would bind 1970; other clients send their own Arrow types and ignore it.
 */
export function announcedParameterSchema(schema: Schema): Schema {
  if (!schema.fields.some((f) => ArrowDataType.isTimestamp(f.type))) return schema;
  return new Schema(
    schema.fields.map((f) =>
      ArrowDataType.isTimestamp(f.type)
        ? new Field(f.name, new TimestampMillisecond((f.type as Timestamp).timezone), f.nullable, f.metadata)
        : f,
    ),
    schema.metadata,
  );
}

function hasZone(type: DataType): boolean {
  if (ArrowDataType.isTimestamp(type)) return Boolean((type as Timestamp).timezone);
  return (type.children ?? []).some((child: Field) => hasZone(child.type));
}

function withoutZone(field: Field): Field {
  return new Field(field.name, typeWithoutZone(field.type), field.nullable, field.metadata);
}

function typeWithoutZone(type: DataType): DataType {
  if (ArrowDataType.isTimestamp(type)) return new Timestamp((type as Timestamp).unit);
  if (ArrowDataType.isList(type)) return new List(withoutZone((type as List).children[0]));
  if (ArrowDataType.isStruct(type)) return new Struct((type as Struct).children.map(withoutZone));
  if (ArrowDataType.isMap(type)) return new Map_(withoutZone((type as Map_).children[0]), (type as Map_).keysSorted);
  return type;
}
