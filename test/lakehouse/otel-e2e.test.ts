// Issue 3, "Done when": logs, metrics and traces sent by the real OpenTelemetry JS SDK exporters over
// OTLP/HTTP, materialized by the daemon, read back through Flight SQL with exact counts, per audience.
import assert from 'node:assert/strict';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { gzipSync } from 'node:zlib';
import pg from 'pg';
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Meter, type Tracer } from '@opentelemetry/api';
import { SeverityNumber, type Logger } from '@opentelemetry/api-logs';
import { ExportResultCode, type ExportResult } from '@opentelemetry/core';
import { OTLPLogExporter as JsonLogExporter } from '@opentelemetry/exporter-logs-otlp-http';
import { OTLPLogExporter as ProtoLogExporter } from '@opentelemetry/exporter-logs-otlp-proto';
import { OTLPMetricExporter as JsonMetricExporter } from '@opentelemetry/exporter-metrics-otlp-http';
import { OTLPMetricExporter as ProtoMetricExporter } from '@opentelemetry/exporter-metrics-otlp-proto';
import { OTLPTraceExporter as JsonTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as ProtoTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { CompressionAlgorithm } from '@opentelemetry/otlp-exporter-base';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  BatchLogRecordProcessor,
  InMemoryLogRecordExporter,
  LoggerProvider,
  SimpleLogRecordProcessor,
  type LogRecordExporter,
  type ReadableLogRecord,
} from '@opentelemetry/sdk-logs';
import { MeterProvider, PeriodicExportingMetricReader, type PushMetricExporter } from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider, SimpleSpanProcessor, type SpanExporter } from '@opentelemetry/sdk-trace-base';
import type { TestFlightClient } from '../support/flight-client.js';
import { adminKey } from '../support/orrery-process.js';
import {
  clientFor,
  plainRows,
  pollUntil,
  scalar,
  sharedEnv,
  startRole,
  startTestPostgres,
  type InProcessOrrery,
  type TestKey,
  type TestPostgres,
} from './lakehouse-fixtures.js';

const admin: TestKey = { ...adminKey, audiences: ['public'] };
const teamA: TestKey = { name: 'team_a', key: 'team-a-key-0123', audiences: ['team_a'] };
const teamB: TestKey = { name: 'team_b', key: 'team-b-key-0123', audiences: ['team_b'] };
const keys = [admin, teamA, teamB];

/** Both teams send exactly these resource attributes: each audience must get its own process. */
const sharedResource = { 'service.name': 'checkout', 'host.name': 'shared-host', 'service.instance.id': 'checkout-1' };
const opsResource = { 'service.name': 'ops-tool', 'host.name': 'ops-host' };

/** What each key logs: `count` records of one level under one logger (the target). */
const logPlan = [
  { key: teamA, target: 'cart', severity: SeverityNumber.INFO, level: 4, count: 40 },
  { key: teamA, target: 'cart', severity: SeverityNumber.WARN, level: 3, count: 10 },
  { key: teamA, target: 'payment', severity: SeverityNumber.INFO, level: 4, count: 20 },
  { key: teamA, target: 'payment', severity: SeverityNumber.WARN, level: 3, count: 20 },
  { key: teamA, target: 'payment', severity: SeverityNumber.ERROR, level: 2, count: 10 },
  { key: teamB, target: 'inventory', severity: SeverityNumber.INFO, level: 4, count: 45 },
  { key: teamB, target: 'inventory', severity: SeverityNumber.DEBUG, level: 5, count: 5 },
  { key: admin, target: 'ops', severity: SeverityNumber.INFO, level: 4, count: 10 },
];
const audienceOf = (key: TestKey): string => key.audiences[0];
const logsOf = (key: TestKey): number => logPlan.filter((p) => p.key === key).reduce((n, p) => n + p.count, 0);
const totalLogs = logPlan.reduce((n, p) => n + p.count, 0); // 160

/** One exporter call as the SDK made it: how many items it carried and how it ended. */
interface ExportCall {
  readonly items: number;
  readonly result: ExportResult;
}

/** Wraps a real exporter so each export call (and its outcome) is recorded; everything else passes through. */
function recorded<E extends object>(exporter: E, calls: ExportCall[], size: (items: unknown) => number): E {
  return new Proxy(exporter, {
    get(target, property) {
      const value = Reflect.get(target, property, target) as unknown;
      if (property === 'export') {
        return (items: unknown, done: (result: ExportResult) => void) =>
          (value as (items: unknown, done: (result: ExportResult) => void) => void).call(target, items, (result) => {
            calls.push({ items: size(items), result });
            done(result);
          });
      }
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}

const arrayLength = (items: unknown): number => (items as unknown[]).length;
const dataPoints = (items: unknown): number =>
  (items as { scopeMetrics: Array<{ metrics: Array<{ dataPoints: unknown[] }> }> }).scopeMetrics.reduce(
    (n, s) => n + s.metrics.reduce((m, metric) => m + metric.dataPoints.length, 0),
    0,
  );

/** Log records made by an SDK LoggerProvider for one service, kept in memory to be exported by hand. */
async function sdkRecords(service: string, emit: (logger: Logger) => void): Promise<ReadableLogRecord[]> {
  const memory = new InMemoryLogRecordExporter();
  const provider = new LoggerProvider({
    resource: resourceFromAttributes({ 'service.name': service }),
    processors: [new SimpleLogRecordProcessor({ exporter: memory })],
  });
  emit(provider.getLogger(service));
  await provider.forceFlush();
  const records = memory.getFinishedLogRecords();
  await provider.shutdown();
  return records;
}

/** Exports records once through an exporter and returns the SDK's result. */
const exportOnce = (exporter: LogRecordExporter, records: ReadableLogRecord[]): Promise<ExportResult> =>
  new Promise((resolve) => exporter.export(records, resolve));

const failures = (calls: readonly ExportCall[]): string[] =>
  calls.filter((c) => c.result.code !== ExportResultCode.SUCCESS).map((c) => String(c.result.error));

describe('OTLP from the OpenTelemetry SDK to Flight SQL', () => {
  let postgres: TestPostgres;
  let orrery: InProcessOrrery;
  let asAdmin: TestFlightClient;
  let asTeamA: TestFlightClient;
  let asTeamB: TestFlightClient;
  const calls = new Map<TestKey, { logs: ExportCall[]; metrics: ExportCall[]; traces: ExportCall[] }>(
    keys.map((k) => [k, { logs: [], metrics: [], traces: [] }]),
  );
  const spanIds: Record<string, { traceId: string; spanId: string }> = {};
  const url = (signal: string): string => `http://127.0.0.1:${orrery.httpPort}/v1/${signal}`;
  const headers = (key: TestKey): Record<string, string> => ({ Authorization: `Bearer ${key.key}` });
  const blocksSent = (key: TestKey): number => {
    const c = calls.get(key)!;
    return [...c.logs, ...c.metrics, ...c.traces].filter((call) => call.items > 0).length;
  };

  async function sendLogs(
    key: TestKey,
    resource: Record<string, string>,
    exporter: LogRecordExporter,
    batch: boolean,
  ): Promise<void> {
    const wrapped = recorded(exporter, calls.get(key)!.logs, arrayLength);
    const provider = new LoggerProvider({
      resource: resourceFromAttributes(resource),
      processors: [
        batch
          ? new BatchLogRecordProcessor({ exporter: wrapped })
          : new SimpleLogRecordProcessor({ exporter: wrapped }),
      ],
    });
    const loggers = new Map<string, Logger>();
    for (const plan of logPlan.filter((p) => p.key === key)) {
      if (!loggers.has(plan.target)) loggers.set(plan.target, provider.getLogger(plan.target, '1.0.0'));
      for (let i = 0; i < plan.count; i++) {
        loggers.get(plan.target)!.emit({
          severityNumber: plan.severity,
          severityText: SeverityNumber[plan.severity],
          body: `${key.name} ${plan.target} ${SeverityNumber[plan.severity]} #${i}`,
          attributes: { 'request.index': i },
        });
      }
    }
    await provider.forceFlush();
    await provider.shutdown();
  }

  async function sendMetrics(
    key: TestKey,
    exporter: PushMetricExporter,
    record: (meter: Meter) => void,
  ): Promise<void> {
    const reader = new PeriodicExportingMetricReader({
      exporter: recorded(exporter, calls.get(key)!.metrics, dataPoints),
      exportIntervalMillis: 3_600_000, // never on its own during the test: shutdown makes the one export
    });
    const provider = new MeterProvider({ resource: resourceFromAttributes(sharedResource), readers: [reader] });
    record(provider.getMeter('business', '2.0.0'));
    await provider.shutdown(); // collects and exports once (cumulative values), then stops the reader
  }

  async function sendSpans(key: TestKey, exporter: SpanExporter, run: (tracer: Tracer) => void): Promise<void> {
    const provider = new BasicTracerProvider({
      resource: resourceFromAttributes(sharedResource),
      spanProcessors: [new SimpleSpanProcessor(recorded(exporter, calls.get(key)!.traces, arrayLength))],
    });
    run(provider.getTracer('web', '3.0.0'));
    await provider.forceFlush();
    await provider.shutdown();
  }

  /** A root span with children, ended in order; remembers each span's ids by name. */
  function spanTree(
    tracer: Tracer,
    root: string,
    children: Array<{ name: string; kind: SpanKind; error?: string }>,
  ): void {
    const parent = tracer.startSpan(root, { kind: SpanKind.SERVER, attributes: { 'http.route': root } });
    spanIds[root] = parent.spanContext();
    const inParent = trace.setSpan(ROOT_CONTEXT, parent);
    for (const child of children) {
      const span = tracer.startSpan(child.name, { kind: child.kind }, inParent);
      if (child.error) span.setStatus({ code: SpanStatusCode.ERROR, message: child.error });
      spanIds[child.name] = span.spanContext();
      span.end();
    }
    parent.end();
  }

  before(async () => {
    postgres = await startTestPostgres();
    orrery = await startRole(
      'all',
      sharedEnv({ keys, admins: [admin.name], connectionString: postgres.connectionString }),
    );
    asAdmin = clientFor(orrery.flightPort, admin);
    asTeamA = clientFor(orrery.flightPort, teamA);
    asTeamB = clientFor(orrery.flightPort, teamB);

    // Logs: protobuf with a batch processor, OTLP/JSON one request per record, protobuf gzipped.
    await sendLogs(teamA, sharedResource, new ProtoLogExporter({ url: url('logs'), headers: headers(teamA) }), true);
    // (50 exports in flight at once: above the exporter's default limit of 30.)
    await sendLogs(
      teamB,
      sharedResource,
      new JsonLogExporter({ url: url('logs'), headers: headers(teamB), concurrencyLimit: 64 }),
      false,
    );
    await sendLogs(
      admin,
      opsResource,
      new ProtoLogExporter({ url: url('logs'), headers: headers(admin), compression: CompressionAlgorithm.GZIP }),
      true,
    );
    // Metrics: a counter with two attribute sets and a gauge (protobuf); a histogram and a gauge (JSON).
    await sendMetrics(teamA, new ProtoMetricExporter({ url: url('metrics'), headers: headers(teamA) }), (meter) => {
      const orders = meter.createCounter('orders', { unit: '{order}' });
      for (let i = 0; i < 7; i++) orders.add(1, { shop: 'north' });
      orders.add(3, { shop: 'south' });
      meter.createGauge('queue.depth', { unit: '{item}' }).record(42);
    });
    await sendMetrics(teamB, new JsonMetricExporter({ url: url('metrics'), headers: headers(teamB) }), (meter) => {
      const latency = meter.createHistogram('latency', { unit: 'ms' });
      for (const ms of [10, 20, 30]) latency.record(ms);
      meter.createGauge('queue.depth', { unit: '{item}' }).record(5);
    });
    // Traces: one span per request (simple processor), protobuf for team_a, OTLP/JSON for team_b.
    await sendSpans(teamA, new ProtoTraceExporter({ url: url('traces'), headers: headers(teamA) }), (tracer) =>
      spanTree(tracer, 'GET /checkout', [
        { name: 'SELECT orders', kind: SpanKind.CLIENT },
        { name: 'render', kind: SpanKind.INTERNAL, error: 'template missing' },
      ]),
    );
    await sendSpans(teamB, new JsonTraceExporter({ url: url('traces'), headers: headers(teamB) }), (tracer) =>
      spanTree(tracer, 'GET /stock', [{ name: 'SELECT stock', kind: SpanKind.CLIENT }]),
    );

    for (const key of keys) {
      const c = calls.get(key)!;
      assert.deepEqual(
        [...failures(c.logs), ...failures(c.metrics), ...failures(c.traces)],
        [],
        `exports of ${key.name} failed`,
      );
    }
    const expected = {
      logs: totalLogs,
      stats: totalLogs,
      measures: 5,
      spans: 5,
      blocks: keys.reduce((n, k) => n + blocksSent(k), 0),
      processes: 3,
      streams: 7,
    };
    await pollUntil(
      `the daemon to materialize everything sent (${JSON.stringify(expected)})`,
      async () =>
        (
          await plainRows(
            asAdmin,
            `SELECT (SELECT count(*) FROM log_entries) AS logs, (SELECT coalesce(sum(count), 0)::BIGINT FROM log_stats) AS stats,
                    (SELECT count(*) FROM measures) AS measures, (SELECT count(*) FROM spans) AS spans,
                    (SELECT count(*) FROM blocks) AS blocks, (SELECT count(*) FROM processes) AS processes,
                    (SELECT count(*) FROM streams) AS streams`,
          )
        )[0],
      (seen) => JSON.stringify(seen) === JSON.stringify(expected),
      {
        timeoutMs: 120_000,
        failFast: (seen) =>
          Object.entries(expected).some(([k, v]) => (seen[k] as number) > v) ? 'more rows than were sent' : undefined,
      },
    );
  });

  after(async () => {
    asAdmin?.close();
    asTeamA?.close();
    asTeamB?.close();
    await orrery?.close();
    await postgres?.close();
  });

  it('gives the admin exact log counts per audience, target and level, and log_stats agrees', async () => {
    const expected = logPlan
      .map((p) => ({ audience: audienceOf(p.key), target: p.target, level: p.level, n: p.count }))
      .sort((a, b) => a.audience.localeCompare(b.audience) || a.target.localeCompare(b.target) || a.level - b.level);
    assert.deepEqual(
      await plainRows(
        asAdmin,
        'SELECT audience, target, level, count(*) AS n FROM log_entries GROUP BY ALL ORDER BY audience, target, level',
      ),
      expected,
    );
    assert.deepEqual(
      await plainRows(
        asAdmin,
        'SELECT audience, target, level, sum(count)::BIGINT AS n FROM log_stats GROUP BY ALL ORDER BY audience, target, level',
      ),
      expected,
    );
    // Every record once: the message is unique per record, and the SDK's severity text made it to the properties.
    assert.deepEqual(
      await plainRows(
        asAdmin,
        `SELECT count(*) AS n, count(DISTINCT msg) AS messages, count(*) FILTER (WHERE exe = 'checkout') AS checkout,
                count(*) FILTER (WHERE json_extract_string(properties, '$."otel.severity_text"') IS NULL) AS no_text
           FROM log_entries`,
      ),
      [{ n: totalLogs, messages: totalLogs, checkout: logsOf(teamA) + logsOf(teamB), no_text: 0 }],
    );
    assert.deepEqual(
      await plainRows(
        asAdmin,
        "SELECT msg, level, target, audience, computer FROM log_entries WHERE msg = 'team_a payment ERROR #9'",
      ),
      [{ msg: 'team_a payment ERROR #9', level: 2, target: 'payment', audience: 'team_a', computer: 'shared-host' }],
    );
  });

  it('stores metric points with their values, units and attributes', async () => {
    assert.deepEqual(
      await plainRows(
        asAdmin,
        `SELECT audience, target, name, unit, value, json_extract_string(properties, '$.shop') AS shop,
                json_extract_string(properties, '$."otel.kind"') AS kind, json_extract(properties, '$."otel.count"')::INTEGER AS count
           FROM measures ORDER BY audience, name, shop`,
      ),
      [
        {
          audience: 'team_a',
          target: 'business',
          name: 'orders',
          unit: '{order}',
          value: 7,
          shop: 'north',
          kind: 'sum',
          count: null,
        },
        {
          audience: 'team_a',
          target: 'business',
          name: 'orders',
          unit: '{order}',
          value: 3,
          shop: 'south',
          kind: 'sum',
          count: null,
        },
        {
          audience: 'team_a',
          target: 'business',
          name: 'queue.depth',
          unit: '{item}',
          value: 42,
          shop: null,
          kind: 'gauge',
          count: null,
        },
        {
          audience: 'team_b',
          target: 'business',
          name: 'latency',
          unit: 'ms',
          value: 60,
          shop: null,
          kind: 'histogram',
          count: 3,
        },
        {
          audience: 'team_b',
          target: 'business',
          name: 'queue.depth',
          unit: '{item}',
          value: 5,
          shop: null,
          kind: 'gauge',
          count: null,
        },
      ],
    );
  });

  it('stores spans with their parents, kinds and statuses', async () => {
    const id = (name: string) => spanIds[name];
    const row = (
      audience: string,
      name: string,
      parent: string | null,
      kind: SpanKind,
      status: number,
      message: string,
    ) => ({
      audience,
      name,
      trace_id: id(name).traceId,
      span_id: id(name).spanId,
      parent_span_id: parent === null ? null : id(parent).spanId,
      kind: kind + 1, // OTLP numbers kinds from 1 (internal); the API from 0
      status_code: status,
      status_message: message,
      ordered: true,
    });
    assert.deepEqual(
      await plainRows(
        asAdmin,
        `SELECT audience, name, trace_id, span_id, parent_span_id, kind, status_code, status_message, duration >= 0 AND "end" >= begin AS ordered
           FROM spans ORDER BY audience, name`,
      ),
      [
        row('team_a', 'GET /checkout', null, SpanKind.SERVER, 0, ''),
        row('team_a', 'SELECT orders', 'GET /checkout', SpanKind.CLIENT, 0, ''),
        row('team_a', 'render', 'GET /checkout', SpanKind.INTERNAL, 2, 'template missing'),
        row('team_b', 'GET /stock', null, SpanKind.SERVER, 0, ''),
        row('team_b', 'SELECT stock', 'GET /stock', SpanKind.CLIENT, 0, ''),
      ],
    );
    assert.equal(id('SELECT orders').traceId, id('GET /checkout').traceId);
  });

  it('lists one block per SDK export, and the processes and streams behind them', async () => {
    assert.deepEqual(
      await plainRows(
        asAdmin,
        'SELECT audience, count(*) AS blocks, sum(nb_objects)::BIGINT AS objects FROM blocks GROUP BY audience ORDER BY audience',
      ),
      [
        { audience: 'public', blocks: blocksSent(admin), objects: logsOf(admin) },
        { audience: 'team_a', blocks: blocksSent(teamA), objects: logsOf(teamA) + 3 + 3 },
        { audience: 'team_b', blocks: blocksSent(teamB), objects: logsOf(teamB) + 2 + 2 },
      ],
    );
    // team_b's records were sent one per request (simple processor): one block each.
    assert.equal(calls.get(teamB)!.logs.length, logsOf(teamB));
    assert.deepEqual(
      await plainRows(asAdmin, 'SELECT audience, exe, computer, realname FROM processes ORDER BY audience'),
      [
        { audience: 'public', exe: 'ops-tool', computer: 'ops-host', realname: null },
        { audience: 'team_a', exe: 'checkout', computer: 'shared-host', realname: 'checkout-1' },
        { audience: 'team_b', exe: 'checkout', computer: 'shared-host', realname: 'checkout-1' },
      ],
    );
    assert.deepEqual(
      await plainRows(
        asAdmin,
        "SELECT audience, string_agg(tags[1], ',' ORDER BY tags[1]) AS tags FROM streams GROUP BY audience ORDER BY audience",
      ),
      [
        { audience: 'public', tags: 'log' },
        { audience: 'team_a', tags: 'log,metrics,traces' },
        { audience: 'team_b', tags: 'log,metrics,traces' },
      ],
    );
  });

  it('gives two audiences sending identical resource attributes two processes', async () => {
    const rows = await plainRows(
      asAdmin,
      "SELECT process_id, audience, properties::VARCHAR AS properties FROM processes WHERE exe = 'checkout' ORDER BY audience",
    );
    assert.equal(rows.length, 2);
    assert.notEqual(rows[0].process_id, rows[1].process_id);
    assert.deepEqual(JSON.parse(rows[0].properties as string), sharedResource);
    assert.deepEqual(JSON.parse(rows[1].properties as string), sharedResource);
    // Each team's records hang off its own process only.
    assert.deepEqual(
      await plainRows(
        asAdmin,
        `SELECT l.audience, count(DISTINCT l.process_id) AS processes, bool_and(p.audience = l.audience) AS same
           FROM log_entries l JOIN processes p USING (process_id) WHERE l.exe = 'checkout' GROUP BY l.audience ORDER BY l.audience`,
      ),
      [
        { audience: 'team_a', processes: 1, same: true },
        { audience: 'team_b', processes: 1, same: true },
      ],
    );
  });

  for (const [team, other] of [
    [teamA, teamB],
    [teamB, teamA],
  ] as const) {
    it(`shows ${team.name} only its own and public rows, in every view set`, async () => {
      const client = team === teamA ? asTeamA : asTeamB;
      const mine = audienceOf(team);
      const byAudience = (view: string, measure = 'count(*)') =>
        plainRows(client, `SELECT audience, ${measure} AS n FROM ${view} GROUP BY audience ORDER BY audience`);
      assert.deepEqual(await byAudience('log_entries'), [
        { audience: 'public', n: logsOf(admin) },
        { audience: mine, n: logsOf(team) },
      ]);
      assert.deepEqual(await byAudience('log_stats', 'sum(count)::BIGINT'), [
        { audience: 'public', n: logsOf(admin) },
        { audience: mine, n: logsOf(team) },
      ]);
      assert.deepEqual(await byAudience('measures'), [{ audience: mine, n: team === teamA ? 3 : 2 }]);
      assert.deepEqual(await byAudience('spans'), [{ audience: mine, n: team === teamA ? 3 : 2 }]);
      assert.deepEqual(await byAudience('blocks'), [
        { audience: 'public', n: blocksSent(admin) },
        { audience: mine, n: blocksSent(team) },
      ]);
      assert.deepEqual(await byAudience('processes'), [
        { audience: 'public', n: 1 },
        { audience: mine, n: 1 },
      ]);
      assert.deepEqual(await byAudience('streams'), [
        { audience: 'public', n: 1 },
        { audience: mine, n: 3 },
      ]);
      // Asking for the other team's rows by name finds nothing.
      const theirs = audienceOf(other);
      assert.equal(
        await scalar(
          client,
          `SELECT count(*) FROM log_entries WHERE audience = '${theirs}' OR msg LIKE '${other.name} %'`,
        ),
        0,
      );
      assert.equal(await scalar(client, `SELECT count(*) FROM spans WHERE audience = '${theirs}'`), 0);
    });
  }

  it('stores a request sent twice once: ids derive from the content', async () => {
    const records = await sdkRecords('retry-svc', (logger) => {
      for (let i = 0; i < 5; i++) logger.emit({ severityNumber: SeverityNumber.INFO, body: `retried #${i}` });
    });
    const exporter = new ProtoLogExporter({ url: url('logs'), headers: headers(teamA) });
    try {
      assert.equal((await exportOnce(exporter, records)).code, ExportResultCode.SUCCESS);
      assert.equal((await exportOnce(exporter, records)).code, ExportResultCode.SUCCESS);
    } finally {
      await exporter.shutdown();
    }
    const { rows } = await postgres.pool.query<{ blocks: string; objects: string; now_ns: string }>(
      `SELECT count(*) AS blocks, sum(b.nb_objects) AS objects, (extract(epoch FROM clock_timestamp()) * 1e9)::bigint AS now_ns
         FROM blocks b JOIN processes p USING (process_id) WHERE p.exe = 'retry-svc'`,
    );
    assert.deepEqual({ blocks: Number(rows[0].blocks), objects: Number(rows[0].objects) }, { blocks: 1, objects: 5 });
    // Wait until the daemon has materialized past the second request, then count through Flight SQL.
    await pollUntil(
      'a log_entries partition ending after the retry',
      async () =>
        Number(
          (
            await postgres.pool.query<{ n: string }>(
              "SELECT count(*) AS n FROM lakehouse_partitions WHERE view_set_name = 'log_entries' AND end_insert_time > to_timestamp($1::bigint / 1e9)",
              [rows[0].now_ns],
            )
          ).rows[0].n,
        ),
      (n) => n > 0,
      { timeoutMs: 120_000 },
    );
    await pollUntil(
      'the retried records in log_entries',
      () => scalar(asAdmin, "SELECT count(*) FROM log_entries WHERE exe = 'retry-svc'"),
      (n) => n === 5,
      {
        timeoutMs: 120_000,
        failFast: (n) => (n > 5 ? 'the retry was stored twice' : undefined),
      },
    );
    assert.equal(await scalar(asAdmin, 'SELECT count(*) FROM log_entries'), totalLogs + 5);
    assert.equal(await scalar(asTeamA, "SELECT count(*) FROM log_entries WHERE exe = 'retry-svc'"), 5);
    assert.equal(await scalar(asTeamB, "SELECT count(*) FROM log_entries WHERE exe = 'retry-svc'"), 0);
  });

  /** Row counts of the ingestion tables and payload files: what a refused request must leave alone. */
  async function stored(): Promise<Record<string, number>> {
    const { rows } = await postgres.pool.query<Record<string, string>>(
      'SELECT (SELECT count(*) FROM processes) AS processes, (SELECT count(*) FROM streams) AS streams, (SELECT count(*) FROM blocks) AS blocks',
    );
    // Those holding bytes: the one the server reserves for its next group's payloads is empty until written.
    const blobs = join(orrery.dataDir, 'lake', 'blobs');
    const payloads = readdirSync(blobs, { recursive: true }).filter(
      (f) => String(f).endsWith('.payloads') && statSync(join(blobs, String(f))).size > 0,
    ).length;
    return { ...Object.fromEntries(Object.entries(rows[0]).map(([k, v]) => [k, Number(v)])), payloads };
  }

  const validJson = JSON.stringify({
    resourceLogs: [
      {
        resource: { attributes: [{ key: 'service.name', value: { stringValue: 'refused' } }] },
        scopeLogs: [{ logRecords: [{ body: { stringValue: 'x' } }] }],
      },
    ],
  });

  it('answers bad requests with the OTLP status and stores nothing', async () => {
    const before = await stored();
    const post = async (init: { headers?: Record<string, string>; body: Uint8Array | string }, path = '/v1/logs') => {
      const body = typeof init.body === 'string' ? init.body : new Uint8Array(init.body);
      const response = await fetch(`http://127.0.0.1:${orrery.httpPort}${path}`, {
        method: 'POST',
        headers: init.headers,
        body,
      });
      return {
        status: response.status,
        type: response.headers.get('content-type'),
        text: Buffer.from(await response.arrayBuffer()).toString('utf8'),
      };
    };
    const json = { 'content-type': 'application/json' };
    const proto = { 'content-type': 'application/x-protobuf' };
    const bearer = headers(teamA);

    const noKey = await post({ headers: json, body: validJson });
    const noKeyMessage = 'missing or invalid API key: send "Authorization: Bearer <key>"';
    assert.deepEqual(noKey, { status: 401, type: 'application/json', text: JSON.stringify({ message: noKeyMessage }) });
    assert.equal(
      (await post({ headers: { ...json, Authorization: 'Bearer not-a-key-at-all' }, body: validJson })).status,
      401,
    );
    const basic = `Basic ${Buffer.from(`team_a:${teamA.key}`).toString('base64')}`; // OTLP takes bearer keys only
    assert.equal((await post({ headers: { ...json, Authorization: basic }, body: validJson })).status, 401);

    const wrongType = await post({ headers: { ...bearer, 'content-type': 'text/plain' }, body: validJson });
    assert.deepEqual(wrongType, {
      status: 415,
      type: 'application/json',
      text: JSON.stringify({
        message: "unsupported Content-Type 'text/plain' (use application/x-protobuf or application/json)",
      }),
    });
    assert.equal(
      (
        await post({
          headers: { ...bearer, 'content-type': 'application/json', 'content-encoding': 'br' },
          body: validJson,
        })
      ).status,
      415,
    );

    const badProto = await post(
      { headers: { ...bearer, ...proto }, body: Uint8Array.from([0x0a, 0xff]) },
      '/v1/traces',
    );
    assert.equal(badProto.status, 400);
    assert.equal(badProto.type, 'application/x-protobuf');
    assert.match(badProto.text, /body is not a valid ExportTraceServiceRequest protobuf message/);

    const badJson = await post({ headers: { ...bearer, ...json }, body: '{"resourceLogs": [' });
    assert.equal(badJson.status, 400);
    assert.match(JSON.parse(badJson.text).message, /^body is not valid JSON: /);
    const badShape = await post(
      { headers: { ...bearer, ...json }, body: JSON.stringify({ resourceMetrics: {} }) },
      '/v1/metrics',
    );
    assert.deepEqual(badShape, {
      status: 400,
      type: 'application/json',
      text: JSON.stringify({ message: '$.resourceMetrics: expected an array, got an object' }),
    });
    const badGzip = await post({ headers: { ...bearer, ...json, 'content-encoding': 'gzip' }, body: validJson });
    assert.equal(badGzip.status, 400);
    assert.match(JSON.parse(badGzip.text).message, /^body is not valid gzip/);

    // The real exporter, without a key: the SDK reports the 401 and does not retry.
    const refused = await sdkRecords('refused', (logger) => logger.emit({ body: 'no key' }));
    const exporter = new ProtoLogExporter({ url: url('logs') });
    try {
      const result = await exportOnce(exporter, refused);
      assert.equal(result.code, ExportResultCode.FAILED);
      assert.equal((result.error as { code?: number }).code, 401);
    } finally {
      await exporter.shutdown();
    }
    assert.deepEqual(await stored(), before);
  });

  it('refuses bodies over ORRERY_MAX_BODY_BYTES with 413, plain or gzipped, and stores nothing', async () => {
    // A second Orrery with a 64 KiB cap, on its own database of the same server.
    await postgres.pool.query('CREATE DATABASE small_bodies');
    const database = new URL(postgres.connectionString);
    database.pathname = '/small_bodies';
    const smallPool = new pg.Pool({ connectionString: database.toString(), max: 1 });
    const small = await startRole('serve', {
      ...sharedEnv({ keys, admins: [admin.name], connectionString: database.toString() }),
      ORRERY_MAX_BODY_BYTES: '65536',
    });
    try {
      const smallUrl = `http://127.0.0.1:${small.httpPort}/v1/logs`;
      const count = async (): Promise<number> =>
        Number((await smallPool.query<{ n: string }>('SELECT count(*) AS n FROM blocks')).rows[0].n);
      const post = (body: Uint8Array | string, extra: Record<string, string> = {}) =>
        fetch(smallUrl, {
          method: 'POST',
          headers: { ...headers(teamA), 'content-type': 'application/json', ...extra },
          body: typeof body === 'string' ? body : new Uint8Array(body),
        });

      const accepted = await post(validJson);
      assert.equal(accepted.status, 200);
      assert.equal(await count(), 1);

      const big = JSON.stringify({
        resourceLogs: [{ scopeLogs: [{ logRecords: [{ body: { stringValue: 'x'.repeat(70_000) } }] }] }],
      });
      const plain = await post(big);
      assert.equal(plain.status, 413);
      assert.deepEqual(await plain.json(), { message: 'request body is larger than 65536 bytes once decoded' });
      const bomb = gzipSync(Buffer.alloc(8 * 1024 * 1024, 0x20)); // 8 MiB of spaces: ~8 KiB on the wire
      assert.ok(bomb.byteLength < 65536);
      const gzipped = await post(bomb, { 'content-encoding': 'gzip' });
      assert.equal(gzipped.status, 413);
      assert.deepEqual(await gzipped.json(), { message: 'request body is larger than 65536 bytes once decoded' });

      // The real exporter sending a batch over the cap gets the 413 back.
      const large = await sdkRecords('big', (logger) => {
        for (let i = 0; i < 100; i++) logger.emit({ body: `${i} ${'y'.repeat(1000)}` });
      });
      const exporter = new ProtoLogExporter({ url: smallUrl, headers: headers(teamA) });
      try {
        const result = await exportOnce(exporter, large);
        assert.equal(result.code, ExportResultCode.FAILED);
        assert.equal((result.error as { code?: number }).code, 413);
      } finally {
        await exporter.shutdown();
      }
      assert.equal(await count(), 1);
    } finally {
      await small.close();
      await smallPool.end();
    }
  });
});
