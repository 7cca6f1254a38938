// Issue 9, item 9: every metric the README lists moves, with its labels, after real traffic:
// OTLP requests, Flight SQL statements (succeeding, failing, timed out, queued, refused), the
// daemon's materializations and a stored view definition that fails to load.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { FlightClientError } from '../../src/client/index.js';
import { doGetSql, hugeCrossJoin } from '../support/statement-calls.js';
import { logsRequest, postOtlp } from '../support/otlp.js';
import { adminKey, useOrrery } from '../support/orrery-process.js';
import { scrapeMetrics } from '../support/metric-value.js';

const readme = readFileSync(new URL('../../../README.md', import.meta.url), 'utf8');

/** The metric names of the README's Metrics table (a `orrery_x_*` row stands for a family). */
function listedMetrics(): string[] {
  const section = readme.slice(
    readme.indexOf('\n## Metrics'),
    readme.indexOf('\n## ', readme.indexOf('\n## Metrics') + 1),
  );
  return [...section.matchAll(/^\| `([a-z_*]+)`(?:, `([a-z_*]+)`)? \|/gm)].flatMap((m) => [m[1], m[2]].filter(Boolean));
}

const now = BigInt(Date.now()) * 1_000_000n;

const metricsBody = JSON.stringify({
  resourceMetrics: [
    {
      resource: { attributes: [{ key: 'service.name', value: { stringValue: 'metrics-test' } }] },
      scopeMetrics: [
        { metrics: [{ name: 'm', gauge: { dataPoints: [{ timeUnixNano: String(now), asDouble: 1.5 }] } }] },
      ],
    },
  ],
});
const tracesBody = JSON.stringify({
  resourceSpans: [
    {
      resource: { attributes: [{ key: 'service.name', value: { stringValue: 'metrics-test' } }] },
      scopeSpans: [
        {
          spans: [
            {
              traceId: '0af7651916cd43dd8448eb211c80319c',
              spanId: 'b7ad6b7169203331',
              name: 's',
              startTimeUnixNano: String(now),
              endTimeUnixNano: String(now + 1000n),
            },
          ],
        },
      ],
    },
  ],
});

describe('issue 9: every metric the README lists', { timeout: 180_000 }, () => {
  const fixture = useOrrery(
    {
      ORRERY_QUERY_TIMEOUT_SECONDS: '60',
      ORRERY_SMALL_QUERY_MS: '200',
      ORRERY_MAX_CONCURRENT_QUERIES_PER_KEY: '1',
      ORRERY_MAX_QUEUED_QUERIES_PER_KEY: '1',
      MICROMEGAS_VIEW_DEFINITION_REFRESH_SECONDS: '1',
    },
    'all',
  );
  const scrape = (): Promise<string> => scrapeMetrics(fixture.orrery.httpPort);
  const sample = (text: string, series: string): number | undefined => {
    const line = text.split('\n').find((l) => l.startsWith(`${series} `));
    return line === undefined ? undefined : Number(line.slice(series.length + 1));
  };
  /** Waits until a series reaches `at least`; fails after 60 s of scrapes. */
  const until = async (series: string, atLeast: number): Promise<void> => {
    for (let i = 0; i < 600; i++) {
      if ((sample(await scrape(), series) ?? -1) >= atLeast) return;
      await sleep(100);
    }
    assert.fail(`${series} did not reach ${atLeast}`);
  };
  const failure = async (promise: Promise<unknown>): Promise<string> => {
    try {
      await promise;
    } catch (error) {
      if (error instanceof FlightClientError) return error.status;
      throw error;
    }
    return 'OK';
  };

  it('moves each of them with the labels the README gives', async () => {
    const port = fixture.orrery.httpPort;
    const logs = logsRequest({ 'service.name': 'metrics-test' }, [
      { time: now, severity: 9, body: 'a' },
      { time: now + 1n, severity: 17, body: 'b' },
    ]);
    assert.equal((await postOtlp(port, 'logs', adminKey.key, logs)).status, 200);
    assert.equal((await postOtlp(port, 'logs', null, logs)).status, 401);
    assert.equal((await postOtlp(port, 'metrics', adminKey.key, metricsBody)).status, 200);
    assert.equal((await postOtlp(port, 'traces', adminKey.key, tracesBody)).status, 200);

    // Statements: two queries and two updates that succeed, one failing in DuckDB, one refused by the policy.
    const { reader, admin } = fixture;
    assert.equal((await reader.query('SELECT 1 AS n')).numRows, 1);
    assert.equal((await admin.query('SELECT 2 AS n')).numRows, 1);
    assert.equal(await failure(reader.query("SELECT 'x'::INTEGER")), 'INVALID_ARGUMENT');
    assert.equal(await failure(reader.query('CREATE TABLE t (x INTEGER)')), 'PERMISSION_DENIED');
    await admin.updateCount('CREATE TABLE metrics_t (x INTEGER)');
    assert.equal(await admin.updateCount('INSERT INTO metrics_t VALUES (1), (2)'), 2);
    // The limits: one statement of the reader runs into its deadline, one waits behind it, one is refused.
    // (DoGet of the SQL text, as micromegas clients send it: one call per statement, so the
    // statement holds its slot from the first moment.) Its deadline leaves a loaded machine time to queue the next
    // statement and refuse the third while it runs: it passes after them.
    const running = failure(doGetSql(reader.client, hugeCrossJoin, Date.now() + 8_000));
    await until('orrery_queries_running', 1);
    const queued = failure(doGetSql(reader.client, 'SELECT 3'));
    await until('orrery_queries_queued', 1);
    assert.equal(await failure(reader.query('SELECT 4')), 'RESOURCE_EXHAUSTED');
    assert.equal(await running, 'DEADLINE_EXCEEDED');
    assert.equal(await queued, 'OK');

    // A stored definition that cannot load, as another server could have written it.
    await fixture.orrery.metadata.query(
      `INSERT INTO lakehouse_view_set_definitions (view_set_name, definition_sql, extract_query, count_src_query, merge_partitions_query, update_group, view_options, updated_by)
       VALUES ('broken_metrics', '-- broken', 'SELECT no_such_column FROM log_entries', 'SELECT 1 AS count', 'SELECT * FROM {source}', 5000,
               '{"minTimeColumn":"time_bin","maxTimeColumn":"time_bin","sourcePartitionDelta":"1 day","mergePartitionDelta":"1 day"}', 'elsewhere')`,
    );
    await until('orrery_view_definition_load_failures_total{view_set="broken_metrics"}', 1);
    // The daemon (role all) materializes the blocks just ingested.
    await until('orrery_materializations_total{view_set="log_entries",outcome="created"}', 1);
    await until('orrery_queries_running', 0);
    // A rollup (issue 17): the daemon runs its refresh job within a second or two.
    await admin.updateCount(`CREATE TABLE metrics_series (ts TIMESTAMP, v DOUBLE) WITH (time_column = 'ts')`);
    await admin.query(
      `select create_rollup('metrics_hourly', 'metrics_series', interval '1 hour', select_list => 'count(*) as n')`,
    );
    await until('orrery_rollup_refresh_duration_seconds_count{rollup="metrics_hourly",outcome="ok"}', 1);
    // A statement the rollup could answer, twice: its rewrite made, then kept (made again if a refresh moved the snapshot).
    for (let i = 0; i < 2; i++)
      assert.equal((await admin.query(`select count(*) as n from metrics_series where ts >= '2024-01-01'`)).numRows, 1);

    const text = await scrape();
    const expected: Record<string, () => void> = {
      orrery_ingestion_requests_total: () => {
        assert.equal(sample(text, 'orrery_ingestion_requests_total{signal="logs",status="200"}'), 1);
        assert.equal(sample(text, 'orrery_ingestion_requests_total{signal="logs",status="401"}'), 1);
        assert.equal(sample(text, 'orrery_ingestion_requests_total{signal="metrics",status="200"}'), 1);
        assert.equal(sample(text, 'orrery_ingestion_requests_total{signal="traces",status="200"}'), 1);
      },
      orrery_ingested_records_total: () => {
        assert.equal(sample(text, 'orrery_ingested_records_total{signal="logs"}'), 2);
        assert.equal(sample(text, 'orrery_ingested_records_total{signal="metrics"}'), 1);
        assert.equal(sample(text, 'orrery_ingested_records_total{signal="traces"}'), 1);
      },
      // One request of each signal at a time: each flush held that one request (the 401 never joined one).
      orrery_ingest_flush_requests: () => {
        for (const signal of ['logs', 'metrics', 'traces']) {
          assert.equal(sample(text, `orrery_ingest_flush_requests_count{signal="${signal}"}`), 1);
          assert.equal(sample(text, `orrery_ingest_flush_requests_sum{signal="${signal}"}`), 1);
        }
      },
      orrery_queries_total: () => {
        assert.equal(sample(text, 'orrery_queries_total{outcome="ok"}'), 9);
        assert.equal(sample(text, 'orrery_queries_total{outcome="invalid_argument"}'), 1);
        assert.equal(sample(text, 'orrery_queries_total{outcome="permission_denied"}'), 1);
        assert.equal(sample(text, 'orrery_queries_total{outcome="deadline_exceeded"}'), 1);
        assert.equal(sample(text, 'orrery_queries_total{outcome="resource_exhausted"}'), 1);
      },
      // Executions: the nine that succeeded, the failing cast (it fails running, in DoGet) and the
      // one stopped; the PERMISSION_DENIED one failed at GetFlightInfo, before executing.
      orrery_query_duration_seconds: () => assert.equal(sample(text, 'orrery_query_duration_seconds_count'), 11),
      orrery_query_timeouts_total: () => assert.equal(sample(text, 'orrery_query_timeouts_total'), 1),
      // No statement here conflicted: exported at nothing (its moves are checked by test/resources/series-indexes.e2e,
      // where a publication sorts a series table under a running INSERT).
      orrery_conflict_reruns_total: () => assert.equal(sample(text, 'orrery_conflict_reruns_total'), 0),
      // At least the eleven executions' (each its GetFlightInfo's), and the refused one's.
      orrery_statement_plans_total: () => assert.ok((sample(text, 'orrery_statement_plans_total') ?? 0) >= 12),
      orrery_queries_running: () => assert.equal(sample(text, 'orrery_queries_running'), 0),
      orrery_queries_queued: () => assert.equal(sample(text, 'orrery_queries_queued'), 0),
      // The cross join, past ORRERY_SMALL_QUERY_MS with no batch (a small statement slowed by a loaded
      // machine may be demoted too: at least one).
      orrery_query_demotions_total: () => assert.ok((sample(text, 'orrery_query_demotions_total') ?? 0) >= 1),
      orrery_heavy_queries_running: () => assert.equal(sample(text, 'orrery_heavy_queries_running'), 0),
      orrery_heavy_queries_queued: () => assert.equal(sample(text, 'orrery_heavy_queries_queued'), 0),
      orrery_query_queue_wait_seconds: () => assert.equal(sample(text, 'orrery_query_queue_wait_seconds_count'), 1),
      orrery_queries_refused_total: () => assert.equal(sample(text, 'orrery_queries_refused_total{key="reader"}'), 1),
      orrery_materializations_total: () =>
        assert.ok((sample(text, 'orrery_materializations_total{view_set="log_entries",outcome="created"}') ?? 0) >= 1),
      orrery_view_definition_load_failures_total: () =>
        assert.ok((sample(text, 'orrery_view_definition_load_failures_total{view_set="broken_metrics"}') ?? 0) >= 1),
      orrery_rollup_refresh_duration_seconds: () =>
        assert.ok(
          (sample(text, 'orrery_rollup_refresh_duration_seconds_count{rollup="metrics_hourly",outcome="ok"}') ?? 0) >=
            1,
        ),
      orrery_rollup_rewrites_total: () => {
        const made = sample(text, 'orrery_rollup_rewrites_total{outcome="made"}') ?? 0;
        const kept = sample(text, 'orrery_rollup_rewrites_total{outcome="kept"}') ?? 0;
        assert.ok(made >= 1 && made + kept === 2, `made ${made}, kept ${kept}`);
      },
      orrery_rollup_pending_buckets: () =>
        assert.equal(sample(text, 'orrery_rollup_pending_buckets{rollup="metrics_hourly"}'), 0),
      // From the watermark (the start of the hour its refresh read the clock in) to the refresh's end:
      // under an hour, plus the time the refresh took when an hour turned during it.
      orrery_rollup_lag_seconds: () => {
        const lag = sample(text, 'orrery_rollup_lag_seconds{rollup="metrics_hourly"}') ?? -1;
        const refreshing =
          sample(text, 'orrery_rollup_refresh_duration_seconds_sum{rollup="metrics_hourly",outcome="ok"}') ?? 0;
        assert.ok(lag >= 0 && lag < 3600 + refreshing, `lag ${lag}, refreshes ${refreshing} s`);
      },
      // No partition is lost here: exported, with no view set counted (the gauge's moves are checked by
      // test/lakehouse/missing-partition, which loses partitions past retention).
      orrery_lost_partitions: () => {
        assert.ok(text.includes('# TYPE orrery_lost_partitions gauge'));
        assert.equal(text.split('\n').filter((l) => l.startsWith('orrery_lost_partitions{')).length, 0);
      },
      // Copies of rollups' rows kept in memory: exported with their budget (their moves, evictions too, are checked
      // by test/rollups/kept-memory, which reads rollups under a small one).
      orrery_rollup_kept_bytes: () => assert.ok(text.includes('# TYPE orrery_rollup_kept_bytes gauge')),
      orrery_rollup_kept_budget_bytes: () => {
        for (const engine of ['query', 'maintenance'])
          assert.ok((sample(text, `orrery_rollup_kept_budget_bytes{engine="${engine}"}`) ?? 0) > 0, engine);
      },
      orrery_rollup_kept_evictions_total: () =>
        assert.ok(text.includes('# TYPE orrery_rollup_kept_evictions_total counter')),
      'orrery_process_*': () => assert.ok((sample(text, 'orrery_process_cpu_seconds_total') ?? 0) > 0),
      'orrery_nodejs_*': () => assert.ok((sample(text, 'orrery_nodejs_heap_size_used_bytes') ?? 0) > 0),
    };
    assert.deepEqual(
      listedMetrics().sort(),
      Object.keys(expected).sort(),
      'the README lists exactly the metrics this test checks',
    );
    for (const check of Object.values(expected)) check();
  });
});
