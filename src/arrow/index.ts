// Arrow helpers shared by the engine and the Flight front end; they know neither DuckDB nor gRPC.
export { derivedSchema } from './derived-schemas.js';
