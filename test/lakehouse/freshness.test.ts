// Issue 11, item 5: views stay fresh. A view set created by DDL backfills the recent window by
// itself, and an hour-wide materialize_partitions no longer stalls the daemon's passes on that
// hour (they found a wider partition and skipped the range until the hour pass).
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { logsRequest, postOtlp } from '../support/otlp.js';
import { adminKey, useOrrery } from '../support/orrery-process.js';
import type { TestFlightClient } from '../support/flight-client.js';
import { scrapeMetrics } from '../support/metric-value.js';

const count = async (c: TestFlightClient, sql: string): Promise<number> =>
  Number((await c.query(sql)).getChildAt(0)!.get(0) ?? 0);

/** Waits for what the daemon's passes (every second) do: a loaded machine may run them late, an hour pass is far off. */
async function eventually(what: string, check: () => Promise<boolean>, timeoutMs = 60000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** The value of one Prometheus sample from GET /metrics (0 when absent). */
async function metric(httpPort: number, name: string, labels: Record<string, string>): Promise<number> {
  const text = await scrapeMetrics(httpPort);
  const wanted = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  const line = text.split('\n').find((l) => l.startsWith(`${name}{`) && wanted.every((w) => l.includes(w)));
  return line ? Number(line.slice(line.lastIndexOf(' ') + 1)) : 0;
}

describe('issue 11: fresh views', () => {
  const fixture = useOrrery({ ORRERY_RETIRE_DELAY_SECONDS: '0', ORRERY_VIEW_BACKFILL_HOURS: '2' }, 'all');
  let admin: TestFlightClient;
  const send = async (exe: string, n: number, severity = 9): Promise<void> => {
    const logs = Array.from({ length: n }, (_, i) => ({
      time: BigInt(Date.now()) * 1_000_000n + BigInt(i),
      severity,
      body: `${exe} ${i}`,
    }));
    assert.equal(
      (await postOtlp(fixture.orrery.httpPort, 'logs', adminKey.key, logsRequest({ 'service.name': exe }, logs)))
        .status,
      200,
    );
  };

  before(() => {
    admin = fixture.admin;
  });

  it('rows keep arriving after an hour-wide materialize_partitions over the current hour', async () => {
    await send('before', 3);
    await eventually(
      'the first rows',
      async () => (await count(admin, "SELECT count(*) FROM log_entries WHERE exe = 'before'")) === 3,
    );
    const hour = Math.floor(Date.now() / 3_600_000) * 3_600_000;
    const iso = (ms: number): string => new Date(ms).toISOString();
    for (const view of ['blocks', 'log_entries']) {
      await admin.query(
        `SELECT * FROM materialize_partitions('${view}', '${iso(hour)}', '${iso(hour + 3_600_000)}', 3600)`,
      );
    }
    // A pass begun before the call may still be looking at a range the call changed under it. Passes of one kind run
    // one at a time, so once a row sent after the call is read (a second pass begun after it materialized it), every
    // second pass begun before has ended: the count starts there.
    await send('between', 1);
    await eventually(
      'a row sent after the hour-wide call',
      async () => (await count(admin, "SELECT count(*) FROM log_entries WHERE exe = 'between'")) === 1,
      120_000,
    );
    const skippedBefore = await metric(fixture.orrery.httpPort, 'orrery_materializations_total', {
      view_set: 'log_entries',
      outcome: 'skipped',
    });
    await send('after', 2);
    await eventually(
      'rows sent after the hour-wide call',
      async () => (await count(admin, "SELECT count(*) FROM log_entries WHERE exe = 'after'")) === 2,
      120_000,
    );
    assert.equal(await count(admin, "SELECT count(*) FROM log_entries WHERE exe IN ('before', 'between', 'after')"), 6);
    const skippedAfter = await metric(fixture.orrery.httpPort, 'orrery_materializations_total', {
      view_set: 'log_entries',
      outcome: 'skipped',
    });
    assert.equal(skippedAfter, skippedBefore, 'the passes skipped log_entries ranges');
  });

  it('a view set created by DDL counts the rows that were there before it', async () => {
    await send('old', 4, 17);
    await eventually(
      'the old rows',
      async () => (await count(admin, "SELECT count(*) FROM log_entries WHERE exe = 'old'")) === 4,
    );
    await admin.query(`CREATE MATERIALIZED VIEW errors_by_exe WITH (
      extract_query = $$SELECT date_bin('1 minute', time) AS time_bin, exe, count(*) AS count, audience FROM log_entries
                        WHERE level <= 2 AND insert_time >= '{begin}' AND insert_time < '{end}' GROUP BY ALL$$,
      count_src_query = $$SELECT sum(nb_objects) AS count FROM blocks WHERE insert_time >= '{begin}' AND insert_time < '{end}'$$,
      merge_partitions_query = $$SELECT time_bin, exe, sum(count) AS count, audience FROM {source} GROUP BY ALL$$,
      update_group = 4000, time_column = 'time_bin', source_partition_delta = '1 hour')`);
    await eventually(
      'errors_by_exe to count the 4 older errors',
      async () => (await count(admin, "SELECT sum(count) FROM errors_by_exe WHERE exe = 'old'")) === 4,
    );
    assert.ok(
      (await metric(fixture.orrery.httpPort, 'orrery_view_backfill_ranges_total', { view_set: 'errors_by_exe' })) >= 2,
    );
    await send('new', 1, 17);
    // A second pass that a loaded machine runs late leaves the row to the minute pass (up to two minutes on).
    await eventually(
      'errors_by_exe to count a new error',
      async () => (await count(admin, "SELECT sum(count) FROM errors_by_exe WHERE exe = 'new'")) === 1,
      180_000,
    );
  });
});
