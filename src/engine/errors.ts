import { OrreryError, declareErrors, isErrorOf, messageOf } from '../errors/index.js';

/** Errors the engine reports. */
export const engineErrors = declareErrors('engine', {
  QUERY_INVALID: {
    status: 'INVALID_ARGUMENT',
    meaning:
      "DuckDB refused the statement or it failed while running (syntax, unknown name, conversion, permission, ...); the message is DuckDB's",
  },
  QUERY_CANCELLED: {
    status: 'CANCELLED',
    meaning: 'the caller cancelled the query (CancelQuery, or the call went away)',
  },
  QUERY_DEADLINE_EXCEEDED: {
    status: 'DEADLINE_EXCEEDED',
    meaning: "the statement ran past its deadline (ORRERY_QUERY_TIMEOUT_SECONDS, or the call's gRPC deadline)",
  },
  QUERY_INTERRUPTED: {
    status: 'INVALID_ARGUMENT',
    meaning: "the query failed in one of DuckDB's threads and DuckDB reported only that it was interrupted",
  },
  QUERY_OUT_OF_MEMORY: {
    status: 'RESOURCE_EXHAUSTED',
    meaning: 'the query needs more memory than ORRERY_DUCKDB_MEMORY_LIMIT allows',
  },
  ENGINE_INTERNAL: { status: 'INTERNAL', meaning: 'DuckDB reported an internal or fatal error (a DuckDB bug)' },
  ENGINE_CLOSED: { status: 'UNAVAILABLE', meaning: 'the query engine has been shut down (the server is stopping)' },
  TRANSACTION_ENDED: { status: 'INVALID_ARGUMENT', meaning: 'a statement names a transaction that has ended' },
  TRANSACTION_ABORTED: {
    status: 'ABORTED',
    meaning:
      'a statement of the transaction failed or was cancelled (its client gave up while it ran): the transaction takes no more statements and commits nothing, as in Postgres, until it is rolled back',
  },
  TRANSACTION_CONFLICT: {
    status: 'ABORTED',
    meaning:
      "the commit was refused: another transaction changed a table this one wrote since it began (DuckLake's logical conflicts: altered it, as a publication sorting a series table does, dropped it, or deleted the same rows); nothing of it was kept",
  },
  INGEST_TYPE_UNSUPPORTED: {
    status: 'INVALID_ARGUMENT',
    meaning: 'a bulk-ingested column has an Arrow type Orrery cannot store',
  },
  EXTENSION_LOAD_FAILED: {
    status: 'UNAVAILABLE',
    meaning: 'a DuckDB extension Orrery loads at start-up (ORRERY_DUCKDB_EXTENSION_DIR) did not load',
  },
  CATALOG_ATTACH_FAILED: {
    status: 'UNAVAILABLE',
    meaning: 'the DuckLake catalog of series tables could not be attached at start-up',
  },
  STORE_SECRET_FAILED: {
    status: 'UNAVAILABLE',
    meaning: "DuckDB refused the object store's credentials (its S3 secret) at start-up",
  },
});

/**
 * DuckDB's exception types, in the order duckdb.h numbers them (`duckdb_error_type`), named as DuckDB
 * opens every error message with them (`<name> Error: ...`, Exception::ExceptionTypeToString).
 */
const errorTypeNames = [
  'Invalid',
  'Out of Range',
  'Conversion',
  'Unknown Type',
  'Decimal',
  'Mismatch Type',
  'Divide by Zero',
  'Object Size',
  'Invalid type',
  'Serialization',
  'TransactionContext',
  'Not implemented',
  'Expression',
  'Catalog',
  'Parser',
  'Planner',
  'Scheduler',
  'Executor',
  'Constraint',
  'Index',
  'Stat',
  'Connection',
  'Syntax',
  'Settings',
  'Binder',
  'Network',
  'Optimizer',
  'NullPointer',
  'IO',
  'INTERRUPT',
  'FATAL',
  'INTERNAL',
  'Invalid Input',
  'Out of Memory',
  'Permission',
  'Parameter Not Resolved',
  'Parameter Not Allowed',
  'Dependency',
  'HTTP',
  'Missing Extension',
  'Extension Autoloading',
  'Sequence',
  'Invalid Configuration',
] as const;

const INTERRUPT = errorTypeNames.indexOf('INTERRUPT');
const FATAL = errorTypeNames.indexOf('FATAL');
const INTERNAL = errorTypeNames.indexOf('INTERNAL');
const OUT_OF_MEMORY = errorTypeNames.indexOf('Out of Memory');
const INVALID_INPUT = errorTypeNames.indexOf('Invalid Input');
const TRANSACTION_CONTEXT = errorTypeNames.indexOf('TransactionContext');
/** How the native sketch aggregates' error opens when their states would pass the memory limit. */
const SKETCH_BUDGET = 'native sketch states would take more than';
/**
 * The types DuckDB reports a file it cannot read with: missing or unreachable (IO; HTTP, for s3://),
 * or not a valid file of its format (Invalid Input: Parquet's reader, e.g. "No magic bytes found";
 * Invalid: Thrift's, e.g. a damaged footer).
 */
const FILE_READ_TYPES = new Set(
  ['IO', 'HTTP', 'Invalid Input', 'Invalid'].map((name) => errorTypeNames.indexOf(name as never)),
);

/** A failure read from a DuckDB result through the C API: its error type (duckdb_error_type) and message. */
export class DuckDBResultFailure extends Error {
  constructor(
    readonly errorType: number,
    message: string,
  ) {
    super(message);
    this.name = 'DuckDBResultFailure';
  }
}

/**
 * DuckDB's error type of a failure: from the C API where Orrery holds the result (the native module
 * reads `duckdb_result_error_type`). @duckdb/node-api exposes only the message, which DuckDB opens
 * with the type's name, so there the message's first words up to ` Error: ` are looked up in the
 * closed list above (never searched for words); -1 when the error is not DuckDB's.
 */
export function duckdbErrorType(error: unknown): number {
  if (error instanceof DuckDBResultFailure) return error.errorType;
  const message = messageOf(error);
  const end = message.indexOf(' Error: ');
  return end < 0 ? -1 : errorTypeNames.indexOf(message.slice(0, end) as (typeof errorTypeNames)[number]);
}

/**
 * The engine's error for a DuckDB failure, classified by DuckDB's error type. CANCELLED and
 * DEADLINE_EXCEEDED never come from here: they are the StatementGuard's, which knows the caller
 * asked. An interruption nobody asked for is a query that failed in another of DuckDB's threads
 * (DuckDB then interrupts the others, and now and then the fetching thread reports only that).
 */
export function sqlError(error: unknown): OrreryError {
  if (error instanceof OrreryError) return error;
  const message = messageOf(error);
  switch (duckdbErrorType(error)) {
    case INTERRUPT:
      return engineErrors.error(
        'QUERY_INTERRUPTED',
        "the query failed in one of DuckDB's threads and DuckDB reported only that it was interrupted; run it again to see the error",
      );
    case OUT_OF_MEMORY:
      return engineErrors.error('QUERY_OUT_OF_MEMORY', message);
    case INVALID_INPUT:
      // The native sketch aggregates' budget (sketch-aggregates.cc's Account): DuckDB reports an
      // aggregate's error as invalid input, whatever it was.
      if (message.includes(SKETCH_BUDGET)) return engineErrors.error('QUERY_OUT_OF_MEMORY', message);
      return engineErrors.error('QUERY_INVALID', message, { cause: error });
    case FATAL:
    case INTERNAL:
      return engineErrors.error('ENGINE_INTERNAL', message, { cause: error });
    case TRANSACTION_CONTEXT:
      // DuckLake: "Failed to commit DuckLake transaction. Transaction conflict - ..."; DuckDB's own catalog's:
      // "Catalog write-write conflict ...". Nothing was kept: the same work again may commit.
      if (/\bconflict\b/i.test(message))
        return engineErrors.error('TRANSACTION_CONFLICT', `${message} (nothing of it was kept: run it again)`, {
          cause: error,
        });
      return engineErrors.error('QUERY_INVALID', message, { cause: error });
    default:
      // DuckDB's failure stays as the cause: callers classify it by type (isFileReadFailure).
      return engineErrors.error('QUERY_INVALID', message, { cause: error });
  }
}

/**
 * An error in the data DuckDB read (malformed JSON, a failed cast), as opposed to the system failing
 * (out of memory, DuckDB's own failures, a shutdown). An interruption DuckDB reports in place of a
 * failure in another of its threads counts as the data's, as that failure most likely was.
 */
export const isDataError = (error: unknown): boolean =>
  isErrorOf(error, engineErrors, 'QUERY_INVALID', 'QUERY_INTERRUPTED');

/**
 * An error a statement over every audience's rows may fail with for one audience's rows alone, so that a build or a
 * refresh runs once per audience on it, leaving out the audiences whose run fails: the data's (isDataError), or the
 * memory one audience's rows take (QUERY_OUT_OF_MEMORY: a sketch aggregate's states over the budget of
 * sketch-aggregates.cc, DuckDB's memory_limit), which many groups or distinct values of one tenant's can pass alone
 * while the others' fit. Not a system failure otherwise (ENGINE_INTERNAL, ENGINE_CLOSED, a cancellation): the
 * audiences' runs would each fail alike and tell nothing of whose rows.
 */
export const isAudienceRowsError = (error: unknown): boolean =>
  isDataError(error) || isErrorOf(error, engineErrors, 'QUERY_OUT_OF_MEMORY');

/**
 * Whether DuckDB reported failing to read a file (one that is missing, unreachable or not valid
 * Parquet), by its error type, from the failure or from the engine error it became.
 */
export function isFileReadFailure(error: unknown): boolean {
  const failure = error instanceof OrreryError ? error.cause : error;
  return FILE_READ_TYPES.has(duckdbErrorType(failure));
}

export const engineClosed = (): OrreryError =>
  engineErrors.error('ENGINE_CLOSED', 'the query engine has been shut down');
