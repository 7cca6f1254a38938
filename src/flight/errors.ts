import { Metadata, status as GrpcStatus } from '@grpc/grpc-js';
import { OrreryError, declareErrors } from '../errors/index.js';
import { decodeSql } from '../wire/index.js';

/** Errors of the Flight SQL front end itself: requests it cannot read or does not serve. */
export const flightErrors = declareErrors('flight', {
  FLIGHT_UNIMPLEMENTED: {
    status: 'UNIMPLEMENTED',
    meaning: 'a Flight or Flight SQL call, command or action this server does not serve',
  },
  FLIGHT_BAD_REQUEST: {
    status: 'INVALID_ARGUMENT',
    meaning: 'a request that is not well-formed: a bad ticket, descriptor, action body or header',
  },
  UPLOAD_CANCELLED: {
    status: 'CANCELLED',
    meaning: 'the client cancelled a DoPut (or its deadline passed) before its upload ended; nothing of it is kept',
  },
  RESULT_NOT_READ: {
    status: 'DEADLINE_EXCEEDED',
    meaning:
      "the client stopped reading a result and was still not reading when the statement's timeout (or its own deadline) passed; the statement was stopped",
  },
  FLIGHT_UNAUTHENTICATED: { status: 'UNAUTHENTICATED', meaning: 'missing, malformed or refused credentials' },
  FLIGHT_SERVER_STATE: {
    status: 'FAILED_PRECONDITION',
    meaning: 'the server was started twice, or started after being closed (a bug of the embedding code)',
  },
});

export const unimplemented = (what: string): OrreryError =>
  flightErrors.error('FLIGHT_UNIMPLEMENTED', `${what} is not supported by this server`);
export const invalidArgument = (message: string): OrreryError => flightErrors.error('FLIGHT_BAD_REQUEST', message);
export const unauthenticated = (message: string): OrreryError => flightErrors.error('FLIGHT_UNAUTHENTICATED', message);

/** A Flight SQL message of a request, decoded; bytes that are not one (truncated, strings not UTF-8) are the client's mistake. */
export function decodeRequest<T>(messageName: string, value: Uint8Array): T {
  try {
    return decodeSql<T>(messageName, value);
  } catch (error) {
    throw invalidArgument(`${messageName}: not a valid protobuf message (${(error as Error).message})`);
  }
}

/** The trailer that carries an error's stable code to the client, next to its status and message. */
export const errorCodeTrailer = 'orrery-error-code';

/** A gRPC status for any thrown value; errors without a declared code become INTERNAL without their details. */
export function toGrpcStatus(error: unknown): {
  code: GrpcStatus;
  details: string;
  metadata: Metadata;
  internal: boolean;
} {
  const metadata = new Metadata();
  if (error instanceof OrreryError) {
    metadata.set(errorCodeTrailer, error.code);
    return { code: GrpcStatus[error.status], details: error.message, metadata, internal: error.status === 'INTERNAL' };
  }
  return { code: GrpcStatus.INTERNAL, details: 'internal error (see the server log)', metadata, internal: true };
}
