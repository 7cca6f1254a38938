import { declareErrors } from '../errors/index.js';

/** Errors of materialization. */
export const maintenanceErrors = declareErrors('maintenance', {
  COUNT_QUERY_SHAPE: {
    status: 'FAILED_PRECONDITION',
    meaning: "a view set's count_src_query did not return one row with one column",
  },
  DAEMON_CLOSED: { status: 'UNAVAILABLE', meaning: 'the maintenance daemon has been closed (the server is stopping)' },
  PARTITION_OVERLAP: {
    status: 'UNAVAILABLE',
    meaning:
      'another process (a daemon pass, an admin call) registered a partition overlapping the range first; nothing was changed',
  },
  PARTITION_LOST: {
    status: 'DATA_LOSS',
    meaning:
      'a partition file the statement read cannot be read (missing, truncated, overwritten) and its range cannot be rebuilt: its source is gone (past retention), so its rows are lost',
  },
  PARTITION_CONTAINMENT_FAILED: {
    status: 'UNAVAILABLE',
    meaning:
      'a partition file the statement read cannot be read, and quarantining it or rebuilding its range failed (Postgres, the object store or the rebuild failed)',
  },
  PARTITION_WRITE_TOO_SLOW: {
    status: 'UNAVAILABLE',
    meaning:
      'a partition took more than half of ORRERY_ORPHAN_GRACE_SECONDS to write, so housekeeping may already count its file as an orphan; it is not registered, and the range is built again',
  },
  SOURCE_VIEW_NOT_LOADED: {
    status: 'FAILED_PRECONDITION',
    meaning: 'a view set reads another view set that is not loaded (its definition failed or was dropped)',
  },
});
