import { OrreryError } from '../errors/index.js';
import { MetadataError } from './errors.js';

// A statement's own failure (a constraint, a serialization conflict, bad SQL) is the caller's to
// handle by its SQLSTATE. A failure of the connection under it (the database down, restarting, out of
// connections, or the socket gone) is none of that: every caller, whatever it was doing, meets the
// same condition, and a client of Orrery should hear "unavailable, try again", not "internal error".

/** SQLSTATEs of the connection, not the statement: class 08, the server shutting down or starting, too many connections. */
const connectionStates = /^(08...|57P0[123]|53300)$/;
/** Node's socket errors. */
const socketErrors = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);
/** node-postgres's own messages for a connection that ended or never came (they carry no code). */
const poolMessages =
  /^(Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error)/;

/**
 * SQLSTATEs of a statement the database had no room for, not of what it wrote: disk full, out of memory (shared memory
 * too: max_locks_per_transaction), a configuration limit (temp_file_limit). Nothing of it was kept, and the same
 * statement may pass once the database has room again. Like a lost connection, no caller can do better than its
 * client trying again later: every statement of the store meets it (a Flight SQL procedure, the daemon, an OTLP commit).
 */
const exhaustedStates = new Set(['53100', '53200', '53400']);

/**
 * `error` as METADATA_UNAVAILABLE when it is a failure of the connection to the metadata database, as
 * METADATA_EXHAUSTED when the database had no room for the statement (see exhaustedStates), otherwise `error`
 * itself. The message says what a client may know (no address of the database); the cause, for the server's log,
 * keeps the rest.
 */
export function unavailableOr(error: unknown): unknown {
  if (error instanceof OrreryError) return error;
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  if (typeof code === 'string' && exhaustedStates.has(code))
    return new MetadataError(
      'METADATA_EXHAUSTED',
      'the metadata database has no room for this request now (disk full, out of memory or a configured limit): try again later',
      { cause: error },
    );
  const lost =
    (typeof code === 'string' && (connectionStates.test(code) || socketErrors.has(code))) ||
    (typeof message === 'string' && poolMessages.test(message));
  return lost
    ? new MetadataError(
        'METADATA_UNAVAILABLE',
        'the metadata database cannot be reached (down, restarting or out of connections): try again',
        { cause: error },
      )
    : error;
}

/**
 * SQLSTATEs of a statement that gave way to another, not of what it wrote: a serialization failure, a deadlock, a lock
 * not granted within lock_timeout, a statement cancelled (pg_cancel_backend, statement_timeout). The same statement may
 * pass when tried again.
 */
const conflictStates = new Set(['40001', '40P01', '55P03', '57014']);

/**
 * `error` as METADATA_CONFLICT when it is one of those, otherwise `error` itself: for a caller that cannot try again on
 * its own and answers a client that can (an OTLP request's commit: 503 with Retry-After, where a 500 would make an
 * exporter drop the data). Not every caller: others retry a conflict themselves, by its SQLSTATE.
 */
export function conflictOr(error: unknown): unknown {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && conflictStates.has(code))
    return new MetadataError(
      'METADATA_CONFLICT',
      'the metadata database gave this request way to another statement (a lock or a conflict): try again',
      { cause: error },
    );
  return error;
}
