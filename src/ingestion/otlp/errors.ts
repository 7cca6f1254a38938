import { OrreryError, declareErrors } from '../../errors/index.js';

/** The errors OTLP decoding reports, each with the HTTP status the ingestion server answers. */
export const otlpErrors = declareErrors('ingestion', {
  OTLP_MALFORMED_BODY: {
    status: 'INVALID_ARGUMENT',
    httpStatus: 400,
    meaning: 'the body is not a valid OTLP request (protobuf, JSON, gzip or shape)',
  },
  OTLP_BODY_TOO_LARGE: {
    status: 'RESOURCE_EXHAUSTED',
    httpStatus: 413,
    meaning: 'the (decompressed) body is larger than ORRERY_MAX_BODY_BYTES',
  },
  OTLP_THROTTLED: {
    status: 'RESOURCE_EXHAUSTED',
    httpStatus: 429,
    meaning:
      'the key has ORRERY_INGEST_MAX_CONCURRENT_PER_KEY requests (or half of ORRERY_INGEST_MEMORY_BYTES) in progress; retry after Retry-After',
  },
  OTLP_OVERLOADED: {
    status: 'UNAVAILABLE',
    httpStatus: 503,
    meaning:
      'the server has ORRERY_INGEST_MAX_CONCURRENT requests (or ORRERY_INGEST_MEMORY_BYTES) in progress; retry after Retry-After',
  },
  OTLP_UNSUPPORTED_ENCODING: {
    status: 'INVALID_ARGUMENT',
    httpStatus: 415,
    meaning: 'Content-Encoding is neither identity nor gzip',
  },
  OTLP_UNSUPPORTED_MEDIA_TYPE: {
    status: 'INVALID_ARGUMENT',
    httpStatus: 415,
    meaning: 'Content-Type is neither application/x-protobuf nor application/json',
  },
});

/** Every OTLP code with what it means (and its HTTP status). */
export const otlpErrorCodes = otlpErrors.codes;

/** One of the codes in {@link otlpErrorCodes}. */
export type OtlpErrorCode = keyof typeof otlpErrorCodes;

/** An OTLP request the server refuses: a stable code, its HTTP status and a message naming the bad input. */
export class OtlpDecodeError extends OrreryError {
  declare readonly code: OtlpErrorCode;
  declare readonly httpStatus: 400 | 413 | 415 | 429 | 503;

  constructor(code: OtlpErrorCode, message: string) {
    super(code, message);
    this.name = 'OtlpDecodeError';
  }
}

/** A 400 error for a body that does not decode to a well-formed OTLP request. */
export const malformed = (message: string): OtlpDecodeError => new OtlpDecodeError('OTLP_MALFORMED_BODY', message);
