// Issue 11: micromegas's instance-only view sets (thread_spans, async_events, net_spans) and
// process_spans, made from OTLP spans, and scoped to the caller's audiences like every view set.
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import protobuf from 'protobufjs';
import { postOtlp, tracesRequest, type SpanSpec } from '../support/otlp.js';
import { adminKey, readerKey, useOrrery } from '../support/orrery-process.js';
import type { TestFlightClient } from '../support/flight-client.js';
import { plainRows, refusal } from './lakehouse-fixtures.js';

const teamKey = { name: 'team_x', key: 'team-x-key-0123' };
const keys = JSON.stringify([adminKey, { ...readerKey, audiences: ['public'] }, { ...teamKey, audiences: ['team_x'] }]);
const iso = (seconds: number): string => new Date(seconds * 1000).toISOString();
const t0 = 1704164645000000000n;

const tree: SpanSpec[] = [
  { id: 'ffffffffffffffff', name: 'request', begin: t0, end: t0 + 1000n },
  { id: '0000000000000002', parent: 'ffffffffffffffff', name: 'query', begin: t0 + 100n, end: t0 + 400n },
  {
    id: '0000000000000003',
    parent: '0000000000000002',
    name: 'fetch',
    begin: t0 + 200n,
    end: t0 + 300n,
    file: 'src/db.rs',
    line: 42,
  },
];

/** The fields of one protobuf message: number -> values (varints as bigint, length-delimited as bytes). */
function fields(bytes: Uint8Array): Map<number, Array<bigint | Uint8Array>> {
  const reader = protobuf.Reader.create(bytes);
  const out = new Map<number, Array<bigint | Uint8Array>>();
  while (reader.pos < reader.len) {
    const tag = reader.uint32();
    const long = (tag & 7) === 0 ? reader.uint64() : null;
    const value =
      long === null
        ? reader.bytes()
        : typeof long === 'number'
          ? BigInt(long)
          : (BigInt(long.high >>> 0) << 32n) | BigInt(long.low >>> 0);
    out.set(tag >>> 3, [...(out.get(tag >>> 3) ?? []), value]);
  }
  return out;
}
const one = (m: Map<number, Array<bigint | Uint8Array>>, field: number): bigint | Uint8Array | undefined =>
  m.get(field)?.[0];
const text = (value: bigint | Uint8Array | undefined): string => new TextDecoder().decode(value as Uint8Array);

/** A Perfetto trace's packets, each as a line: tracks with their names, slices with their times and track. */
function describeTrace(trace: Uint8Array): string[] {
  const tracks = new Map<bigint, string>();
  return (fields(trace).get(1) ?? []).map((bytes) => {
    const packet = fields(bytes as Uint8Array);
    assert.equal(one(packet, 10), 1n, 'trusted_packet_sequence_id');
    const descriptor = one(packet, 60);
    if (descriptor) {
      const d = fields(descriptor as Uint8Array);
      const [process, thread] = [one(d, 3), one(d, 4)].map((m) => (m ? fields(m as Uint8Array) : undefined));
      const name = process
        ? `process ${text(one(process, 6))}`
        : thread
          ? `thread ${text(one(thread, 5))}`
          : text(one(d, 2));
      tracks.set(one(d, 1) as bigint, name);
      const parent = one(d, 5);
      return `track ${name}${parent === undefined ? '' : ` in ${tracks.get(parent as bigint)}`}`;
    }
    const event = fields(one(packet, 11) as Uint8Array);
    const kind = one(event, 9) === 1n ? `begin ${text(one(event, 23))} (${text(one(event, 22))})` : 'end';
    return `${kind} ${(one(packet, 8) as bigint) - t0} on ${tracks.get(one(event, 11) as bigint)}`;
  });
}

describe('instance view sets from OTLP spans (#11)', () => {
  const fixture = useOrrery({ MICROMEGAS_API_KEYS: keys }, 'serve');
  let admin: TestFlightClient;
  let reader: TestFlightClient;
  let process: string;
  let stream: string;
  let secretProcess: string;
  let secretStream: string;

  before(async () => {
    ({ admin, reader } = fixture);
    const port = fixture.orrery.httpPort;
    assert.equal((await postOtlp(port, 'traces', adminKey.key, tracesRequest('shop', tree))).status, 200);
    assert.equal((await postOtlp(port, 'traces', teamKey.key, tracesRequest('secret', tree))).status, 200);
    const begin = Math.floor(Date.now() / 60_000) * 60 - 60;
    for (const view of ['processes', 'streams', 'spans']) {
      await admin.query(`SELECT * FROM materialize_partitions('${view}', '${iso(begin)}', '${iso(begin + 180)}', 180)`);
    }
    const ids = async (audience: string): Promise<[string, string]> => {
      const [row] = await plainRows(admin, `SELECT process_id, stream_id FROM streams WHERE audience = '${audience}'`);
      return [String(row.process_id), String(row.stream_id)];
    };
    [process, stream] = await ids('public');
    [secretProcess, secretStream] = await ids('team_x');
  });

  it("thread_spans: a traces stream's spans as micromegas's call-tree rows", async () => {
    const rows = await plainRows(
      reader,
      `SELECT id, parent, depth, epoch_ns("begin") - ${t0} AS b, epoch_ns("end") - ${t0} AS e, duration, name, target,
              filename, line, arrow_typeof(depth) AS depth_type
         FROM view_instance('thread_spans', '${stream}')`,
    );
    assert.deepEqual(
      rows.map((r) => Object.values(r)),
      [
        [-1, 0, 0, 0, 1000, 1000, 'request', 'checkout', '', 0, 'UInt32'],
        [2, -1, 1, 100, 400, 300, 'query', 'checkout', '', 0, 'UInt32'],
        [3, 2, 2, 200, 300, 100, 'fetch', 'checkout', 'src/db.rs', 42, 'UInt32'],
      ],
    );
  });

  it('async_events: begin and end events of each span of a process, in time order', async () => {
    const rows = await plainRows(
      reader,
      `SELECT event_type, name, span_id, parent_span_id, depth, stream_id = '${stream}' AS same_stream
         FROM view_instance('async_events', '${process}')`,
    );
    assert.deepEqual(
      rows.map((r) => Object.values(r).map(String).join(' ')),
      [
        'begin request -1 0 0 true',
        'begin query 2 -1 1 true',
        'begin fetch 3 2 2 true',
        'end fetch 3 2 2 true',
        'end query 2 -1 1 true',
        'end request -1 0 0 true',
      ],
    );
  });

  it("process_spans: micromegas's columns; each span once", async () => {
    for (const kind of ['thread', 'both', 'async']) {
      const rows = await plainRows(
        reader,
        `SELECT stream_id, thread_name, name, depth FROM process_spans('${process}', '${kind}')`,
      );
      const [streamId, thread] = kind === 'async' ? ['', 'async'] : [stream, 'traces'];
      assert.deepEqual(
        rows.map((r) => [r.stream_id, r.thread_name, r.name, r.depth]),
        [
          [streamId, thread, 'request', 0],
          [streamId, thread, 'query', 1],
          [streamId, thread, 'fetch', 2],
        ],
        kind,
      );
    }
  });

  it('perfetto_trace_chunks: a Perfetto trace of the process, in numbered chunks', async () => {
    const chunks = async (c: TestFlightClient, id: string, kind: string) => {
      const table = await c.query(
        `SELECT chunk_id, chunk_data FROM perfetto_trace_chunks('${id}', '${kind}', TIMESTAMP '2024-01-02T00:00:00+00:00', TIMESTAMP '2024-01-03T00:00:00Z')`,
      );
      const ids = [...table.getChild('chunk_id')!].map(Number);
      assert.deepEqual(ids, [...ids.keys()]);
      return Buffer.concat([...table.getChild('chunk_data')!].map((b) => Buffer.from(b as Uint8Array)));
    };
    const spansOn = (track: string): string[] => [
      `begin request (checkout) 0 on ${track}`,
      `end 1000 on ${track}`,
      `begin query (checkout) 100 on ${track}`,
      `end 400 on ${track}`,
      `begin fetch (checkout) 200 on ${track}`,
      `end 300 on ${track}`,
    ];
    for (const kind of ['thread', 'both']) {
      assert.deepEqual(describeTrace(await chunks(reader, process, kind)), [
        'track process shop',
        'track thread traces in process shop',
        ...spansOn('thread traces'),
      ]);
    }
    assert.deepEqual(describeTrace(await chunks(reader, process, 'async')), [
      'track process shop',
      'track Async Operations in process shop',
      ...spansOn('Async Operations'),
    ]);
    assert.equal((await chunks(reader, secretProcess, 'both')).length, 0);
    assert.ok((await chunks(admin, secretProcess, 'both')).length > 0);
  });

  it('perfetto_trace_chunks under query_range headers in event time, as micromegas.perfetto sends them', async () => {
    // The process was inserted now, long after its spans' event times: the trace still has its track.
    const range = { query_range_begin: '2024-01-02T03:00:00Z', query_range_end: '2024-01-02T04:00:00Z' };
    const table = await reader.query(
      `SELECT chunk_data FROM perfetto_trace_chunks('${process}', 'thread', TIMESTAMP '2024-01-02T03:00:00+00:00', TIMESTAMP '2024-01-02T04:00:00+00:00')`,
      range,
    );
    const trace = Buffer.concat([...table.getChild('chunk_data')!].map((b) => Buffer.from(b as Uint8Array)));
    assert.deepEqual(describeTrace(trace).slice(0, 3), [
      'track process shop',
      'track thread traces in process shop',
      'begin request (checkout) 0 on thread traces',
    ]);
  });

  it('net_spans keeps its schema and is empty: OTLP has no network replication streams', async () => {
    const table = await admin.query(`SELECT * FROM view_instance('net_spans', '${process}')`);
    assert.equal(table.numRows, 0);
    assert.deepEqual(
      table.schema.fields.map((f) => f.name),
      ['process_id', 'stream_id', 'span_id', 'parent_span_id', 'depth', 'kind', 'name', 'connection_name'].concat([
        'is_outgoing',
        'begin_bits',
        'end_bits',
        'bit_size',
        'begin_time',
        'end_time',
      ]),
    );
  });

  it("another audience's stream or process looks like one that does not exist", async () => {
    const team = { thread: `view_instance('thread_spans', '${secretStream}')` };
    const counted = async (c: TestFlightClient, from: string): Promise<number> =>
      Number((await plainRows(c, `SELECT count(*) AS n FROM ${from}`))[0].n);
    assert.equal(await counted(admin, team.thread), 3);
    assert.equal(await counted(reader, team.thread), 0);
    assert.equal(await counted(reader, `view_instance('async_events', '${secretProcess}')`), 0);
    assert.equal(await counted(reader, `process_spans('${secretProcess}', 'both')`), 0);
  });

  it('the instance-only sets have no global instance', async () => {
    assert.deepEqual(await refusal(reader.query("SELECT * FROM view_instance('thread_spans', 'global')")), {
      code: 3,
      details: 'view_instance: thread_spans has no global instance; name a stream_id',
    });
  });
});
