// Lakehouse functions whose arguments come from earlier answers (a process id, a partition file), which
// the case files of test/sql cannot express; everything else about them is in test/sql/procedures.test.
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { exportRequestTypes } from '../../src/ingestion/otlp/otlp-proto.js';
import { nanosToIso, payloadPlace } from '../../src/lakehouse/index.js';
import { payloadColumns, type PayloadRow } from '../support/payloads.js';
import { logsRequest, postOtlp } from '../support/otlp.js';
import { adminKey, readerKey, useOrrery } from '../support/orrery-process.js';
import { TestFlightClient } from '../support/flight-client.js';
import { refusal } from './lakehouse-fixtures.js';

const teamKey = { name: 'team_x', key: 'team-x-key-0123' };
const keys = JSON.stringify([adminKey, { ...readerKey, audiences: ['public'] }, { ...teamKey, audiences: ['team_x'] }]);

const iso = (seconds: number): string => new Date(seconds * 1000).toISOString();
const messages = async (c: TestFlightClient, sql: string): Promise<string[]> =>
  [...(await c.query(sql)).getChild('msg')!] as string[];
const count = async (c: TestFlightClient, sql: string): Promise<number> =>
  Number((await c.query(sql)).getChildAt(0)!.get(0));

describe('admin functions', () => {
  const fixture = useOrrery({ MICROMEGAS_API_KEYS: keys, ORRERY_RETIRE_DELAY_SECONDS: '0' }, 'serve');
  let admin: TestFlightClient;
  let reader: TestFlightClient;

  before(async () => {
    ({ admin, reader } = fixture);
    const port = fixture.orrery.httpPort;
    const logs = Array.from({ length: 5 }, (_, i) => ({
      time: 1704164645000000000n + BigInt(i) * 1_000_000n,
      severity: 9,
      body: `message ${i}`,
    }));
    assert.equal(
      (await postOtlp(port, 'logs', adminKey.key, logsRequest({ 'service.name': 'billing' }, logs.slice(0, 2)))).status,
      200,
    );
    assert.equal(
      (await postOtlp(port, 'logs', teamKey.key, logsRequest({ 'service.name': 'secret' }, logs))).status,
      200,
    );
    const begin = Math.floor(Date.now() / 60_000) * 60 - 60;
    for (const view of ['processes', 'log_entries', 'log_stats']) {
      await messages(
        admin,
        `SELECT * FROM materialize_partitions('${view}', '${iso(begin)}', '${iso(begin + 180)}', 180)`,
      );
    }
  });

  it('a foreign process looks like no process at all to view_instance and process_spans', async () => {
    const secret = String(
      (await admin.query("SELECT process_id FROM processes WHERE audience = 'team_x'")).getChildAt(0)!.get(0),
    );
    assert.equal(await count(admin, `SELECT count(*) FROM view_instance('log_entries', '${secret}')`), 5);
    assert.equal(await count(reader, `SELECT count(*) FROM view_instance('log_entries', '${secret}')`), 0);
    assert.equal(await count(reader, `SELECT count(*) FROM process_spans('${secret}', 'both')`), 0);
  });

  it('retire_partition_by_file retires exactly the partition of that file', async () => {
    const file = String(
      (await admin.query("SELECT file_path FROM list_partitions() WHERE view_set_name = 'log_stats'"))
        .getChildAt(0)!
        .get(0),
    );
    assert.equal(await count(admin, 'SELECT sum(count) FROM log_stats'), 7);
    assert.deepEqual(await messages(admin, `SELECT * FROM retire_partition_by_file('${file}')`), [
      `SUCCESS: retired ${file}`,
    ]);
    assert.equal(await count(admin, "SELECT count(*) FROM list_partitions() WHERE view_set_name = 'log_stats'"), 0);
    assert.equal(await count(admin, 'SELECT count(*) FROM log_stats'), 0);
    assert.equal(await count(admin, 'SELECT count(*) FROM log_entries'), 7);
  });

  it('a partition another process registers across the range while materialize_partitions works: the call looks again and answers', async () => {
    const db = fixture.orrery.metadata;
    const [{ file_schema_hash: hash }] = (
      await db.query<{ file_schema_hash: Buffer }>(
        "SELECT file_schema_hash FROM lakehouse_partitions WHERE view_set_name = 'log_entries' LIMIT 1",
      )
    ).rows;
    const begin = Math.floor(Date.now() / 60_000) * 60 + 600; // nothing there yet
    // Hold the lock commits take, so the call reads no overlap, then waits to commit; meanwhile another
    // process's partition lands across its range.
    let call: ReturnType<TestFlightClient['query']> | undefined;
    await db.transaction(async (tx) => {
      await tx.query("SELECT pg_advisory_xact_lock(hashtext('partition:log_entries:global'))");
      call = admin.query(
        `SELECT * FROM materialize_partitions('log_entries', '${iso(begin)}', '${iso(begin + 60)}', 60)`,
      );
      call.catch(() => undefined);
      for (let waited = 0; ; waited += 50) {
        const { rows } = await db.query("SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted");
        if (rows.length > 0) break;
        assert.ok(waited < 30_000, 'materialize_partitions never waited for the lock');
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      await tx.query(
        `INSERT INTO lakehouse_partitions (view_set_name, view_instance_id, begin_insert_time, end_insert_time, updated,
           file_schema_hash, source_data_hash, num_rows)
         VALUES ('log_entries', 'global', $1, $2, now(), $3, '\\x0000000000000000', 0)`,
        [iso(begin + 30), iso(begin + 90), hash],
      );
    });
    // The commit met the other partition (Postgres's exclusion constraint); nothing was changed, and the
    // range, looked at again, is covered by it: no source rows there, none counted.
    assert.deepEqual(
      [...(await call!).getChild('msg')!],
      [
        `log_entries [${nanosToIso(BigInt(begin) * 1_000_000_000n)}, ${nanosToIso(BigInt(begin + 60) * 1_000_000_000n)}): up to date`,
      ],
    );
    await db.query("DELETE FROM lakehouse_partitions WHERE view_set_name = 'log_entries' AND begin_insert_time = $1", [
      iso(begin + 30),
    ]);
  });
  it("parse_block answers a block's records, in order, with micromegas's type names, to keys of its audience only", async () => {
    const port = fixture.orrery.httpPort;
    const t = 1704164645000000000n;
    // A logs request in protobuf (stored as received), metrics of two kinds and a span (stored as NDJSON lines).
    const logs = exportRequestTypes.logs;
    const protobuf = logs
      .encode(
        logs.fromObject(
          JSON.parse(
            logsRequest({ 'service.name': 'proto' }, [
              { time: t, severity: 17, body: 'first' },
              { time: t + 1n, severity: 9, body: 'second' },
            ]),
          ) as object,
        ),
      )
      .finish();
    const posted = await fetch(`http://127.0.0.1:${port}/v1/logs`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-protobuf', authorization: `Bearer ${teamKey.key}` },
      body: Buffer.from(protobuf),
    });
    assert.equal(posted.status, 200);
    const resource = { attributes: [{ key: 'service.name', value: { stringValue: 'shapes' } }] };
    const point = { timeUnixNano: String(t), attributes: [{ key: 'k', value: { stringValue: 'v' } }] };
    const metrics = {
      resourceMetrics: [
        {
          resource,
          scopeMetrics: [
            {
              scope: { name: 'm' },
              metrics: [
                { name: 'temperature', unit: 'C', gauge: { dataPoints: [{ ...point, asDouble: 21.5 }] } },
                {
                  name: 'latency',
                  unit: 'ms',
                  histogram: {
                    aggregationTemporality: 2,
                    dataPoints: [{ ...point, count: '2', sum: 3, bucketCounts: ['1', '1'], explicitBounds: [1] }],
                  },
                },
              ],
            },
          ],
        },
      ],
    };
    assert.equal((await postOtlp(port, 'metrics', teamKey.key, JSON.stringify(metrics))).status, 200);
    const span = {
      traceId: '0af7651916cd43dd8448eb211c80319c',
      spanId: 'b7ad6b7169203331',
      name: 'GET /',
      kind: 2,
      startTimeUnixNano: String(t),
      endTimeUnixNano: String(t + 5n),
    };
    const traces = { resourceSpans: [{ resource, scopeSpans: [{ scope: { name: 's' }, spans: [span] }] }] };
    assert.equal((await postOtlp(port, 'traces', teamKey.key, JSON.stringify(traces))).status, 200);

    const { rows } = await fixture.orrery.metadata.query<PayloadRow & { format: string; exe: string }>(
      `SELECT ${payloadColumns}, s.format, p.exe
         FROM blocks b JOIN streams s ON s.stream_id = b.stream_id JOIN processes p ON p.process_id = b.process_id
        WHERE b.audience = 'team_x'`,
    );
    const blockOf = (exe: string, format: string): string =>
      rows.find((r) => r.exe === exe && r.format === format)!.block_id;
    const team = new TestFlightClient(fixture.orrery.address);
    team.headers.authorization = `Bearer ${teamKey.key}`;
    const parsed = async (client: TestFlightClient, id: string): Promise<string[]> =>
      [
        ...(
          await client.query(
            `SELECT object_index || ' ' || type_name || ' ' || coalesce(value->>'msg', value->>'name') || ' ' || (value->'__resource'->>'service.name') AS r
           FROM parse_block('${id}') ORDER BY object_index`,
          )
        ).getChild('r')!,
      ].map(String);

    assert.deepEqual(await parsed(team, blockOf('proto', 'otlp/v1/logs')), [
      '0 otlp.LogRecord first proto',
      '1 otlp.LogRecord second proto',
    ]);
    assert.deepEqual(
      await parsed(admin, blockOf('secret', 'otlp/v1/logs')),
      [0, 1, 2, 3, 4].map((i) => `${i} otlp.LogRecord message ${i} secret`),
    );
    assert.deepEqual(await parsed(team, blockOf('shapes', 'otlp/v1/metrics')), [
      '0 otlp.NumberDataPoint temperature shapes',
      '1 otlp.HistogramDataPoint latency shapes',
    ]);
    assert.deepEqual(await parsed(team, blockOf('shapes', 'otlp/v1/traces')), ['0 otlp.Span GET / shapes']);
    // The value is the record as its view set reads it, nanosecond times exact.
    const value = JSON.parse(
      String(
        (await team.query(`SELECT value::VARCHAR AS v FROM parse_block('${blockOf('shapes', 'otlp/v1/traces')}')`))
          .getChild('v')!
          .get(0),
      ),
    ) as Record<string, unknown>;
    assert.equal(value.__type, 'otlp.Span');
    assert.equal(value.trace_id, span.traceId);
    assert.equal(
      String(
        (
          await team.query(
            `SELECT (value->>'begin')::BIGINT AS b FROM parse_block('${blockOf('shapes', 'otlp/v1/traces')}')`,
          )
        )
          .getChild('b')!
          .get(0),
      ),
      String(t),
    );

    // Another audience's block, an unknown id and a malformed one look alike.
    const secret = blockOf('secret', 'otlp/v1/logs');
    for (const id of [secret, '00000000-0000-0000-0000-000000000000', "x' OR true --"]) {
      assert.deepEqual(await refusal(reader.query(`SELECT * FROM parse_block('${id.replaceAll("'", "''")}')`)), {
        code: 5,
        details: `parse_block: block '${id}' not found`,
      });
    }
    // A payload gone from the store (deleted by hand) is said so, not answered as an empty block.
    const gone = rows.find((r) => r.exe === 'shapes' && r.format === 'otlp/v1/traces')!;
    await fixture.orrery.store.delete(payloadPlace(gone).key);
    assert.deepEqual(await refusal(team.query(`SELECT * FROM parse_block('${gone.block_id}')`)), {
      code: 9,
      details: `parse_block: the payload of block '${gone.block_id}' is gone from the object store`,
    });
    team.close();
  });
});
