/**
 * Stable codes of the errors OTLP decoding reports, each with the HTTP status the ingestion server answers
 * and what it means. Codes are never reused.
 */
export const otlpErrorCodes = {
  OTLP_MALFORMED_BODY: {
    httpStatus: 400,
    meaning: 'the body is not a valid OTLP request (protobuf, JSON, gzip or shape)',
  },
  OTLP_BODY_TOO_LARGE: { httpStatus: 413, meaning: 'the (decompressed) body is larger than the configured cap' },
  OTLP_UNSUPPORTED_ENCODING: { httpStatus: 415, meaning: 'Content-Encoding is neither identity nor gzip' },
  OTLP_UNSUPPORTED_MEDIA_TYPE: {
    httpStatus: 415,
    meaning: 'Content-Type is neither application/x-protobuf nor application/json',
  },
} as const;

/** One of the codes in {@link otlpErrorCodes}. */
export type OtlpErrorCode = keyof typeof otlpErrorCodes;

/** An OTLP request the server refuses: a stable code, its HTTP status and a message naming the bad input. */
export class OtlpDecodeError extends Error {
  readonly httpStatus: 400 | 413 | 415;

  constructor(
    readonly code: OtlpErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'OtlpDecodeError';
    this.httpStatus = otlpErrorCodes[code].httpStatus;
  }
}

/** A 400 error for a body that does not decode to a well-formed OTLP request. */
export const malformed = (message: string): OtlpDecodeError => new OtlpDecodeError('OTLP_MALFORMED_BODY', message);
