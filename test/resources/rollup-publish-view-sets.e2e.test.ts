// Issue 14 with issue 17's rollups of view sets: `orrery publish` installs a rollup entry over
// log_entries (no longer planned as omitted) against a real Orrery whose daemon materializes OTLP
// ingestion: the target is made as create_rollup over the set makes one and refreshed at install
// (the ledger ready, its backfilled range the lake's retention), the stable view points at it, a
// `from` entry is a rollup of its target, and a dashboard query over log_entries names the coarsest
// that answers it in its provenance and answers what the raw rows answer, for an admin and two
// audiences, also while a late block's bucket is pending; validate --online finds each target equal
// to the raw rows. A later publication without them retires them, as it retires a series table's,
// and `resources prune` drops them.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { plainRows } from '../lakehouse/lakehouse-fixtures.js';
import { dayStart, hourStart, rawTwin, rollupRead, useLogsOrrery } from '../support/log-sender.js';
import { publishFolderAs, runCliAs } from '../support/publish.js';

const minuteNs = 60_000_000_000n;
const iso = (nanos: bigint): string => new Date(Number(nanos / 1_000_000n)).toISOString();

describe('orrery publish installs rollup entries over a view set (issues 14 and 17)', () => {
  const fixture = useLogsOrrery('rollpub-views-01', { ORRERY_ROLLUP_RAW_EDGES_MIN_ROWS: '0' });
  const dir = mkdtempSync(join(tmpdir(), 'orrery-rollup-publish-views-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  const rows = (text: string) => plainRows(fixture.admin, text);
  const address = (): string => `127.0.0.1:${fixture.orrery.flightPort}`;
  const publish = () => publishFolderAs(fixture.keys.admin.key, address(), dir);
  const declare = (resources: unknown): void => {
    mkdirSync(join(dir, 'resources'), { recursive: true });
    writeFileSync(join(dir, 'resources', 'logs.resources.json'), JSON.stringify({ resources }, null, 2));
  };
  const ledger = async () =>
    (await rows(
      `SELECT entry_key, hash, state, backfilled_begin IS NOT NULL AS begun, retired_at IS NOT NULL AS retired
         FROM resource_ledger() WHERE kind = 'rollup' ORDER BY entry_key, retired`,
    )) as Array<{ entry_key: string; hash: string; state: string; begun: boolean; retired: boolean }>;

  const hourly = {
    rollup: {
      table: 'log_entries',
      grain: '1h',
      dimensions: ['target'],
      measures: { n: 'count(*)', total: 'sum(level)', top: 'max(level)', low: 'min(level)', mean: 'avg(level)' },
      retention: '30d',
    },
  };
  const daily = {
    rollup: { table: 'log_entries', grain: '1d', from: 'hourly', dimensions: ['target'], measures: { n: 'count(*)' } },
  };

  /** Dashboard queries over the last eight hours (the hourly entry's) and over whole days (the daily one's). */
  const queries = (): Array<{ sql: string; daily: boolean }> => {
    const [from, to] = [iso(hourStart(8)), iso(hourStart(1))];
    const offFrom = iso(hourStart(8) + 17n * minuteNs);
    const [dayFrom, dayTo] = [iso(dayStart(2)), iso(dayStart(-1))];
    return [
      {
        sql: `select date_trunc('hour', time) as h, target, count(*) as n, max(level) as top from log_entries where time >= '${from}' and time < '${to}' group by all order by 1, 2`,
        daily: false,
      },
      {
        sql: `select target, avg(level) as mean, sum(level) as total, min(level) as low from log_entries where time >= '${from}' and time < '${to}' group by target order by target`,
        daily: false,
      },
      {
        sql: `select target, count(*) as n, max(level) as top from log_entries where time >= '${offFrom}' group by target order by target`,
        daily: false,
      },
      {
        // Open at its end from a whole hour: the daily target when that hour starts a UTC day (a suite
        // started between 08:00 and 09:00 UTC), else the hourly one.
        sql: `select audience, count(*) filter (where target = 'cart') as carts, count(*) as n from log_entries where time >= '${from}' group by audience order by audience`,
        daily: hourStart(8) === dayStart(0),
      },
      {
        sql: `select date_trunc('day', time) as d, target, count(*) as n from log_entries where time >= '${dayFrom}' and time < '${dayTo}' group by all order by 1, 2`,
        daily: true,
      },
    ];
  };

  /** Each query, for every key: the target named in its provenance (unless `read` is null), and the raw rows' answer. */
  const check = async (read: { hourly: string; daily: string } | null): Promise<void> => {
    for (const client of fixture.clients) {
      for (const { sql, daily } of queries()) {
        if (read !== null) assert.equal(rollupRead(await client.query(sql)), daily ? read.daily : read.hourly, sql);
        const [got, want] = await Promise.all([plainRows(client, sql), plainRows(client, rawTwin(sql))]);
        assert.ok(want.length > 0, sql);
        assert.deepEqual(got, want, sql);
      }
    }
  };

  before(async () => {
    const { teamA, teamB } = fixture.keys;
    await fixture.logs.send(teamA, 'cart', hourStart(7) + 3n * minuteNs, 40, 9);
    await fixture.logs.send(teamB, 'cart', hourStart(6) + 5n * minuteNs, 30, 13);
    await fixture.logs.send(teamB, 'stock', hourStart(5), 24, 17);
  });

  const targets = { hourly: '', daily: '' };

  it('installs the entries: targets over log_entries, refreshed, ready in the ledger, the stable view pointed at them', async () => {
    declare({ hourly, daily });
    const run = await publish();
    assert.equal(run.status, 0, run.err.join('\n'));
    assert.doesNotMatch(run.text, /omitted/);
    targets.hourly = /^created rollup (rollup_log_entries_hourly__[0-9a-f]{8}) over log_entries \(grain 1h\)$/m.exec(
      run.text,
    )![1];
    targets.daily = new RegExp(
      `^created rollup (rollup_log_entries_daily__[0-9a-f]{8}) over ${targets.hourly} \\(grain 1d\\)$`,
      'm',
    ).exec(run.text)![1];
    for (const [key, target] of Object.entries(targets))
      assert.match(
        run.text,
        new RegExp(
          `^backfill rollup ${key} on log_entries into ${target}: one refresh over the view set's partitions`,
          'm',
        ),
      );
    assert.match(run.text, /^served publication 1$/m);
    const entries = await ledger();
    assert.deepEqual(
      entries.map((e) => [e.entry_key, e.state, e.begun, e.retired]),
      [
        ['daily', 'ready', true, false],
        ['hourly', 'ready', true, false],
      ],
    );
    assert.equal(`rollup_log_entries_hourly__${entries[1].hash}`, targets.hourly);
    const listed = (await rows(
      `SELECT name, source, retention, watermark IS NOT NULL AS refreshed FROM list_rollups() ORDER BY name`,
    )) as Array<{ name: string; source: string; retention: string | null; refreshed: boolean }>;
    assert.deepEqual(listed, [
      { name: targets.daily, source: targets.hourly, retention: null, refreshed: true },
      { name: targets.hourly, source: 'log_entries', retention: '30 days', refreshed: true },
    ]);
    // Each keeps refreshing: its refresh job, every minute, as create_rollup's.
    assert.deepEqual(await rows(`SELECT kind, target, schedule FROM snouttime.jobs ORDER BY target`), [
      { kind: 'refresh', target: targets.daily, schedule: '00:01:00' },
      { kind: 'refresh', target: targets.hourly, schedule: '00:01:00' },
    ]);
    // The stable view, per key: a row per bucket, dimension and audience the key sees, as the raw rows count them.
    for (const client of fixture.clients)
      assert.deepEqual(
        await plainRows(client, `SELECT bucket, target, audience, n, top FROM rollup_log_entries_hourly ORDER BY ALL`),
        await plainRows(
          client,
          `SELECT time_bucket(INTERVAL 1 HOUR, time::TIMESTAMP) AS bucket, target, audience, count(*) AS n, max(level) AS top
             FROM log_entries GROUP BY ALL ORDER BY ALL`,
        ),
      );
  });

  it('dashboard queries over log_entries read the coarsest target, provenance naming it, exactly as raw for every key', async () => {
    await check(targets);
  });

  it('answers a late block exactly while its bucket is pending', async () => {
    await fixture.logs.send(fixture.keys.teamA, 'stock', hourStart(6) + 11n * minuteNs, 5, 21);
    await check(targets);
  });

  it('validate --online, once the late block is refreshed, finds each target equal to the raw rows of the set', async () => {
    for (const target of [targets.hourly, targets.daily]) await rows(`select snouttime.refresh_rollup('${target}')`);
    const run = await runCliAs(fixture.keys.admin.key, address(), 'resources', [
      'validate',
      '--dir',
      dir,
      '--online',
      '--rollup-window',
      '10h',
    ]);
    assert.equal(run.status, 0, run.err.join('\n'));
    for (const target of [targets.daily, targets.hourly])
      assert.match(run.text, new RegExp(`^rollup ${target}: ok \\([1-9]\\d* buckets from `, 'm'));
    assert.match(run.text, /^2 rollup\(s\) checked online, 0 mismatch\(es\)\.$/m);
  });

  it('a publication without the entries retires them, as series table rollups are retired', async () => {
    declare({});
    const run = await publish();
    assert.equal(run.status, 0, run.err.join('\n'));
    for (const [key, target] of Object.entries(targets))
      assert.match(
        run.text,
        new RegExp(`^retired rollup ${key} on log_entries \\(${target.slice(-8)}\\) for 7 days$`, 'm'),
      );
    assert.deepEqual(
      (await ledger()).map((e) => [e.entry_key, e.state, e.retired]),
      [
        ['daily', 'retired', true],
        ['hourly', 'retired', true],
      ],
    );
    await check(null);
  });

  it('prune drops the retired targets (the daily one before the hourly one it reads); answers stay those of the raw rows', async () => {
    await fixture.orrery.metadata.query("UPDATE resource_ledger SET prune_after = now() - interval '1 second'");
    const run = await runCliAs(fixture.keys.admin.key, address(), 'resources', ['prune']);
    assert.equal(run.status, 0, run.err.join('\n'));
    for (const target of [targets.daily, targets.hourly])
      assert.match(run.text, new RegExp(`dropped rollup ${target}`));
    assert.deepEqual(await rows(`SELECT name FROM list_rollups()`), []);
    assert.deepEqual(
      (await ledger()).map((e) => [e.entry_key, e.state]),
      [
        ['daily', 'pruned'],
        ['hourly', 'pruned'],
      ],
    );
    await check(null);
  });
});
