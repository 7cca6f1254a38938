import { fileURLToPath } from 'node:url';
import type * as grpc from '@grpc/grpc-js';
import protobuf from 'protobufjs';

// The client's own view of proto/Flight.proto and proto/FlightSql.proto: the service as grpc-js
// wants it, and the few Flight SQL messages a client sends or reads.

const protoDir = fileURLToPath(new URL('../../../proto/', import.meta.url));
const root = protobuf.loadSync([`${protoDir}Flight.proto`, `${protoDir}FlightSql.proto`]);
const flight = (name: string): protobuf.Type => root.lookupType(`arrow.flight.protocol.${name}`);
const sqlPackage = 'arrow.flight.protocol.sql.';

/** One FlightData message as it travels: flatbuffer IPC header (no prefix) and body. */
export interface FlightData {
  readonly dataHeader: Uint8Array;
  readonly dataBody: Uint8Array;
  readonly appMetadata?: Uint8Array;
}

function codec(type: protobuf.Type) {
  return {
    serialize: (value: unknown): Buffer => Buffer.from(type.encode(type.fromObject(value as Record<string, unknown>)).finish()),
    deserialize: (bytes: Buffer): unknown => type.toObject(type.decode(bytes), { longs: Number, defaults: false }),
  };
}

function method(name: string, request: string, response: string, requestStream: boolean, responseStream: boolean): grpc.MethodDefinition<unknown, unknown> {
  const req = codec(flight(request));
  const res = codec(flight(response));
  return {
    path: `/arrow.flight.protocol.FlightService/${name}`,
    requestStream,
    responseStream,
    requestSerialize: req.serialize,
    requestDeserialize: req.deserialize,
    responseSerialize: res.serialize,
    responseDeserialize: res.deserialize,
  };
}

/** arrow.flight.protocol.FlightService, the calls a client makes. */
export const flightService: grpc.ServiceDefinition = {
  Handshake: method('Handshake', 'HandshakeRequest', 'HandshakeResponse', true, true),
  GetFlightInfo: method('GetFlightInfo', 'FlightDescriptor', 'FlightInfo', false, false),
  PollFlightInfo: method('PollFlightInfo', 'FlightDescriptor', 'PollInfo', false, false),
  GetSchema: method('GetSchema', 'FlightDescriptor', 'SchemaResult', false, false),
  DoGet: method('DoGet', 'Ticket', 'FlightData', false, true),
  DoPut: method('DoPut', 'FlightData', 'PutResult', true, true),
  DoAction: method('DoAction', 'Action', 'Result', false, true),
};

/** A Flight SQL command packed in google.protobuf.Any, as a FlightDescriptor's `cmd` carries it. */
export function packCommand(messageName: string, value: Record<string, unknown>): Uint8Array {
  const type = root.lookupType(sqlPackage + messageName);
  const body = type.encode(type.fromObject(value)).finish();
  return protobuf.Writer.create().uint32(10).string(`type.googleapis.com/${sqlPackage}${messageName}`).uint32(18).bytes(body).finish();
}

/** The record count of a DoPutUpdateResult (the app_metadata of an update's PutResult). */
export function decodeUpdateCount(bytes: Uint8Array): number {
  const type = root.lookupType(`${sqlPackage}DoPutUpdateResult`);
  const result = type.toObject(type.decode(bytes), { longs: Number }) as { recordCount?: number };
  return Number(result.recordCount ?? 0);
}
