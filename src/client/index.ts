// Flight SQL client for Orrery's own tools (the `orrery views` CLI, tests): one gRPC channel,
// Basic handshake or bearer key, queries as Arrow tables or streamed batches, readable errors.
export {
  FlightSqlClient,
  type CallOptions,
  type FlightInfo,
  type FlightSqlClientOptions,
} from './flight-sql-client.js';
export { FlightClientError } from './errors.js';
export type { FlightData } from '../wire/index.js';
