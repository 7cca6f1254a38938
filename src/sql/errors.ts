import { declareErrors } from '../errors/index.js';

/** Errors of the SQL backend: who may run what, statement routing, Orrery's functions and procedures. */
export const sqlErrors = declareErrors('sql', {
  KEY_REFUSED: { status: 'UNAUTHENTICATED', meaning: 'the key (or user name and key) is not one the server knows' },
  ADMIN_ONLY: {
    status: 'PERMISSION_DENIED',
    meaning: 'an admin function, procedure or materialized-view DDL, called with a key that is not an admin',
  },
  SELECT_ONLY: { status: 'PERMISSION_DENIED', meaning: 'a key that is not an admin ran a statement other than SELECT' },
  RELATION_DENIED: {
    status: 'PERMISSION_DENIED',
    meaning:
      'a key that is not an admin read a file, an internal relation, a relation outside the orrery catalog, or a table function it may not call',
  },
  MULTIPLE_STATEMENTS: {
    status: 'INVALID_ARGUMENT',
    meaning: 'the text holds more than one statement; send one per call',
  },
  FUNCTION_ARGUMENT_INVALID: {
    status: 'INVALID_ARGUMENT',
    meaning: 'an argument of an Orrery function or admin procedure is missing, not a literal, or out of its range',
  },
  PROCEDURE_NOT_ALONE: {
    status: 'INVALID_ARGUMENT',
    meaning: 'an admin procedure must be the whole statement: SELECT * FROM f(...)',
  },
  FILES_DENIED: {
    status: 'PERMISSION_DENIED',
    meaning:
      "an admin's statement reads or writes files directly (read_parquet and the other read_*, parquet_*, glob, COPY, EXPORT DATABASE, FROM 'file'): the lake's files are reached through view sets and series tables",
  },
  PARTITION_QUARANTINED: {
    status: 'UNAVAILABLE',
    meaning:
      'a partition file the statement read could not be read (truncated, overwritten) after rows were sent: it is quarantined and its range rebuilt; run the statement again',
  },
  LAKEHOUSE_UNAVAILABLE: {
    status: 'UNIMPLEMENTED',
    meaning: 'the function needs the lakehouse, which this server does not run',
  },
  STATEMENT_CANCELLED: {
    status: 'CANCELLED',
    meaning: "the statement's FlightInfo was cancelled (CancelFlightInfo, CancelQuery) before its DoGet",
  },
  WRITE_CANCELLED: {
    status: 'CANCELLED',
    meaning:
      'the client cancelled a write (a bulk ingest after its upload ended, an INSERT, UPDATE, DELETE, executemany, CREATE or ALTER of a series table, CREATE MATERIALIZED VIEW, an admin procedure other than maintenance, docs/cancellation.md), or its deadline passed, before the write committed; nothing of it is kept',
  },
  QUERY_DENIED: {
    status: 'RESOURCE_EXHAUSTED',
    meaning: 'a deny rule (deny_queries) matches the statement; the message names the rule and its reason',
  },
  DENY_RULE_INVALID: {
    status: 'INVALID_ARGUMENT',
    meaning:
      'the match_expr of deny_queries is not one boolean expression over (user_id, sql, admin, client, tables, functions)',
  },
  BLOCK_NOT_FOUND: {
    status: 'NOT_FOUND',
    meaning: 'parse_block names no block, or one of an audience the key cannot read (the two look alike)',
  },
  BLOCK_PAYLOAD_MISSING: {
    status: 'FAILED_PRECONDITION',
    meaning: 'parse_block names a block whose payload is no longer in the object store (retention, or a deleted file)',
  },
  DENY_RULE_NOT_FOUND: { status: 'NOT_FOUND', meaning: 'remove_query_denial names a rule that does not exist' },
  PARTITION_NOT_FOUND: {
    status: 'NOT_FOUND',
    meaning: 'retire_partition_by_metadata or retire_partition_by_file names no stored partition',
  },
  SERIES_TABLES_UNAVAILABLE: {
    status: 'UNIMPLEMENTED',
    meaning: 'bulk ingest or set_retention on a server that runs without series tables (its start-up log says why)',
  },
  INGEST_TARGET_INVALID: {
    status: 'INVALID_ARGUMENT',
    meaning: 'a bulk ingest names no table, a temporary table, or a catalog or schema other than orrery.main',
  },
  LAKE_INTERNALS_DENIED: {
    status: 'PERMISSION_DENIED',
    meaning:
      "a statement names the series tables' DuckLake internals, is an ATTACH or DETACH, or (admins) would reach them unnamed: query(), query_table(), json_execute_serialized_sql, IMPORT DATABASE, arrow_scan, SET search_path / schema, USE",
  },
  STARTUP_OBJECT_DENIED: {
    status: 'PERMISSION_DENIED',
    meaning:
      "an admin's CREATE, DROP or ALTER of a function or relation the engine had at start-up (DuckDB's functions, Orrery's macros such as now(), the static tables), or a macro of the default schema named as one of those functions: every key's statements read them",
  },
  MACRO_DEFAULT_VARYING: {
    status: 'INVALID_ARGUMENT',
    meaning:
      "an admin's CREATE MACRO whose parameter's default reads the clock or the engine's state (now(), current_date, getvariable, a macro reading one): DuckDB computes a default once, when the macro is made, so every call would read that moment",
  },
  SECRETS_DENIED: {
    status: 'PERMISSION_DENIED',
    meaning:
      "CREATE SECRET or DROP SECRET: the engine's secrets are the object store's, made by Orrery at start-up; a key's secret could reach other servers or cut the lake off",
  },
  TRANSACTION_UNKNOWN: {
    status: 'INVALID_ARGUMENT',
    meaning: 'a transaction id that has ended, or was never begun by this key',
  },
  SAVEPOINTS_UNSUPPORTED: {
    status: 'UNIMPLEMENTED',
    meaning:
      'SAVEPOINT, ROLLBACK TO or RELEASE: DuckDB, which runs series tables and their transactions, has no savepoints',
  },
  TOO_MANY_TRANSACTIONS: {
    status: 'RESOURCE_EXHAUSTED',
    meaning: 'the server holds as many open transactions as it allows',
  },
  SERVER_STOPPING: { status: 'UNAVAILABLE', meaning: 'the server is shutting down and begins no new transaction' },
  TOO_MANY_STATEMENTS: {
    status: 'RESOURCE_EXHAUSTED',
    meaning:
      "the key's statements fill ORRERY_MAX_CONCURRENT_QUERIES_PER_KEY and its queue ORRERY_MAX_QUEUED_QUERIES_PER_KEY",
  },
  TOO_MANY_BIND_ROWS: {
    status: 'INVALID_ARGUMENT',
    meaning: 'more parameter rows bound to one statement than ORRERY_MAX_BIND_ROWS',
  },
  DDL_SYNTAX_ERROR: {
    status: 'INVALID_ARGUMENT',
    meaning:
      'CREATE/DROP MATERIALIZED VIEW: a token is missing or out of place, or a literal, comment or parenthesis is not closed',
  },
  DDL_MULTIPLE_STATEMENTS: {
    status: 'INVALID_ARGUMENT',
    meaning: "text other than comments follows the DDL statement's ';'",
  },
  DDL_UNSUPPORTED_CLAUSE: {
    status: 'INVALID_ARGUMENT',
    meaning:
      'a clause other SQL dialects accept (AS <query>, IF NOT EXISTS, CASCADE, a qualified name) that Orrery does not',
  },
  DDL_INVALID_NAME: {
    status: 'INVALID_ARGUMENT',
    meaning: "the view name breaks the naming rule, starts with '__', or is 'source'",
  },
  DDL_UNKNOWN_OPTION: { status: 'INVALID_ARGUMENT', meaning: 'a WITH option Orrery does not know' },
  DDL_REPEATED_OPTION: { status: 'INVALID_ARGUMENT', meaning: 'a WITH option given twice' },
  DDL_MISSING_OPTION: { status: 'INVALID_ARGUMENT', meaning: 'a required WITH option is absent' },
  DDL_INVALID_OPTION_VALUE: {
    status: 'INVALID_ARGUMENT',
    meaning: "a WITH option's value has the wrong type or form (empty query, bad delta, bad update_group, ...)",
  },
});
