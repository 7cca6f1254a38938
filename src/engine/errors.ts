/** Errors the engine reports; `status` is the gRPC status name the front end sends. */
export class EngineError extends Error {
  constructor(
    readonly status: 'INVALID_ARGUMENT' | 'PERMISSION_DENIED' | 'CANCELLED' | 'DEADLINE_EXCEEDED' | 'UNAVAILABLE',
    message: string,
  ) {
    super(message);
    this.name = 'EngineError';
  }
}

/** A DuckDB error (parser, binder, catalog, conversion, ...) is the caller's SQL at fault. */
export function sqlError(error: unknown): EngineError {
  const message = error instanceof Error ? error.message : String(error);
  if (/INTERRUPT/i.test(message)) return new EngineError('CANCELLED', 'query cancelled');
  return new EngineError('INVALID_ARGUMENT', message);
}
