// OTLP/HTTP ingestion: requests in, blocks (payload in the object store, row in Postgres) out.
export { HttpServer, type HttpServerOptions } from './http-server.js';
export {
  IngestionService,
  derivedUuid,
  payloadContent,
  payloadLines,
  signalTags,
  storedProtobufSize,
} from './ingestion-service.js';
