import { declareErrors } from '../errors/index.js';

/** Errors of view set definitions, made by DDL or stored. */
export const viewErrors = declareErrors('views', {
  VIEW_DEFINITION_INVALID: {
    status: 'INVALID_ARGUMENT',
    meaning:
      'a view set definition breaks a rule (a query does not plan, misses a column, is not deterministic, ...); the message names the query and the rule',
  },
  VIEW_NAME_TAKEN: { status: 'INVALID_ARGUMENT', meaning: 'the name belongs to a built-in view set or a static table' },
  VIEW_SET_EXISTS: {
    status: 'ALREADY_EXISTS',
    meaning: 'CREATE MATERIALIZED VIEW names a view set that exists (use CREATE OR REPLACE)',
  },
  VIEW_SET_NOT_FOUND: {
    status: 'NOT_FOUND',
    meaning: 'DROP MATERIALIZED VIEW, or a function, names a view set that does not exist',
  },
  VIEW_SET_BUILT_IN: {
    status: 'FAILED_PRECONDITION',
    meaning: 'a built-in view set or a static table cannot be dropped',
  },
  STATIC_TABLES_UNREADABLE: {
    status: 'FAILED_PRECONDITION',
    meaning: 'the MICROMEGAS_STATIC_TABLES_URL folder cannot be listed',
  },
  VIEW_LOADER_CLOSED: {
    status: 'UNAVAILABLE',
    meaning: 'the view set loader has been closed (the server is stopping)',
  },
  VIEW_SET_IN_USE: {
    status: 'FAILED_PRECONDITION',
    meaning: 'dropping or replacing the view set would break another view set that reads it',
  },
});
