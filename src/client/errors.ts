import { status as GrpcStatus, type ServiceError } from '@grpc/grpc-js';

/**
 * A failed Flight SQL call: the gRPC status (`code`, as grpc-js numbers it, and its name in
 * `status`) and the server's message (`details`). The message reads `STATUS: details`.
 */
export class FlightClientError extends Error {
  /** The gRPC status name, e.g. `INVALID_ARGUMENT`. */
  readonly status: string;

  constructor(
    /** The gRPC status code (`grpc.status`). */
    readonly code: GrpcStatus,
    /** What the server (or the channel) said, without the status. */
    readonly details: string,
    /** Orrery's stable error code (docs/errors.md), from the `orrery-error-code` trailer, when the server sent one. */
    readonly errorCode?: string,
  ) {
    const name = GrpcStatus[code] ?? `STATUS_${code}`;
    super(`${name}: ${details}`);
    this.name = 'FlightClientError';
    this.status = name;
  }
}

/** The error every call gets after `close()`. */
export const clientClosed = (): FlightClientError =>
  new FlightClientError(GrpcStatus.FAILED_PRECONDITION, 'the Flight SQL client has been closed');

/** A readable error for anything a gRPC call rejects with; other values pass through unchanged. */
export function toClientError(error: unknown, address: string): unknown {
  if (error instanceof FlightClientError || !isServiceError(error)) return error;
  const details = (error.details || error.message).replace(/\.?\s*Resolution note:\s*$/, '');
  const errorCode = error.metadata?.get('orrery-error-code')[0];
  // DEADLINE_EXCEEDED is not a connection problem: the server answers it when a statement ran past
  // its timeout, and grpc-js when the call's own deadline passed. Nor is an UNAVAILABLE that names
  // Orrery's code (PARTITION_QUARANTINED, ...): the server answered it.
  if (error.code === GrpcStatus.UNAVAILABLE && typeof errorCode !== 'string') {
    return new FlightClientError(error.code, `cannot reach the Flight SQL server at ${address}: ${details}`);
  }
  return new FlightClientError(error.code, details, typeof errorCode === 'string' ? errorCode : undefined);
}

function isServiceError(error: unknown): error is ServiceError {
  return error instanceof Error && typeof (error as Partial<ServiceError>).code === 'number' && 'details' in error;
}
