import { clockMacro, fixedClockVariable } from '../engine/index.js';
import { dashboardMacros } from './dashboard-functions.js';
import { perfettoMacros } from './perfetto-trace.js';

// DataFusion functions that telemetry SQL written for micromegas uses, as DuckDB macros,
// so such SQL runs unchanged. Created once when an engine starts.

/**
 * The bucket of an integer time value (SQL) for an integer width (SQL): the largest multiple of the width at or below
 * it, also for negative values. create_rollup's bucket_width and `bucket(10000, height)` are both this.
 */
export const integerBucketSql = (width: string, value: string): string =>
  `(CAST(${value} AS BIGINT) - ((CAST(${value} AS BIGINT) % ${width}) + ${width}) % ${width})`;

// Orrery's clock (engine's clockMacro), which now() and its twins call: the statement's fixed clock
// (fixedClockVariable) or DuckDB's. A key that is not an admin may call it (reader-functions.ts): the variable is the
// server's alone to set.
export { clockMacro };

/** The table macros below: table functions any key may call (they read nothing but their argument). */
export const compatibilityTableFunctions: ReadonlySet<string> = new Set([
  'jsonb_each',
  'jsonb_array_elements',
  'expand_histogram',
]);

export const compatibilityMacros: readonly string[] = [
  ...perfettoMacros,
  ...dashboardMacros,
  // date_bin(stride, source[, origin]): DataFusion bins from the Unix epoch and keeps
  // nanoseconds; DuckDB's time_bucket bins from 2000-01-03 and returns microseconds.
  `CREATE OR REPLACE MACRO date_bin
     (stride, source) AS time_bucket(CAST(stride AS INTERVAL), CAST(source AS TIMESTAMP), TIMESTAMP '1970-01-01')::TIMESTAMP_NS,
     (stride, source, origin) AS time_bucket(CAST(stride AS INTERVAL), CAST(source AS TIMESTAMP), CAST(origin AS TIMESTAMP))::TIMESTAMP_NS`,
  // The rollups spec's bucket(width, ts) (`snouttime.bucket`, its qualifier dropped: rollups/snouttime-names.ts): a
  // rollup's bucket of a value, as create_rollup gives it. An integer width is bucket_width's: the multiple of it at or
  // below the value (DuckDB picks the typed overload for an integer width). Any other width is an interval, as
  // `bucket` is: UTC, DuckDB's default origin (hourly on the hour, daily at midnight, weekly on Mondays).
  `CREATE OR REPLACE MACRO bucket
     (width BIGINT, ts) AS CASE WHEN width <= 0 THEN error('bucket: the width must be a positive integer, not ' || width)
       ELSE ${integerBucketSql('width', 'ts')} END,
     (width, ts) AS time_bucket(CAST(width AS INTERVAL), CAST(ts AS TIMESTAMP))`,
  // arrow_cast(value, 'Arrow type'): a literal Arrow type becomes a cast before the statement
  // runs (engine/dialect.ts); otherwise the Arrow type of a column is Orrery's choice when it
  // sends results, so the value passes through unchanged.
  'CREATE OR REPLACE MACRO arrow_cast(value, arrow_type) AS value',
  // Time columns are TIMESTAMP_NS and DuckDB cannot compare TIMESTAMP_NS with TIMESTAMPTZ, so
  // the functions that return TIMESTAMPTZ return the same instant as TIMESTAMP_NS, as the
  // DataFusion functions of the same names do (`current_timestamp` is get_current_timestamp()).
  // Each reads the statement's fixed clock when the server fixed it (fixedClockVariable, set on the
  // statement's connection for its run), else DuckDB's; so do the UTC date's (`current_date` is current_date()).
  `CREATE OR REPLACE MACRO ${clockMacro}() AS coalesce(getvariable('${fixedClockVariable}'), CAST(system.main.now() AS TIMESTAMP_NS))`,
  `CREATE OR REPLACE MACRO now() AS ${clockMacro}()`,
  `CREATE OR REPLACE MACRO get_current_timestamp() AS ${clockMacro}()`,
  `CREATE OR REPLACE MACRO transaction_timestamp() AS ${clockMacro}()`,
  `CREATE OR REPLACE MACRO current_date() AS CAST(${clockMacro}() AS DATE)`,
  `CREATE OR REPLACE MACRO today() AS CAST(${clockMacro}() AS DATE)`,
  // to_timestamp* as DataFusion: numbers count units since the epoch (seconds for
  // to_timestamp), text is parsed (RFC 3339, offsets honoured, nanoseconds kept).
  `CREATE OR REPLACE MACRO __orrery_timestamp_ns(value, unit_nanos) AS CASE
     WHEN typeof(value) IN ('TINYINT', 'SMALLINT', 'INTEGER', 'BIGINT', 'UTINYINT', 'USMALLINT', 'UINTEGER', 'UBIGINT', 'HUGEINT')
       THEN make_timestamp_ns(TRY_CAST(value AS BIGINT) * unit_nanos)
     WHEN typeof(value) IN ('FLOAT', 'DOUBLE') OR typeof(value) LIKE 'DECIMAL%'
       THEN make_timestamp_ns(CAST(round(TRY_CAST(value AS DOUBLE) * unit_nanos) AS BIGINT))
     ELSE CAST(CAST(value AS VARCHAR) AS TIMESTAMP_NS) END`,
  'CREATE OR REPLACE MACRO to_timestamp(value) AS __orrery_timestamp_ns(value, 1000000000)',
  'CREATE OR REPLACE MACRO to_timestamp_seconds(value) AS __orrery_timestamp_ns(value, 1000000000)',
  'CREATE OR REPLACE MACRO to_timestamp_millis(value) AS __orrery_timestamp_ns(value, 1000000)',
  'CREATE OR REPLACE MACRO to_timestamp_micros(value) AS __orrery_timestamp_ns(value, 1000)',
  'CREATE OR REPLACE MACRO to_timestamp_nanos(value) AS __orrery_timestamp_ns(value, 1)',
  // approx_percentile_cont(value, fraction) as DataFusion's (DuckDB's approx_quantile).
  'CREATE OR REPLACE MACRO approx_percentile_cont(value, fraction) AS approx_quantile(value, fraction)',
  // arrow_typeof(value): the Arrow type the value is sent as, named as DataFusion names it.
  `CREATE OR REPLACE MACRO arrow_typeof(value) AS CASE
     WHEN typeof(value) LIKE 'TIMESTAMP%' THEN 'Timestamp(Nanosecond, Some("UTC"))'
     WHEN typeof(value) LIKE 'DECIMAL%' THEN replace(replace(typeof(value), 'DECIMAL', 'Decimal128'), ',', ', ')
     ELSE coalesce(map {'BOOLEAN': 'Boolean', 'TINYINT': 'Int8', 'SMALLINT': 'Int16', 'INTEGER': 'Int32', 'BIGINT': 'Int64',
       'UTINYINT': 'UInt8', 'USMALLINT': 'UInt16', 'UINTEGER': 'UInt32', 'UBIGINT': 'UInt64', 'FLOAT': 'Float32',
       'DOUBLE': 'Float64', 'VARCHAR': 'Utf8', 'JSON': 'Utf8', 'BLOB': 'Binary', 'DATE': 'Date32', 'HUGEINT': 'Decimal128(38, 0)',
       'TIME': 'Time64(Microsecond)', '"NULL"': 'Null'}[typeof(value)], typeof(value)) END`,
  // DataFusion's encode(value, 'hex' | 'base64') and decode(value, 'hex' | 'base64') (which
  // micromegas's admin helpers use for schema hashes); the one-argument forms stay DuckDB's.
  `CREATE OR REPLACE MACRO encode
     (value) AS system.main.encode(value),
     (value, encoding) AS CASE lower(encoding) WHEN 'hex' THEN lower(hex(value)) WHEN 'base64' THEN to_base64(CAST(value AS BLOB))
       ELSE error('encode: supported encodings are hex and base64, not ' || encoding) END`,
  `CREATE OR REPLACE MACRO decode
     (value) AS system.main.decode(value),
     (value, encoding) AS CASE lower(encoding) WHEN 'hex' THEN unhex(CAST(value AS VARCHAR)) WHEN 'base64' THEN from_base64(CAST(value AS VARCHAR))
       ELSE error('decode: supported encodings are hex and base64, not ' || encoding) END`,
  // micromegas's property and JSONB functions over Orrery's JSON properties.
  `CREATE OR REPLACE MACRO property_get(properties, name) AS json_extract_string(properties, '$."' || replace(name, '"', '\\"') || '"')`,
  'CREATE OR REPLACE MACRO properties_length(properties) AS len(json_keys(properties))',
  'CREATE OR REPLACE MACRO properties_to_jsonb(properties) AS CAST(properties AS JSON)',
  'CREATE OR REPLACE MACRO properties_to_dict(properties) AS CAST(properties AS JSON)',
  'CREATE OR REPLACE MACRO jsonb_parse(text) AS json(text)',
  'CREATE OR REPLACE MACRO jsonb_format_json(value) AS CAST(value AS VARCHAR)',
  `CREATE OR REPLACE MACRO jsonb_get(value, name) AS json_extract(value, '$."' || replace(name, '"', '\\"') || '"')`,
  `CREATE OR REPLACE MACRO jsonb_as_string(value) AS CASE WHEN json_type(value) = 'VARCHAR' THEN json_extract_string(value, '$') END`,
  `CREATE OR REPLACE MACRO jsonb_as_f64(value) AS
     CASE WHEN json_type(value) IN ('DOUBLE', 'BIGINT', 'UBIGINT') THEN CAST(json_extract_string(value, '$') AS DOUBLE) END`,
  `CREATE OR REPLACE MACRO jsonb_as_i64(value) AS
     CASE WHEN json_type(value) IN ('BIGINT', 'UBIGINT') THEN CAST(json_extract_string(value, '$') AS BIGINT) END`,
  'CREATE OR REPLACE MACRO jsonb_array_length(value) AS json_array_length(value)',
  'CREATE OR REPLACE MACRO jsonb_object_keys(value) AS json_keys(value)',
  'CREATE OR REPLACE MACRO jsonb_path_query_first(value, path) AS json_extract(value, path)',
  // Every match of a path, as a JSON array ([] when none): DuckDB's json_extract answers a list
  // for a path with wildcards ($.a[*], $..b) and one value otherwise.
  `CREATE OR REPLACE MACRO jsonb_path_query(value, path) AS CASE
     WHEN typeof(json_extract(value, path)) = 'JSON[]' THEN to_json(json_extract(value, path))
     WHEN json_extract(value, path) IS NULL THEN '[]'::JSON
     ELSE json_array(json_extract(value, path)) END`,
  // micromegas's JSONB table functions: one row per member (key: field name, or index for an
  // array) or per element. Parameters are named apart from json_each's columns, which a
  // macro's parameter names would otherwise replace.
  `CREATE OR REPLACE MACRO jsonb_each(__jsonb) AS TABLE SELECT key, value::JSON AS value FROM json_each(CASE
     WHEN json_type(__jsonb) IN ('OBJECT', 'ARRAY') THEN __jsonb::JSON
     ELSE error('jsonb_each: input is not a JSONB object or array') END)`,
  `CREATE OR REPLACE MACRO jsonb_array_elements(__jsonb) AS TABLE SELECT value::JSON AS value FROM json_each(CASE
     WHEN json_type(__jsonb) = 'ARRAY' THEN __jsonb::JSON
     ELSE error('jsonb_array_elements: input is not a JSONB array') END)`,
  // Histograms as micromegas's make_histogram builds them: a struct of start, end, min, max,
  // sum, sum_sq, count and a list of nb_bins counts; values outside [start, end) count in
  // the first or last bin.
  'CREATE OR REPLACE MACRO __orrery_histogram_bins(counts, nb_bins) AS list_transform(range(nb_bins), i -> CAST(coalesce(counts[i], 0) AS UBIGINT))',
  `CREATE OR REPLACE MACRO make_histogram(start, "end", nb_bins, value) AS {
     'start': CAST(start AS DOUBLE), 'end': CAST("end" AS DOUBLE), 'min': min(CAST(value AS DOUBLE)),
     'max': max(CAST(value AS DOUBLE)), 'sum': sum(CAST(value AS DOUBLE)), 'sum_sq': sum(CAST(value AS DOUBLE) * value),
     'count': CAST(count(value) AS UBIGINT),
     'bins': __orrery_histogram_bins(histogram(CAST(least(greatest(floor((value - start) / ("end" - start) * nb_bins), 0), nb_bins - 1) AS BIGINT)), nb_bins)}`,
  'CREATE OR REPLACE MACRO count_from_histogram(h) AS h.count',
  'CREATE OR REPLACE MACRO sum_from_histogram(h) AS h.sum',
  'CREATE OR REPLACE MACRO variance_from_histogram(h) AS ((h.sum_sq / h.count) - (h.sum / h.count) ^ 2) * (h.count / (h.count - 1.0))',
  `CREATE OR REPLACE MACRO __orrery_histogram_quantile(h, wanted, running) AS coalesce(list_first(list_filter(list_transform(range(len(h.bins)),
       i -> CASE WHEN running[i + 1] >= wanted AND h.bins[i + 1] > 0 THEN
         h.start + (i + (wanted - (running[i + 1] - h.bins[i + 1])) / h.bins[i + 1]) * (h."end" - h.start) / len(h.bins) END),
       x -> x IS NOT NULL)), h."end")`,
  // Histograms of one shape (start, end, number of bins) merged; any other shape is an error, as in micromegas.
  `CREATE OR REPLACE MACRO sum_histograms(__h) AS CASE
     WHEN count(DISTINCT [__h.start, __h."end", len(__h.bins)]) > 1 THEN error('Error merging incompatible histograms')
     ELSE {'start': min(__h.start), 'end': max(__h."end"), 'min': min(__h.min), 'max': max(__h.max), 'sum': sum(__h.sum),
       'sum_sq': sum(__h.sum_sq), 'count': CAST(sum(__h.count) AS UBIGINT),
       'bins': list_reduce(list(__h.bins), (a, b) -> list_transform(range(len(a)), i -> a[i + 1] + b[i + 1]))} END`,
  // One row per bin: its center and count (a zero-width histogram has bins one unit wide).
  `CREATE OR REPLACE MACRO expand_histogram(__h) AS TABLE SELECT
     unnest(list_transform(range(len(__x.bins)), i -> __x.start + (i + 0.5) * CASE
       WHEN abs(__x."end" - __x.start) < 2.220446049250313e-16 THEN 1.0 ELSE (__x."end" - __x.start) / len(__x.bins) END)) AS bin_center,
     unnest(__x.bins) AS count
   FROM (SELECT __h AS __x)`,
  // The quantile as micromegas estimates it: linear within the first bin where the running count reaches it.
  `CREATE OR REPLACE MACRO quantile_from_histogram(h, ratio) AS __orrery_histogram_quantile(
     h, ratio * h.count, list_transform(range(len(h.bins)), i -> list_sum(h.bins[1:i + 1])))`,
];
