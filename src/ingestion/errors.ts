import { declareErrors } from '../errors/index.js';

/** Errors of the HTTP server itself (OTLP decoding errors are in otlp/errors.ts). */
export const httpErrors = declareErrors('ingestion', {
  HTTP_SERVER_CLOSED: {
    status: 'FAILED_PRECONDITION',
    meaning: 'the HTTP server was started after being closed (a bug of the embedding code)',
  },
});
