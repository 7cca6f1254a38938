// Export*ServiceResponse bodies (with partial_success) and google.rpc.Status error bodies.
import protobuf from 'protobufjs';
import { exportResponseTypes } from './otlp-proto.js';
import type { OtlpContentType, OtlpSignal } from './otlp-types.js';

/** What part of a request was refused although the request as a whole succeeded. */
export interface PartialSuccess {
  /** How many log records, data points or spans were rejected. */
  readonly rejected: number | bigint;
  readonly errorMessage: string;
}

const REJECTED_FIELD: Readonly<Record<OtlpSignal, string>> = {
  logs: 'rejectedLogRecords',
  metrics: 'rejectedDataPoints',
  traces: 'rejectedSpans',
};

/**
 * The body of a successful export answer: empty (protobuf) or `{}` (JSON) when all was accepted,
 * otherwise `partial_success` with the rejected count (an int64: a string in JSON) and the message.
 */
export function encodeExportResponse(
  signal: OtlpSignal,
  contentType: OtlpContentType,
  partial?: PartialSuccess,
): Uint8Array {
  const partialSuccess =
    partial === undefined
      ? undefined
      : { [REJECTED_FIELD[signal]]: String(partial.rejected), errorMessage: partial.errorMessage };
  if (contentType === 'json')
    return Buffer.from(JSON.stringify(partialSuccess === undefined ? {} : { partialSuccess }));
  const type = exportResponseTypes[signal];
  return type.encode(type.fromObject(partialSuccess === undefined ? {} : { partialSuccess })).finish();
}

const status = new protobuf.Type('Status')
  .add(new protobuf.Field('code', 1, 'int32'))
  .add(new protobuf.Field('message', 2, 'string'));
new protobuf.Root().define('google.rpc').add(status);

/**
 * The body of an OTLP/HTTP error answer: a google.rpc.Status carrying the message, and the gRPC status
 * code when given (0 leaves it unset).
 */
export function encodeErrorStatus(contentType: OtlpContentType, message: string, code = 0): Uint8Array {
  const value = code === 0 ? { message } : { code, message }; // proto3: a zero code is not sent
  if (contentType === 'json') return Buffer.from(JSON.stringify(value));
  return status.encode(status.fromObject(value)).finish();
}
