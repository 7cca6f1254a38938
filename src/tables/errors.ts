import { declareErrors } from '../errors/index.js';

/** Errors of series tables: statements, retention and bulk ingest. */
export const tableErrors = declareErrors('tables', {
  SERIES_STATEMENT_INVALID: {
    status: 'INVALID_ARGUMENT',
    meaning:
      'a statement on a series table cannot be run as written (an unknown option, the time or audience column, a column count, ...)',
  },
  SERIES_TABLE_EXISTS: {
    status: 'ALREADY_EXISTS',
    meaning: 'CREATE TABLE or a bulk ingest in create mode names a series table that exists',
  },
  SERIES_TABLE_NOT_FOUND: {
    status: 'NOT_FOUND',
    meaning: 'set_retention or a bulk ingest in append mode names no series table',
  },
  SERIES_TABLE_ADMIN_ONLY: {
    status: 'PERMISSION_DENIED',
    meaning: 'creating or replacing a series table by bulk ingest, with a key that is not an admin',
  },
  SERIES_TABLE_HAS_DEPENDENTS: {
    status: 'FAILED_PRECONDITION',
    meaning:
      'DROP TABLE, or a bulk ingest in replace mode, names a series table that rollups read (the message names them); drop them first',
  },
  INGEST_COLUMNS_MISMATCH: {
    status: 'INVALID_ARGUMENT',
    meaning:
      "a bulk-ingested stream's columns do not fit the series table (a column it lacks, a type it cannot store, no time column)",
  },
});

/** A series-table statement that cannot be run as written; the message says why. */
export const seriesStatementError = (message: string) => tableErrors.error('SERIES_STATEMENT_INVALID', message);
