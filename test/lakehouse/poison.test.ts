// Issue 9, item 1: one team's payload cannot keep another team's rows of the same window from becoming
// queryable. Each poison kind, in both encodings, is sent next to another audience's rows; those rows must
// come back through Flight SQL once the window is materialized.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { version } from '../../src/app.js';
import { MAX_TIME_UNIX_NANO } from '../../src/ingestion/otlp/otlp-fields.js';
import { exportRequestTypes } from '../../src/ingestion/otlp/otlp-proto.js';
import type { OtlpSignal } from '../../src/ingestion/otlp/index.js';
import { payloadPlace } from '../../src/lakehouse/index.js';
import { adminKey, useOrrery } from '../support/orrery-process.js';
import { TestFlightClient } from '../support/flight-client.js';
import { payloadColumns, type PayloadRow } from '../support/payloads.js';
import {
  clientFor,
  pollUntil,
  sharedEnv,
  startRole,
  startTestPostgres,
  type InProcessOrrery,
  type TestPostgres,
} from './lakehouse-fixtures.js';
import { scrapeMetrics } from '../support/metric-value.js';

const teamA = { name: 'team_a', key: 'team-a-key-0123' };
const teamB = { name: 'team_b', key: 'team-b-key-0123' };
const keys = JSON.stringify([adminKey, { ...teamA, audiences: ['team_a'] }, { ...teamB, audiences: ['team_b'] }]);
const traceId = '0af7651916cd43dd8448eb211c80319c';
const kv = (key: string, value: string) => ({ key, value: { stringValue: value } });
const now = (): bigint => BigInt(Date.now()) * 1_000_000n;

const logs = (resource: object[], record: object) => ({
  resourceLogs: [{ resource: { attributes: resource }, scopeLogs: [{ scope: { name: 'lib' }, logRecords: [record] }] }],
});
const metric = (name: string, time: bigint) => ({
  resourceMetrics: [
    {
      resource: { attributes: [kv('service.name', name)] },
      scopeMetrics: [{ metrics: [{ name, gauge: { dataPoints: [{ timeUnixNano: String(time), asDouble: 1 }] } }] }],
    },
  ],
});
const span = (name: string, spanId: string, begin: bigint, end: bigint) => ({
  resourceSpans: [
    {
      resource: { attributes: [kv('service.name', name)] },
      scopeSpans: [
        { spans: [{ traceId, spanId, name, startTimeUnixNano: String(begin), endTimeUnixNano: String(end) }] },
      ],
    },
  ],
});

function encode(
  signal: OtlpSignal,
  request: object,
  contentType: 'json' | 'protobuf',
): { body: Uint8Array; type: string } {
  if (contentType === 'json') return { body: Buffer.from(JSON.stringify(request)), type: 'application/json' };
  const object = JSON.parse(JSON.stringify(request), (key, value) =>
    (key === 'traceId' || key === 'spanId') && typeof value === 'string'
      ? Buffer.from(value, 'hex').toString('base64')
      : value,
  );
  const type = exportRequestTypes[signal];
  return { body: type.encode(type.fromObject(object)).finish(), type: 'application/x-protobuf' };
}

/**
 * The poison the issue saw (and its relatives); each is refused with a 400 before anything is stored. The
 * bad strings are short: protobufjs writes a lone surrogate in a string under 40 characters as bytes that
 * are not UTF-8 (longer ones become U+FFFD on the client already).
 */
const refusedPoison: Array<[string, OtlpSignal, (tag: string) => object]> = [
  [
    'a lone surrogate in a log body',
    'logs',
    (tag) => logs([kv('service.name', tag)], { timeUnixNano: String(now()), body: { stringValue: 'x\ud800' } }),
  ],
  [
    'a lone surrogate in a log attribute value',
    'logs',
    (tag) => logs([kv('service.name', tag)], { body: { stringValue: tag }, attributes: [kv('k', '\udc00')] }),
  ],
  [
    'a lone surrogate in a resource attribute',
    'logs',
    (tag) => logs([kv('service.name', 'x\ud800')], { body: { stringValue: tag } }),
  ],
  [
    'NUL in a resource attribute',
    'logs',
    (tag) => logs([kv('service.name', 'x\u0000')], { body: { stringValue: tag } }),
  ],
  [
    'timeUnixNano 2^64 - 1',
    'logs',
    (tag) => logs([kv('service.name', tag)], { timeUnixNano: '18446744073709551615', body: { stringValue: tag } }),
  ],
  [
    'timeUnixNano 2^63 - 1',
    'logs',
    (tag) => logs([kv('service.name', tag)], { timeUnixNano: '9223372036854775807', body: { stringValue: tag } }),
  ],
  [
    'observedTimeUnixNano 2^63 - 1',
    'logs',
    (tag) =>
      logs([kv('service.name', tag)], { observedTimeUnixNano: '9223372036854775807', body: { stringValue: tag } }),
  ],
  ['a metric time of 2^64 - 1', 'metrics', (tag) => metric(tag, (1n << 64n) - 1n)],
  ['a span end of 2^63 - 1', 'traces', (tag) => span(tag, 'b7ad6b7169203331', now(), (1n << 63n) - 1n)],
];

describe("issue 9: poison payloads do not hide other audiences' rows", () => {
  const fixture = useOrrery({ MICROMEGAS_API_KEYS: keys }, 'serve');
  let admin: TestFlightClient;
  let b: TestFlightClient;
  let a: TestFlightClient;
  const post = async (key: string, signal: OtlpSignal, body: { body: Uint8Array; type: string }) => {
    const response = await fetch(`http://127.0.0.1:${fixture.orrery.httpPort}/v1/${signal}`, {
      method: 'POST',
      headers: { 'content-type': body.type, authorization: `Bearer ${key}` },
      body: new Uint8Array(body.body),
    });
    return { status: response.status, text: await response.text() };
  };
  const client = (key: string): TestFlightClient => {
    const c = new TestFlightClient(fixture.orrery.address);
    c.headers.authorization = `Bearer ${key}`;
    return c;
  };
  const rows = async (c: TestFlightClient, sql: string): Promise<unknown[][]> =>
    (await c.query(sql))
      .toArray()
      .map((row) => Object.values(row.toJSON()).map((v) => (typeof v === 'bigint' ? v.toString() : v)));
  const materializeAll = async (): Promise<void> => {
    const minute = Math.floor(Date.now() / 60_000) * 60;
    const range = `'${new Date((minute - 60) * 1000).toISOString()}', '${new Date((minute + 120) * 1000).toISOString()}', 180`;
    for (const view of ['blocks', 'processes', 'streams', 'log_entries', 'measures', 'spans', 'log_stats']) {
      await admin.query(`SELECT * FROM regenerate_partitions('${view}', ${range})`);
    }
  };

  before(() => {
    admin = fixture.admin;
    a = client(teamA.key);
    b = client(teamB.key);
  });

  it("refuses each poison kind with a 400 naming the field, in both encodings, while the other team's rows materialize", async () => {
    const expected: string[] = [];
    for (const [what, signal, poison] of refusedPoison) {
      for (const contentType of ['json', 'protobuf'] as const) {
        const tag = `${what} ${contentType}`;
        const refused = await post(teamA.key, signal, encode(signal, poison(tag), contentType));
        assert.equal(refused.status, 400, `${tag}: ${refused.text}`);
        const body = `b next to ${tag}`;
        const good = await post(
          teamB.key,
          'logs',
          encode(
            'logs',
            logs([kv('service.name', 'b')], { timeUnixNano: String(now()), body: { stringValue: body } }),
            contentType,
          ),
        );
        assert.equal(good.status, 200);
        expected.push(body);
      }
    }
    await materializeAll();
    assert.deepEqual(
      await rows(b, 'SELECT msg FROM log_entries ORDER BY msg'),
      expected.sort().map((m) => [m]),
    );
    assert.deepEqual(await rows(admin, "SELECT count(*) FROM log_entries WHERE audience = 'team_a'"), [['0']]);
    assert.deepEqual(await rows(b, 'SELECT sum(count)::BIGINT FROM log_stats'), [[String(expected.length)]]);
  });

  it('stores and serves the edge values it accepts: the last representable nanosecond, NUL in a record', async () => {
    const last = MAX_TIME_UNIX_NANO - 1n;
    for (const contentType of ['json', 'protobuf'] as const) {
      const sent = [
        await post(
          teamA.key,
          'logs',
          encode(
            'logs',
            logs([kv('service.name', 'edge')], {
              timeUnixNano: String(last),
              body: { stringValue: `nul\u0000${contentType}` },
              attributes: [kv('k', '\u0000')],
            }),
            contentType,
          ),
        ),
        await post(teamA.key, 'metrics', encode('metrics', metric(`edge_${contentType}`, last), contentType)),
        await post(
          teamA.key,
          'traces',
          encode(
            'traces',
            span(
              `edge_${contentType}`,
              contentType === 'json' ? 'b7ad6b7169203332' : 'b7ad6b7169203333',
              last - 10n,
              last,
            ),
            contentType,
          ),
        ),
        await post(teamB.key, 'metrics', encode('metrics', metric(`b_${contentType}`, now()), contentType)),
        await post(
          teamB.key,
          'traces',
          encode(
            'traces',
            span(`b_${contentType}`, contentType === 'json' ? 'c7ad6b7169203332' : 'c7ad6b7169203333', now(), now()),
            contentType,
          ),
        ),
      ];
      assert.deepEqual(
        sent.map((s) => s.status),
        [200, 200, 200, 200, 200],
        JSON.stringify(sent),
      );
    }
    await materializeAll();
    assert.deepEqual(await rows(b, 'SELECT name FROM measures ORDER BY name'), [['b_json'], ['b_protobuf']]);
    assert.deepEqual(await rows(b, 'SELECT name FROM spans ORDER BY name'), [['b_json'], ['b_protobuf']]);
    assert.deepEqual(
      await rows(a, "SELECT epoch_ns(time), msg, properties->>'k' FROM log_entries WHERE exe = 'edge' ORDER BY msg"),
      [
        [String(last), 'nul\u0000json', '\u0000'],
        [String(last), 'nul\u0000protobuf', '\u0000'],
      ],
    );
    assert.deepEqual(await rows(a, 'SELECT name, epoch_ns(time) FROM measures ORDER BY name'), [
      ['edge_json', String(last)],
      ['edge_protobuf', String(last)],
    ]);
    assert.deepEqual(await rows(a, 'SELECT name, epoch_ns("end"), duration FROM spans ORDER BY name'), [
      ['edge_json', String(last), '10'],
      ['edge_protobuf', String(last), '10'],
    ]);
    assert.deepEqual(
      await rows(a, "SELECT epoch_ns(max(end_time)) >= epoch_ns(max(begin_time)) FROM blocks WHERE exe = 'edge'"),
      [[true]],
    );
  });
});

describe('issue 9: an unreadable block is quarantined, and the rest of its window materializes', () => {
  const keyList = [
    { name: adminKey.name, key: adminKey.key, audiences: ['public'] },
    { ...teamA, audiences: ['team_a'] },
    { ...teamB, audiences: ['team_b'] },
  ];
  let postgres: TestPostgres;
  let lakeDir: string;
  let env: Record<string, string>;
  let serve: InProcessOrrery;
  let admin: TestFlightClient;
  let a: TestFlightClient;
  let range: string;
  let badBlock: string;
  let badPath: string;
  let badPayload: Buffer;

  const messages = async (sql: string): Promise<string[]> => [...(await admin.query(sql)).getChild('msg')!] as string[];
  const values = async (c: TestFlightClient, sql: string): Promise<unknown[][]> =>
    (await c.query(sql))
      .toArray()
      .map((row) => Object.values(row.toJSON()).map((v) => (typeof v === 'bigint' ? Number(v) : v)));
  const gauge = async (): Promise<string[]> =>
    (await scrapeMetrics(serve.httpPort)).split('\n').filter((l) => l.startsWith('orrery_quarantined_blocks{'));
  const postLog = async (key: string, service: string, body: string): Promise<void> => {
    const request = logs([kv('service.name', service)], { timeUnixNano: String(now()), body: { stringValue: body } });
    const response = await fetch(`http://127.0.0.1:${serve.httpPort}/v1/logs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify(request),
    });
    assert.equal(response.status, 200);
  };

  before(async () => {
    postgres = await startTestPostgres();
    lakeDir = mkdtempSync(join(tmpdir(), 'orrery-poison-lake-'));
    env = sharedEnv({ keys: keyList, admins: [adminKey.name], connectionString: postgres.connectionString, lakeDir });
    serve = await startRole('serve', env);
    admin = clientFor(serve.flightPort, keyList[0]);
    a = clientFor(serve.flightPort, keyList[1]);
    await postLog(teamA.key, 'a_good', 'a readable');
    await postLog(teamB.key, 'b', 'b readable');
    await postLog(teamA.key, 'a_bad', 'a unreadable');
    const { rows } = await serve.metadata.query<PayloadRow>(
      `SELECT ${payloadColumns} FROM blocks b JOIN processes p USING (process_id) WHERE p.exe = 'a_bad'`,
    );
    badBlock = rows[0].block_id;
    // The request was stored alone, so its object holds only this payload.
    badPath = serve.store.location(payloadPlace(rows[0]).key);
    badPayload = readFileSync(badPath);
    writeFileSync(badPath, '{"time": 1, "msg": \n'); // the block's payload, made unreadable on purpose
    const minute = Math.floor(Date.now() / 60_000) * 60;
    range = `'${new Date((minute - 60) * 1000).toISOString()}', '${new Date((minute + 120) * 1000).toISOString()}', 180`;
  });

  after(async () => {
    admin?.close();
    a?.close();
    await serve?.close();
    await postgres?.close();
    rmSync(lakeDir, { recursive: true, force: true });
  });

  it('materializes the window without the unreadable block, through a real Flight SQL query', async () => {
    for (const view of ['blocks', 'processes', 'streams', 'log_entries', 'log_stats']) {
      assert.match(
        (await messages(`SELECT * FROM materialize_partitions('${view}', ${range})`))[0],
        /: created$/,
        view,
      );
    }
    const b = clientFor(serve.flightPort, keyList[2]);
    try {
      assert.deepEqual(await values(b, 'SELECT msg FROM log_entries'), [['b readable']]);
    } finally {
      b.close();
    }
    assert.deepEqual(await values(a, 'SELECT msg FROM log_entries'), [['a readable']]);
    assert.deepEqual(await values(admin, 'SELECT msg FROM log_entries ORDER BY msg'), [['a readable'], ['b readable']]);
    assert.deepEqual(await values(admin, 'SELECT sum(count)::INT FROM log_stats'), [[2]]);
    assert.deepEqual(
      await values(admin, "SELECT count(*)::INT FROM blocks WHERE exe = 'a_bad'"),
      [[1]],
      'the block itself is listed',
    );
  });

  it('shows the quarantined block to admins (list_quarantined_blocks, orrery_quarantined_blocks) and to no one else', async () => {
    const rows = await values(
      admin,
      'SELECT block_id, view_set_name, audience, orrery_version, error FROM list_quarantined_blocks()',
    );
    assert.equal(rows.length, 1);
    const [blockId, viewSet, audience, orreryVersion, error] = rows[0];
    assert.deepEqual([blockId, viewSet, audience, orreryVersion], [badBlock, 'log_entries', 'team_a', version]);
    assert.match(String(error), /Malformed JSON/);
    assert.deepEqual(await gauge(), ['orrery_quarantined_blocks{view_set="log_entries"} 1']);
    for (const call of ['list_quarantined_blocks()', 'retry_quarantined_blocks()']) {
      await assert.rejects(a.query(`SELECT * FROM ${call}`), {
        code: 7,
        details: `permission denied: ${call.slice(0, -2)} is an admin function`,
      });
    }
  });

  it('retry_quarantined_blocks quarantines a block that still fails again, and nothing else changes', async () => {
    const out = await messages('SELECT * FROM retry_quarantined_blocks()');
    assert.equal(out[0], `released block ${badBlock} of log_entries`);
    assert.match(out[1], /^log_entries \[.*\): created$/);
    assert.equal(out.at(-1), 'retried 1 quarantined block(s)');
    assert.deepEqual(await values(admin, 'SELECT block_id FROM list_quarantined_blocks()'), [[badBlock]]);
    assert.deepEqual(await values(admin, 'SELECT msg FROM log_entries ORDER BY msg'), [['a readable'], ['b readable']]);
  });

  it('a daemon of another version retries it at start; once readable, its rows reach log_entries and log_stats', async () => {
    writeFileSync(badPath, badPayload); // the fix
    await serve.metadata.query("UPDATE quarantined_blocks SET orrery_version = '0.0.0-older'");
    const daemon = await startRole('maintain', env);
    try {
      await pollUntil(
        'the daemon to release the block',
        async () => (await values(admin, 'SELECT count(*)::INT FROM list_quarantined_blocks()'))[0][0],
        (n) => n === 0,
        { timeoutMs: 120_000 },
      );
      await pollUntil(
        'log_stats to count the released rows',
        async () => (await values(admin, 'SELECT sum(count)::INT FROM log_stats'))[0][0],
        (n) => n === 3,
        { timeoutMs: 120_000 },
      );
    } finally {
      await daemon.close();
    }
    assert.ok(
      daemon.lines.some((line) => line === `info quarantine: released block ${badBlock} of log_entries`),
      daemon.lines.join('\n'),
    );
    assert.deepEqual(await values(a, 'SELECT msg FROM log_entries ORDER BY msg'), [['a readable'], ['a unreadable']]);
    assert.deepEqual(await gauge(), ['orrery_quarantined_blocks{view_set="log_entries"} 0']);
    assert.deepEqual(await messages('SELECT * FROM retry_quarantined_blocks()'), ['no quarantined blocks']);
  });

  it("retry_quarantined_blocks names a released set's rows of no known audience apart from audience ''", async () => {
    // A set of one row of no audience (NULL), one of audience '' and one of team_a; a set over it whose cast fails on
    // the first two, each with its own value.
    const set = (name: string, extract: string, group: number) =>
      admin.query(`CREATE MATERIALIZED VIEW ${name} WITH (
        extract_query = $$${extract}$$,
        count_src_query = $$SELECT sum(nb_objects) AS count FROM blocks WHERE insert_time >= '{begin}' AND insert_time < '{end}'$$,
        merge_partitions_query = $$SELECT * FROM {source}$$,
        update_group = ${group}, time_column = 'time_bin')`);
    await set(
      'blank_owners',
      `SELECT time AS time_bin, msg, CASE msg WHEN 'a readable' THEN NULL WHEN 'b readable' THEN '' ELSE audience END AS audience
        FROM log_entries WHERE insert_time >= '{begin}' AND insert_time < '{end}'`,
      6000,
    );
    await messages(`SELECT * FROM materialize_partitions('blank_owners', ${range})`);
    await set(
      'blank_numbers',
      `SELECT time_bin, CAST(CASE WHEN audience IS NULL THEN 'no owner' WHEN audience = '' THEN 'blank owner' ELSE '1' END AS INTEGER) AS n, audience FROM blank_owners`,
      7000,
    );
    await messages(`SELECT * FROM materialize_partitions('blank_numbers', ${range})`);
    assert.deepEqual(
      await values(
        admin,
        "SELECT audience FROM list_failed_audiences() WHERE view_set_name = 'blank_numbers' ORDER BY audience NULLS FIRST",
      ),
      [[null], ['']],
    );
    // The message's head: its range is the rows' insert times.
    const released = (await messages('SELECT * FROM retry_quarantined_blocks()'))
      .filter((m) => m.startsWith('released ') && m.includes('blank_numbers'))
      .map((m) => m.slice(0, m.indexOf(' [')));
    assert.deepEqual(released.sort(), [
      "released audience '' of blank_numbers",
      'released the rows of no known audience of blank_numbers',
    ]);
  });

  it('quarantines nothing when every block of the window fails (the system, not the data, is at fault)', async () => {
    const { rows } = await serve.metadata.query<PayloadRow>(
      `SELECT ${payloadColumns} FROM blocks b JOIN streams s USING (stream_id) WHERE 'log' = ANY(s.tags)`,
    );
    for (const row of rows) writeFileSync(serve.store.location(payloadPlace(row).key), '{');
    await assert.rejects(admin.query(`SELECT * FROM regenerate_partitions('log_entries', ${range})`), {
      code: 3,
      details: /Malformed JSON/,
    });
    assert.deepEqual(await values(admin, 'SELECT count(*)::INT FROM list_quarantined_blocks()'), [[0]]);
  });

  it('retention deletes a quarantine record with its block', async () => {
    await serve.metadata.query(
      `INSERT INTO quarantined_blocks (block_id, view_set_name, insert_time, error, orrery_version)
       SELECT b.block_id, 'log_entries', b.insert_time, 'unreadable', $1 FROM blocks b JOIN processes p USING (process_id) WHERE p.exe = 'a_bad'`,
      [version],
    );
    await serve.metadata.query("UPDATE blocks SET insert_time = now() - interval '100 days' WHERE block_id = $1", [
      badBlock,
    ]);
    const daemon = await startRole('maintain', env);
    try {
      await daemon.daemon!.housekeeping();
    } finally {
      await daemon.close();
    }
    assert.deepEqual((await serve.metadata.query('SELECT count(*)::int AS n FROM quarantined_blocks')).rows, [
      { n: 0 },
    ]);
    assert.deepEqual(
      (await serve.metadata.query('SELECT count(*)::int AS n FROM blocks WHERE block_id = $1', [badBlock])).rows,
      [{ n: 0 }],
    );
  });
});
