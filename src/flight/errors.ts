import { status as GrpcStatus } from '@grpc/grpc-js';

/** The gRPC status names Orrery's errors carry; any component may throw an error with one. */
export type ErrorStatus =
  | 'INVALID_ARGUMENT'
  | 'NOT_FOUND'
  | 'ALREADY_EXISTS'
  | 'PERMISSION_DENIED'
  | 'UNAUTHENTICATED'
  | 'RESOURCE_EXHAUSTED'
  | 'FAILED_PRECONDITION'
  | 'UNIMPLEMENTED'
  | 'CANCELLED'
  | 'DEADLINE_EXCEEDED'
  | 'UNAVAILABLE'
  | 'INTERNAL';

/** An error the client is meant to read: a status and a message naming the offending input. */
export class FlightSqlError extends Error {
  constructor(
    readonly status: ErrorStatus,
    message: string,
  ) {
    super(message);
    this.name = 'FlightSqlError';
  }
}

export const unimplemented = (what: string): FlightSqlError =>
  new FlightSqlError('UNIMPLEMENTED', `${what} is not supported by this server`);
export const invalidArgument = (message: string): FlightSqlError => new FlightSqlError('INVALID_ARGUMENT', message);
export const unauthenticated = (message: string): FlightSqlError => new FlightSqlError('UNAUTHENTICATED', message);

/** A gRPC status for any thrown value; unknown errors become INTERNAL without their details. */
export function toGrpcStatus(error: unknown): { code: GrpcStatus; details: string; internal: boolean } {
  const status = (error as { status?: unknown } | null)?.status;
  if (typeof status === 'string' && status in GrpcStatus && error instanceof Error) {
    return { code: GrpcStatus[status as ErrorStatus], details: error.message, internal: status === 'INTERNAL' };
  }
  return { code: GrpcStatus.INTERNAL, details: 'internal error (see the server log)', internal: true };
}
