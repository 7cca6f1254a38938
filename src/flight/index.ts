// Arrow Flight SQL front end: the gRPC server, commands, auth headers, streaming (wire/ has the format).
// Knows nothing about telemetry: everything a statement means is up to the backend.
export type * from './backend.js';
export { FlightSqlServer, type FlightSqlServerOptions } from './flight-sql-server.js';
export { errorCodeTrailer, flightErrors } from './errors.js';
export { notRfc3339, parseRfc3339Nanos } from './call-context.js';
export { likeMatcher } from './metadata-commands.js';
export { batchFromRows } from './record-batches.js';
