import type * as grpc from '@grpc/grpc-js';
import { decodeFlightData } from './flight-data.js';
import { Flight } from './proto.js';

// arrow.flight.protocol.FlightService as grpc-js wants it, for the server and for clients alike.
// A value that is already a Buffer is sent as it is: the server frames FlightData itself.

const codec = (type: (typeof Flight)[keyof typeof Flight]) => ({
  serialize: (value: unknown): Buffer =>
    Buffer.isBuffer(value)
      ? value
      : Buffer.from(type.encode(type.fromObject(value as Record<string, unknown>)).finish()),
  deserialize: (bytes: Buffer): unknown =>
    type === Flight.FlightData
      ? decodeFlightData(bytes)
      : type.toObject(type.decode(bytes), { longs: Number, defaults: false }),
});

function method(
  name: string,
  requestType: (typeof Flight)[keyof typeof Flight],
  responseType: (typeof Flight)[keyof typeof Flight],
  requestStream: boolean,
  responseStream: boolean,
): grpc.MethodDefinition<unknown, unknown> {
  const request = codec(requestType);
  const response = codec(responseType);
  return {
    path: `/arrow.flight.protocol.FlightService/${name}`,
    requestStream,
    responseStream,
    requestSerialize: request.serialize,
    requestDeserialize: request.deserialize,
    responseSerialize: response.serialize,
    responseDeserialize: response.deserialize,
  };
}

/** arrow.flight.protocol.FlightService, every call (FlightData decoded as `FlightData` (flight-data.ts), header and body always set). */
export const serviceDefinition: grpc.ServiceDefinition = {
  Handshake: method('Handshake', Flight.HandshakeRequest, Flight.HandshakeResponse, true, true),
  ListFlights: method('ListFlights', Flight.Criteria, Flight.FlightInfo, false, true),
  GetFlightInfo: method('GetFlightInfo', Flight.FlightDescriptor, Flight.FlightInfo, false, false),
  PollFlightInfo: method('PollFlightInfo', Flight.FlightDescriptor, Flight.PollInfo, false, false),
  GetSchema: method('GetSchema', Flight.FlightDescriptor, Flight.SchemaResult, false, false),
  DoGet: method('DoGet', Flight.Ticket, Flight.FlightData, false, true),
  DoPut: method('DoPut', Flight.FlightData, Flight.PutResult, true, true),
  DoExchange: method('DoExchange', Flight.FlightData, Flight.FlightData, true, true),
  DoAction: method('DoAction', Flight.Action, Flight.Result, false, true),
  ListActions: method('ListActions', Flight.Empty, Flight.ActionType, false, true),
};
