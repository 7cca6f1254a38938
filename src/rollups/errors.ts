import { declareErrors } from '../errors/index.js';

/** Errors of the rollups: create_rollup's refusals, unknown rollups, drops refused by what depends on them. */
export const rollupErrors = declareErrors('rollups', {
  ROLLUP_ARGUMENT_INVALID: {
    status: 'INVALID_ARGUMENT',
    meaning:
      'an argument of a rollup function is missing or wrong: the name, bucket or bucket_width (both, neither, or the one that does not fit the time column), an interval, a retention',
  },
  ROLLUP_SELECT_LIST_INVALID: {
    status: 'INVALID_ARGUMENT',
    meaning:
      'select_list or group_by does not parse, does not aggregate, leaves an aggregate unnamed or a group column out of select_list, reads the clock (now(), current_date, age(x), ...), or does not bind on the source',
  },
  ROLLUP_NOT_MERGEABLE: {
    status: 'INVALID_ARGUMENT',
    meaning:
      "a rollup of a rollup uses an aggregate that does not merge (avg, median, count(distinct), stddev, ...), or a bucket that is not a whole number of its source's",
  },
  ROLLUP_NAME_IN_USE: {
    status: 'ALREADY_EXISTS',
    meaning: 'create_rollup names a rollup, series table, view set or materialized table that exists',
  },
  ROLLUP_SOURCE_NOT_FOUND: {
    status: 'NOT_FOUND',
    meaning: 'create_rollup names a source that is neither a series table nor a rollup',
  },
  ROLLUP_NOT_FOUND: { status: 'NOT_FOUND', meaning: 'a rollup function names a rollup that does not exist' },
  ROLLUP_IN_USE: {
    status: 'FAILED_PRECONDITION',
    meaning: 'drop_rollup of a rollup another rollup is built on, or DROP TABLE of a table with rollups',
  },
  ROLLUP_CHANGED_IN_TRANSACTION: {
    status: 'FAILED_PRECONDITION',
    meaning:
      "a statement in a client's transaction names a rollup (or its materialized table) made or dropped after the transaction began",
  },
  ROLLUP_REFRESH_BUSY: {
    status: 'FAILED_PRECONDITION',
    meaning: 'refresh_rollup waited 10 minutes for a refresh of the same rollup running elsewhere',
  },
});
