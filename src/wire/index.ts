// The Arrow Flight wire format, once for the server (flight/), Orrery's client (client/) and the
// tests: the FlightService definition, Flight and Flight SQL messages and Any packing, FlightData
// encoding, and the IPC framing of schemas and record batches. Knows no server or client logic.
export { serviceDefinition } from './service.js';
export { Flight, FlightSql, decodeSql, encode, packAny, unpackAny, type UnpackedAny } from './proto.js';
export { decodeFlightData, encodeFlightData, framedFlightData, type FlightData } from './flight-data.js';
export {
  decodeBatches,
  decodeSchema,
  encapsulateSchema,
  readFlightDataStream,
  recordBatchBodyLength,
  recordBatchMessages,
  schemaHeader,
  tableFromFlightData,
  tableToFlightData,
  type IpcMessage,
} from './ipc.js';
