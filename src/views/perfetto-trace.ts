import { quoteLiteral } from './view-session.js';

// micromegas's perfetto_trace_chunks(process_id, span_types, begin, end): a Perfetto trace
// (protobuf `Trace` messages) of a process's spans, in chunks whose concatenation is the trace
// file. Written in SQL so the rows stream out of DuckDB like any other: the macros below encode
// protobuf as hex text (varints, length-delimited fields), unhexed once per chunk.
//
// The packets: a process track (the process's exe), then one thread track per traces stream and
// a slice begin and end on it per span ('thread' and 'both': Orrery has one kind of span, shown
// once), or one "Async Operations" track holding every span ('async'). Track uuids and pids are
// DuckDB hashes of the ids (micromegas uses xxh64), names and categories are not interned.

// DuckDB expands a macro's arguments wherever its body names them, so a body naming one twice
// doubles its argument's expression at each level of nesting (a slice packet bound in 13 s). Each
// macro below therefore binds its argument once, as the parameter of a one-element list_transform.

/** Byte k of a base-128 varint of `__pb_v` as two hex digits; '' past its last byte (byte 0 always is). */
function varintByte(k: number): string {
  const more = k < 9 ? `CASE WHEN __pb_v >= (CAST(1 AS UBIGINT) << ${7 * (k + 1)}) THEN 128 ELSE 0 END` : '0';
  const byte = `lpad(hex(((__pb_v >> ${7 * k}) & 127) | ${more}), 2, '0')`;
  return k === 0 ? byte : `CASE WHEN __pb_v >= (CAST(1 AS UBIGINT) << ${7 * k}) THEN ${byte} ELSE '' END`;
}

export const perfettoMacros: readonly string[] = [
  // Base-128 varint of a non-negative integer, as hex (ten bytes at most for 64 bits).
  `CREATE OR REPLACE MACRO __orrery_pb_varint(n) AS list_transform([CAST(n AS UBIGINT)], __pb_v -> ${Array.from({ length: 10 }, (_, k) => varintByte(k)).join(' || ')})[1]`,
  'CREATE OR REPLACE MACRO __orrery_pb_uint(field, n) AS __orrery_pb_varint(field * 8) || __orrery_pb_varint(n)',
  `CREATE OR REPLACE MACRO __orrery_pb_bytes(field, payload) AS
     list_transform([payload], __pb_p -> __orrery_pb_varint(field * 8 + 2) || __orrery_pb_varint(length(__pb_p) // 2) || __pb_p)[1]`,
  'CREATE OR REPLACE MACRO __orrery_pb_string(field, text) AS __orrery_pb_bytes(field, hex(CAST(text AS VARCHAR)))',
  // Trace.packet (1): a TracePacket with trusted_packet_sequence_id (10) = 1.
  'CREATE OR REPLACE MACRO __orrery_pb_packet(body) AS __orrery_pb_bytes(1, __orrery_pb_uint(10, 1) || body)',
  // TracePacket.track_descriptor (60): uuid (1), parent_uuid (5), then the rest.
  `CREATE OR REPLACE MACRO __orrery_pb_track(uuid, parent, rest) AS __orrery_pb_packet(__orrery_pb_bytes(60,
     __orrery_pb_uint(1, uuid) || CASE WHEN parent IS NULL THEN '' ELSE __orrery_pb_uint(5, parent) END || rest))`,
  // TracePacket.timestamp (8) and track_event (11): type (9, 1 = slice begin, 2 = slice end), track_uuid (11),
  // categories (22), name (23).
  `CREATE OR REPLACE MACRO __orrery_pb_slice(ts, kind, track, name, category) AS __orrery_pb_packet(
     __orrery_pb_uint(8, ts) || __orrery_pb_bytes(11, __orrery_pb_uint(9, kind) || __orrery_pb_uint(11, track)
       || CASE WHEN kind = 1 THEN __orrery_pb_string(22, category) || __orrery_pb_string(23, name) ELSE '' END))`,
];

/** Each span's rank, so that its begin packet is followed by its end. */
const idOrder = 'row_number() OVER (ORDER BY "begin", span_id) AS id_order';

/** Packets per chunk. */
const chunkPackets = 64;

/**
 * The body of the perfetto_trace_chunks macro for one process, reading the caller's spans (the
 * process's exe too: its spans carry it, and `processes` is bounded by insert time where the
 * query_range headers say event time); `__begin` and `__end` are the macro's time parameters.
 * No rows for a process the caller cannot read.
 */
export function perfettoTraceRelation(processId: string, kind: 'thread' | 'async' | 'both'): string {
  const process = quoteLiteral(processId);
  const thread = kind !== 'async';
  const track = thread ? 'hash(stream_id)' : 'a.uuid';
  return `WITH __process AS (
      SELECT hash(${process}) AS uuid, CAST(hash(${process}) & 2147483647 AS BIGINT) AS pid, any_value(exe) AS exe
        FROM spans WHERE process_id = ${process} HAVING count(*) > 0),
    __async AS (SELECT hash('async_track', ${process}) AS uuid),
    __spans AS (
      SELECT stream_id, epoch_ns("begin") AS b, epoch_ns("end") AS e, coalesce(name, '') AS name, coalesce(target, '') AS target,
             ${idOrder}
        FROM spans WHERE process_id = ${process} AND "begin" <= __end AND "end" >= __begin AND epoch_ns("begin") >= 0
         AND EXISTS (SELECT 1 FROM __process)),
    __packets AS (
      SELECT 0 AS section, '' AS stream, 0 AS b, 0 AS step, __orrery_pb_track(uuid, NULL,
               __orrery_pb_bytes(3, __orrery_pb_uint(1, pid) || __orrery_pb_string(6, coalesce(exe, '')))) AS pb
        FROM __process
      UNION ALL
      ${
        thread
          ? `SELECT 1, stream_id, 0, 0, __orrery_pb_track(hash(stream_id), p.uuid, __orrery_pb_bytes(4,
                 __orrery_pb_uint(1, p.pid) || __orrery_pb_uint(2, hash(stream_id) & 2147483647) || __orrery_pb_string(5, 'traces')))
               FROM (SELECT DISTINCT stream_id FROM __spans), __process p`
          : `SELECT 1, '', 0, 0, __orrery_pb_track(a.uuid, p.uuid, __orrery_pb_string(2, 'Async Operations'))
               FROM __async a, __process p WHERE EXISTS (SELECT 1 FROM __spans)`
      }
      UNION ALL
      SELECT 2, ${thread ? 'stream_id' : "''"}, b, 2 * id_order, __orrery_pb_slice(b, 1, ${track}, name, target)
        FROM __spans${thread ? '' : ', __async a'}
      UNION ALL
      SELECT 2, ${thread ? 'stream_id' : "''"}, b, 2 * id_order + 1, __orrery_pb_slice(e, 2, ${track}, name, target)
        FROM __spans${thread ? '' : ', __async a'}),
    __numbered AS (SELECT row_number() OVER (ORDER BY section, stream, b, step) - 1 AS seq, pb FROM __packets)
    SELECT CAST(seq // ${chunkPackets} AS INTEGER) AS chunk_id, unhex(string_agg(pb, '' ORDER BY seq)) AS chunk_data
      FROM __numbered GROUP BY 1 ORDER BY 1`;
}
