import type { ColumnSpec } from './view-set.js';
import { emptyRelation, quoteLiteral } from './view-session.js';

// The view sets micromegas reads one instance at a time (`view_instance(name, id)`), made from
// what Orrery ingests. micromegas records thread spans per CPU stream and async span events per
// process in its own transit format; Orrery's spans are OTLP spans, each stored once in `spans`.
// `thread_spans` shows a traces stream's spans as micromegas's call-tree rows, `async_events` a
// process's spans as begin and end events; `net_spans` (micromegas's network replication
// streams, which OTLP has no counterpart of) keeps its schema and is always empty.

const c = (name: string, type: string): ColumnSpec => ({ name, type });

const spanColumns = [
  c('id', 'BIGINT'),
  c('parent', 'BIGINT'),
  c('depth', 'UINTEGER'),
  c('hash', 'UINTEGER'),
  c('begin', 'TIMESTAMP_NS'),
  c('end', 'TIMESTAMP_NS'),
  c('duration', 'BIGINT'),
  c('name', 'VARCHAR'),
  c('target', 'VARCHAR'),
  c('filename', 'VARCHAR'),
  c('line', 'UINTEGER'),
];

/** A view set that exists per instance only, derived from the `spans` view set. */
export interface InstanceView {
  readonly name: string;
  /** What the instance id names. */
  readonly instance: 'stream_id' | 'process_id';
  readonly columns: readonly ColumnSpec[];
  /** The rows of one instance, reading the caller's (audience-scoped) `spans`. */
  relation(instanceId: string): string;
}

/** An OTLP id (16 hex digits) as the signed 64-bit integer micromegas keys spans by; 0 for none. */
const idOf = (column: string): string =>
  `coalesce(CAST(CASE WHEN TRY_CAST('0x' || ${column} AS UBIGINT) >= 9223372036854775808
     THEN TRY_CAST('0x' || ${column} AS UBIGINT)::HUGEINT - 18446744073709551616
     ELSE TRY_CAST('0x' || ${column} AS UBIGINT) END AS BIGINT), 0)`;

const attribute = (...keys: string[]): string =>
  `coalesce(${keys.map((k) => `json_extract_string(properties, '$."${k}"')`).join(', ')})`;

/** Deeper chains are cut here, so a hostile parent cycle ends. */
const maxDepth = 255;

/**
 * The spans that `filter` selects, as micromegas's span rows plus the stream and block they
 * came from. Depth counts ancestors within the selection (a span whose parent is not in it is
 * a root); hash identifies the span's static description (name, target, file, line), as
 * micromegas's does, though not with the same values. File and line come from OpenTelemetry's
 * code attributes.
 */
function spanRows(filter: string): string {
  return `WITH RECURSIVE __s AS (
      SELECT stream_id, block_id, trace_id, span_id, parent_span_id, ${idOf('span_id')} AS id, ${idOf('parent_span_id')} AS parent,
             "begin", "end", duration, coalesce(name, '') AS name, coalesce(target, '') AS target,
             coalesce(${attribute('code.filepath', 'code.file.path')}, '') AS filename,
             coalesce(TRY_CAST(${attribute('code.lineno', 'code.line.number')} AS UINTEGER), 0) AS line
        FROM spans WHERE ${filter}),
    __tree(trace_id, span_id, depth) AS (
      SELECT trace_id, span_id, 0 FROM __s r
       WHERE NOT EXISTS (SELECT 1 FROM __s p WHERE p.trace_id = r.trace_id AND p.span_id = r.parent_span_id)
      UNION
      SELECT child.trace_id, child.span_id, t.depth + 1 FROM __s child
        JOIN __tree t ON child.trace_id = t.trace_id AND child.parent_span_id = t.span_id
       WHERE t.depth < ${maxDepth})
    SELECT __s.*, CAST(coalesce(d.depth, 0) AS UINTEGER) AS depth,
           CAST(hash(__s.name, __s.target, __s.filename, __s.line) % 4294967296 AS UINTEGER) AS hash
      FROM __s LEFT JOIN (SELECT trace_id, span_id, min(depth) AS depth FROM __tree GROUP BY ALL) d
        ON d.trace_id = __s.trace_id AND d.span_id = __s.span_id`;
}

export const threadSpans: InstanceView = {
  name: 'thread_spans',
  instance: 'stream_id',
  columns: spanColumns,
  relation: (streamId) =>
    `SELECT id, parent, depth, hash, "begin", "end", duration, name, target, filename, line
       FROM (${spanRows(`stream_id = ${quoteLiteral(streamId)}`)}) ORDER BY "begin", id`,
};

const asyncEventColumns = [
  c('stream_id', 'VARCHAR'),
  c('block_id', 'VARCHAR'),
  c('time', 'TIMESTAMP_NS'),
  c('event_type', 'VARCHAR'),
  c('span_id', 'BIGINT'),
  c('parent_span_id', 'BIGINT'),
  c('depth', 'UINTEGER'),
  c('hash', 'UINTEGER'),
  c('name', 'VARCHAR'),
  c('filename', 'VARCHAR'),
  c('target', 'VARCHAR'),
  c('line', 'UINTEGER'),
];

export const asyncEvents: InstanceView = {
  name: 'async_events',
  instance: 'process_id',
  columns: asyncEventColumns,
  relation: (processId) =>
    `SELECT stream_id, block_id, CASE e.event_type WHEN 'begin' THEN "begin" ELSE "end" END AS time, e.event_type,
            id AS span_id, parent AS parent_span_id, depth, hash, name, filename, target, line
       FROM (${spanRows(`process_id = ${quoteLiteral(processId)}`)}) CROSS JOIN (VALUES ('begin'), ('end')) e(event_type)
      ORDER BY time, e.event_type = 'begin', span_id`,
};

export const netSpans: InstanceView = {
  name: 'net_spans',
  instance: 'process_id',
  columns: [
    c('process_id', 'VARCHAR'),
    c('stream_id', 'VARCHAR'),
    c('span_id', 'BIGINT'),
    c('parent_span_id', 'BIGINT'),
    c('depth', 'UINTEGER'),
    c('kind', 'VARCHAR'),
    c('name', 'VARCHAR'),
    c('connection_name', 'VARCHAR'),
    c('is_outgoing', 'BOOLEAN'),
    c('begin_bits', 'BIGINT'),
    c('end_bits', 'BIGINT'),
    c('bit_size', 'BIGINT'),
    c('begin_time', 'TIMESTAMP_NS'),
    c('end_time', 'TIMESTAMP_NS'),
  ],
  relation: () => emptyRelation(netSpans.columns),
};

/** process_spans's columns: the stream and its display name, then the span row. */
export const processSpanColumns: readonly ColumnSpec[] = [
  c('stream_id', 'VARCHAR'),
  c('thread_name', 'VARCHAR'),
  ...spanColumns,
];

/**
 * process_spans(process_id, kind) as micromegas shapes it. Orrery has one kind of span, shown as
 * thread spans (per traces stream, named after the stream's signal) or as async spans (stream ''
 * and thread name 'async'); 'both' answers each span once, in its thread form.
 */
export function processSpansRelation(processId: string, kind: 'thread' | 'async' | 'both'): string {
  const rows = spanRows(`process_id = ${quoteLiteral(processId)}`);
  const stream = kind === 'async' ? `'' AS stream_id, 'async' AS thread_name` : `stream_id, 'traces' AS thread_name`;
  return `SELECT ${stream}, id, parent, depth, hash, "begin", "end", duration, name, target, filename, line
            FROM (${rows}) ORDER BY ${kind === 'async' ? '' : 'stream_id, '}"begin", id`;
}

export const instanceViews: readonly InstanceView[] = [threadSpans, asyncEvents, netSpans];

export const instanceView = (name: string): InstanceView | undefined => instanceViews.find((v) => v.name === name);
