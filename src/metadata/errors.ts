import { OrreryError, declareErrors } from '../errors/index.js';

export { messageOf } from '../errors/index.js';

/** The metadata component's errors. */
export const metadataErrors = declareErrors('metadata', {
  EMBEDDED_START_FAILED: {
    status: 'UNAVAILABLE',
    meaning: 'the embedded Postgres server could not be initialised or started',
  },
  DATA_DIR_IN_USE: {
    status: 'FAILED_PRECONDITION',
    meaning: 'the cluster folder is used by a Postgres server that is still running',
  },
  DATA_DIR_UNREACHABLE: {
    status: 'FAILED_PRECONDITION',
    meaning: 'the OS user the embedded server runs as cannot reach a folder it needs',
  },
  CLUSTER_INVALID: {
    status: 'FAILED_PRECONDITION',
    meaning: 'the cluster folder exists but is not a cluster Orrery can use',
  },
  SERVER_USER_UNAVAILABLE: {
    status: 'FAILED_PRECONDITION',
    meaning: 'running as root, and no non-root OS user could be found or created for Postgres',
  },
  CONNECT_FAILED: {
    status: 'UNAVAILABLE',
    meaning: 'the metadata database could not be reached (external server down, wrong connection string)',
  },
  SCHEMA_TOO_NEW: {
    status: 'FAILED_PRECONDITION',
    meaning: 'the database holds migrations this version of Orrery does not know',
  },
  MIGRATION_FAILED: { status: 'INTERNAL', meaning: 'a schema migration failed; nothing of it was applied' },
  METADATA_UNAVAILABLE: {
    status: 'UNAVAILABLE',
    meaning:
      'the metadata database stopped answering while the server runs (down, restarting, out of connections); the call may be tried again',
  },
  METADATA_CONFLICT: {
    status: 'UNAVAILABLE',
    meaning:
      'a statement gave way to another (a deadlock or serialization conflict, a lock not granted within lock_timeout, a statement cancelled or past statement_timeout): nothing of it was kept, and the call may be tried again',
  },
  METADATA_EXHAUSTED: {
    status: 'UNAVAILABLE',
    meaning:
      'the metadata database had no room for a statement (disk full, out of memory, a configuration limit such as max_locks_per_transaction or temp_file_limit): nothing of it was kept, and the call may be tried again once it has',
  },
  METADATA_CLOSED: {
    status: 'UNAVAILABLE',
    meaning: 'the metadata store or the embedded server has been closed (the server is stopping)',
  },
});

/** One of the metadata component's codes. */
export type MetadataErrorCode = keyof typeof metadataErrors.codes;

/** An error of the metadata store: a stable `code`, the gRPC `status` it maps to, and a message naming the input. */
export class MetadataError extends OrreryError {
  declare readonly code: MetadataErrorCode;

  constructor(code: MetadataErrorCode, message: string, options?: { cause?: unknown }) {
    super(code, message, options);
    this.name = 'MetadataError';
  }
}
