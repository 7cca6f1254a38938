// DataFusion functions that telemetry SQL written for micromegas uses, as DuckDB macros,
// so such SQL runs unchanged. Created once when an engine starts.

export const compatibilityMacros: readonly string[] = [
  // date_bin(stride, source[, origin]): DataFusion bins from the Unix epoch and keeps
  // nanoseconds; DuckDB's time_bucket bins from 2000-01-03 and returns microseconds.
  `CREATE OR REPLACE MACRO date_bin
     (stride, source) AS time_bucket(CAST(stride AS INTERVAL), CAST(source AS TIMESTAMP), TIMESTAMP '1970-01-01')::TIMESTAMP_NS,
     (stride, source, origin) AS time_bucket(CAST(stride AS INTERVAL), CAST(source AS TIMESTAMP), CAST(origin AS TIMESTAMP))::TIMESTAMP_NS`,
  // arrow_cast(value, 'Arrow type'): the Arrow type of a column is Orrery's choice when it
  // sends results, so the value passes through unchanged.
  'CREATE OR REPLACE MACRO arrow_cast(value, arrow_type) AS value',
];
