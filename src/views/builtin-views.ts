import type { ColumnSpec, ViewSet } from './view-set.js';
import { quoteLiteral } from './view-session.js';

// The view sets Orrery ships. Block payloads are read as newline-delimited JSON (one object per
// log record, metric point or span): as the ingestion service wrote them, or, for a logs request
// stored as received (protobuf), as the materializer decodes them (natively with the addon, see
// payloadRows); the daemon joins them with their block's metadata, loaded from Postgres into `__blocks`.

const c = (name: string, type: string): ColumnSpec => ({ name, type });
const blockPrefix = [
  c('process_id', 'VARCHAR'),
  c('stream_id', 'VARCHAR'),
  c('block_id', 'VARCHAR'),
  c('insert_time', 'TIMESTAMP_NS'),
  c('exe', 'VARCHAR'),
  c('username', 'VARCHAR'),
  c('computer', 'VARCHAR'),
];
const processSuffix = [c('process_properties', 'JSON'), c('audience', 'VARCHAR')];
const day = 86400;
const hour = 3600;

/** Columns of a block payload line, per signal, as read_json's `columns` argument. */
export const payloadColumns = {
  log: "{time: 'BIGINT', target: 'VARCHAR', level: 'INTEGER', msg: 'VARCHAR', properties: 'JSON', trace_id: 'VARCHAR', span_id: 'VARCHAR'}",
  metrics: "{time: 'BIGINT', target: 'VARCHAR', name: 'VARCHAR', unit: 'VARCHAR', value: 'DOUBLE', properties: 'JSON'}",
  traces:
    "{trace_id: 'VARCHAR', span_id: 'VARCHAR', parent_span_id: 'VARCHAR', name: 'VARCHAR', kind: 'INTEGER', target: 'VARCHAR', " +
    "\"begin\": 'BIGINT', \"end\": 'BIGINT', status_code: 'INTEGER', status_message: 'VARCHAR', properties: 'JSON'}",
} as const;

/** read_json over NDJSON payload files (`files`: a DuckDB list of their paths), with each line's file. */
export const ndjsonPayloads = (tag: keyof typeof payloadColumns, files: string): string =>
  `read_json(${files}, format = 'newline_delimited', columns = ${payloadColumns[tag]}, filename = true)`;

/** The name __orrery_otlp_logs gives the payload at `index` of its file (its rows' `filename`). */
export const protobufPayloadName = (file: string, index: number): string => `${file}#${index}`;

/**
 * The rows of block payload files as an extract reads them (its `{payloads}`), each with its `filename`:
 * NDJSON files through read_json; logs payloads stored as received (protobuf), laid one after the other in
 * one file of these sizes, through the native addon's __orrery_otlp_logs (named by protobufPayloadName),
 * whose properties come as JSON, written as json() writes read_json's JSON column (not parsed again per row).
 */
export function payloadRows(
  tag: keyof typeof payloadColumns,
  ndjson: readonly string[],
  protobufLogs?: { readonly file: string; readonly sizes: readonly number[] },
): string {
  const list = `[${ndjson.map(quoteLiteral).join(', ')}]`;
  if (!protobufLogs) return ndjsonPayloads(tag, list);
  const decoded = `SELECT time, target, level, msg, properties, trace_id, span_id, filename
     FROM __orrery_otlp_logs(${quoteLiteral(protobufLogs.file)}, [${protobufLogs.sizes.join(', ')}]::UBIGINT[])`;
  return ndjson.length === 0
    ? `(${decoded})`
    : `(${decoded} UNION ALL BY NAME SELECT * FROM ${ndjsonPayloads(tag, list)})`;
}

/**
 * The rows of logs payloads stored as received (all of a range's, laid out as for payloadRows) in time order,
 * with their blocks' columns, through the native addon's __orrery_otlp_logs_ordered: a merge of the payloads
 * taken by their first time (`firstTimes`, per payload: at most its records' earliest time; the read fails with
 * orderedFirstTimeRefused on a payload holding an earlier one), which holds at once only the payloads whose times
 * overlap. The blocks' columns come from the variable orderedBlocks sets; those named in `enums` (VARCHAR ones,
 * see orderedEnumFields) come as an ENUM of their values when they have at most 256. With `rowGroupSize` (the
 * COPY's ROW_GROUP_SIZE, a multiple of 2048), up to two DuckDB threads take the merged rows in turns of that many,
 * so that a COPY with PRESERVE_ORDER false encodes and compresses two row groups at once, each in time order.
 */
export function orderedProtobufLogs(
  file: string,
  sizes: readonly number[],
  firstTimes: readonly bigint[],
  enums: readonly string[] = [],
  rowGroupSize?: number,
): string {
  const named =
    (enums.length === 0 ? '' : `, enums = [${enums.map(quoteLiteral).join(', ')}]`) +
    (rowGroupSize === undefined ? '' : `, row_group_size = ${rowGroupSize}`);
  return `__orrery_otlp_logs_ordered(${quoteLiteral(file)}, [${sizes.join(', ')}]::UBIGINT[], [${firstTimes.join(', ')}]::BIGINT[], getvariable('__orrery_blocks')${named})`;
}

/**
 * The block columns the materializer reads from orderedProtobufLogs as ENUMs and writes uncast: a process's, few
 * values per range. DuckDB's Parquet writer writes an ENUM as a VARCHAR column (a dictionary of its values, read
 * back as VARCHAR) from its indexes, without the per-row copy, hash and compare of the strings (bench/materialization
 * /README.md). Not block_id (a range's every block in every row group's dictionary) nor process_properties (JSON).
 */
export const orderedEnumFields: readonly string[] = [
  'process_id',
  'stream_id',
  'exe',
  'username',
  'computer',
  'audience',
];

/** What orderedProtobufLogs fails with, after the payload's name, on a payload holding a time before its first time. */
export const orderedFirstTimeRefused = 'a time before the first time given';

/**
 * What orderedProtobufLogs fails with, after the payload's name, on a gzip payload that does not hold the length its
 * trailer states (what the materializer sized the read's hold by; it inflates no more than that and one byte).
 */
export const orderedGzipLengthRefused = 'a gzip body that does not hold the length its trailer states';

/** Sets the block columns orderedProtobufLogs yields: __blocks' rows as text, by their `payload` index. */
export const orderedBlocks = `SET VARIABLE __orrery_blocks = (SELECT coalesce(flatten(list([process_id, stream_id, block_id,
  CAST(epoch_ns(insert_time) AS VARCHAR), exe, username, computer, CAST(process_properties AS VARCHAR), audience] ORDER BY payload)), [])
  FROM __blocks)`;

const blockColumns = 'b.process_id, b.stream_id, b.block_id, b.insert_time, b.exe, b.username, b.computer';
const payloadExtract = (select: string, order: string): string =>
  `SELECT ${blockColumns}, ${select}, b.process_properties, b.audience
     FROM {payloads} r
     JOIN __blocks b ON r.filename = b.path
    ORDER BY ${order}`;

export const logEntries: ViewSet = {
  name: 'log_entries',
  updateGroup: 2000,
  columns: [
    ...blockPrefix,
    c('time', 'TIMESTAMP_NS'),
    c('target', 'VARCHAR'),
    c('level', 'INTEGER'),
    c('msg', 'VARCHAR'),
    c('properties', 'JSON'),
    c('trace_id', 'VARCHAR'),
    c('span_id', 'VARCHAR'),
    ...processSuffix,
  ],
  minTimeColumn: 'time',
  maxTimeColumn: 'time',
  audienceColumn: 'audience',
  sourceDeltaSeconds: hour,
  mergeDeltaSeconds: hour,
  mergeQuery: 'SELECT * FROM {source}',
  mergeSortOrder: ['time'],
  source: {
    kind: 'payload',
    tag: 'log',
    extract: payloadExtract(
      'make_timestamp_ns(r.time) AS time, r.target, r.level, r.msg, r.properties, r.trace_id, r.span_id',
      'time',
    ),
    ordered: `SELECT process_id, stream_id, block_id, make_timestamp_ns(insert_time) AS insert_time, exe, username, computer,
                     make_timestamp_ns(time) AS time, target, level, msg, properties, trace_id, span_id,
                     process_properties, audience
                FROM {payloads}`,
  },
};

/**
 * Whether a view set is log_entries as Orrery ships it (its columns, their types and its ordered extract): what the
 * native partition writer writes from the ordered read's inputs (writeOrderedLogsPartition, which runs no SQL).
 */
export function shippedLogEntries(view: ViewSet): boolean {
  const { source, columns } = view;
  const shipped = logEntries.columns;
  return (
    source.kind === 'payload' &&
    logEntries.source.kind === 'payload' &&
    source.ordered === logEntries.source.ordered &&
    columns.length === shipped.length &&
    columns.every((c, i) => c.name === shipped[i].name && c.type === shipped[i].type)
  );
}

export const measures: ViewSet = {
  name: 'measures',
  updateGroup: 2000,
  columns: [
    ...blockPrefix,
    c('time', 'TIMESTAMP_NS'),
    c('target', 'VARCHAR'),
    c('name', 'VARCHAR'),
    c('unit', 'VARCHAR'),
    c('value', 'DOUBLE'),
    c('properties', 'JSON'),
    ...processSuffix,
  ],
  minTimeColumn: 'time',
  maxTimeColumn: 'time',
  audienceColumn: 'audience',
  sourceDeltaSeconds: hour,
  mergeDeltaSeconds: hour,
  mergeQuery: 'SELECT * FROM {source}',
  mergeSortOrder: ['time'],
  source: {
    kind: 'payload',
    tag: 'metrics',
    extract: payloadExtract(
      'make_timestamp_ns(r.time) AS time, r.target, r.name, r.unit, r.value, r.properties',
      'time',
    ),
  },
  // A point's value is in its metric's unit: values of two names (bytes and seconds) do not add up or compare.
  series: { key: ['name'], values: ['value'] },
};

export const spans: ViewSet = {
  name: 'spans',
  updateGroup: 2000,
  columns: [
    ...blockPrefix,
    c('trace_id', 'VARCHAR'),
    c('span_id', 'VARCHAR'),
    c('parent_span_id', 'VARCHAR'),
    c('name', 'VARCHAR'),
    c('kind', 'INTEGER'),
    c('target', 'VARCHAR'),
    c('begin', 'TIMESTAMP_NS'),
    c('end', 'TIMESTAMP_NS'),
    c('duration', 'BIGINT'),
    c('status_code', 'INTEGER'),
    c('status_message', 'VARCHAR'),
    c('properties', 'JSON'),
    ...processSuffix,
  ],
  minTimeColumn: 'begin',
  maxTimeColumn: 'end',
  audienceColumn: 'audience',
  sourceDeltaSeconds: hour,
  mergeDeltaSeconds: hour,
  mergeQuery: 'SELECT * FROM {source}',
  mergeSortOrder: ['begin'],
  source: {
    kind: 'payload',
    tag: 'traces',
    extract: payloadExtract(
      'r.trace_id, r.span_id, r.parent_span_id, r.name, r.kind, r.target, make_timestamp_ns(r.begin) AS begin, ' +
        'make_timestamp_ns(r."end") AS "end", r."end" - r.begin AS duration, r.status_code, r.status_message, r.properties',
      'begin',
    ),
  },
};

export const blocks: ViewSet = {
  name: 'blocks',
  updateGroup: 1000,
  columns: [
    c('block_id', 'VARCHAR'),
    c('stream_id', 'VARCHAR'),
    c('process_id', 'VARCHAR'),
    c('begin_time', 'TIMESTAMP_NS'),
    c('end_time', 'TIMESTAMP_NS'),
    c('nb_objects', 'INTEGER'),
    c('payload_size', 'BIGINT'),
    c('insert_time', 'TIMESTAMP_NS'),
    c('tags', 'VARCHAR[]'),
    c('format', 'VARCHAR'),
    c('exe', 'VARCHAR'),
    c('username', 'VARCHAR'),
    c('computer', 'VARCHAR'),
    c('process_properties', 'JSON'),
    c('audience', 'VARCHAR'),
  ],
  minTimeColumn: 'begin_time',
  maxTimeColumn: 'end_time',
  audienceColumn: 'audience',
  sourceDeltaSeconds: hour,
  mergeDeltaSeconds: day,
  mergeQuery: 'SELECT * FROM {source}',
  source: { kind: 'metadata', table: 'blocks' },
};

/** A set copied from a Postgres table by insert time, one row per entity. */
const metadataTable = (table: 'processes' | 'streams', columns: ColumnSpec[]): ViewSet => ({
  name: table,
  updateGroup: 2000,
  columns,
  minTimeColumn: 'insert_time',
  maxTimeColumn: 'insert_time',
  audienceColumn: 'audience',
  sourceDeltaSeconds: day,
  mergeDeltaSeconds: day,
  mergeQuery: 'SELECT * FROM {source}',
  source: { kind: 'metadata', table },
});

export const processes = metadataTable('processes', [
  c('process_id', 'VARCHAR'),
  c('exe', 'VARCHAR'),
  c('username', 'VARCHAR'),
  c('realname', 'VARCHAR'),
  c('computer', 'VARCHAR'),
  c('distro', 'VARCHAR'),
  c('cpu_brand', 'VARCHAR'),
  c('start_time', 'TIMESTAMP_NS'),
  c('insert_time', 'TIMESTAMP_NS'),
  c('parent_process_id', 'VARCHAR'),
  c('properties', 'JSON'),
  c('audience', 'VARCHAR'),
]);

export const streams = metadataTable('streams', [
  c('stream_id', 'VARCHAR'),
  c('process_id', 'VARCHAR'),
  c('tags', 'VARCHAR[]'),
  c('properties', 'JSON'),
  c('format', 'VARCHAR'),
  c('insert_time', 'TIMESTAMP_NS'),
  c('audience', 'VARCHAR'),
]);

/** Every built-in view set, in materialization order (log_stats is a stored definition, seeded by a migration). */
export const builtinViewSets: readonly ViewSet[] = [blocks, processes, streams, logEntries, measures, spans];
