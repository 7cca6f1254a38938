/** Stable codes of the metadata component's errors; never reused. */
export type MetadataErrorCode =
  /** The embedded Postgres server could not be initialised or started. */
  | 'EMBEDDED_START_FAILED'
  /** The cluster folder is used by a Postgres server that is still running. */
  | 'DATA_DIR_IN_USE'
  /** The OS user the embedded server runs as cannot reach a folder it needs. */
  | 'DATA_DIR_UNREACHABLE'
  /** The cluster folder exists but is not a cluster Orrery can use. */
  | 'CLUSTER_INVALID'
  /** Running as root, and no non-root OS user could be found or created for Postgres. */
  | 'SERVER_USER_UNAVAILABLE'
  /** The database could not be reached (external server down, wrong connection string). */
  | 'CONNECT_FAILED'
  /** The database holds migrations this version of Orrery does not know. */
  | 'SCHEMA_TOO_NEW'
  /** A migration failed; nothing of it was applied. */
  | 'MIGRATION_FAILED'
  /** The store or server has been closed. */
  | 'CLOSED';

const statuses: Record<MetadataErrorCode, 'UNAVAILABLE' | 'FAILED_PRECONDITION' | 'INTERNAL'> = {
  EMBEDDED_START_FAILED: 'UNAVAILABLE',
  DATA_DIR_IN_USE: 'FAILED_PRECONDITION',
  DATA_DIR_UNREACHABLE: 'FAILED_PRECONDITION',
  CLUSTER_INVALID: 'FAILED_PRECONDITION',
  SERVER_USER_UNAVAILABLE: 'FAILED_PRECONDITION',
  CONNECT_FAILED: 'UNAVAILABLE',
  SCHEMA_TOO_NEW: 'FAILED_PRECONDITION',
  MIGRATION_FAILED: 'INTERNAL',
  CLOSED: 'UNAVAILABLE',
};

/** An error of the metadata store: a stable `code`, the gRPC `status` it maps to, and a message naming the input. */
export class MetadataError extends Error {
  readonly status: 'UNAVAILABLE' | 'FAILED_PRECONDITION' | 'INTERNAL';

  constructor(
    readonly code: MetadataErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'MetadataError';
    this.status = statuses[code];
  }
}

/** The message of any thrown value. */
export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
