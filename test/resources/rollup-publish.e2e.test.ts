// Issue 14 item 1: `orrery publish` installs a resources file's rollup entries against a started
// Orrery: a target per stored shape, backfilled one day at a time from newest to oldest and
// recorded in the ledger, the stable view pointed at it, a `from` entry computed from its finer
// target, an exact measure warned about and not installed, a backfill failing midway resumed by
// the next publish, a changed shape installed as a new target, and queries over the table
// rewritten onto the targets (provenance naming them), each answer equal to raw; a target an older
// Orrery installed without arg_max's extreme rebuilt under a new hash by the next publish.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Table } from 'apache-arrow';
import { plainRows } from '../lakehouse/lakehouse-fixtures.js';
import { useOrrery } from '../support/orrery-process.js';
import { publishFolder } from '../support/publish.js';

const provenanceOf = (table: Table): unknown => {
  const text = table.schema.metadata.get('orrery.provenance');
  return text === undefined ? undefined : JSON.parse(text);
};

describe('orrery publish installs rollup entries (issue 14)', () => {
  const fixture = useOrrery({}, 'serve');
  const dir = mkdtempSync(join(tmpdir(), 'orrery-rollup-publish-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  const sql = (text: string): Promise<Table> => fixture.admin.query(text);
  const rows = (text: string) => plainRows(fixture.admin, text);

  const publish = () => publishFolder(fixture.orrery.address, dir);
  const declare = (resources: unknown, file = 'spans'): void => {
    mkdirSync(join(dir, 'resources'), { recursive: true });
    writeFileSync(join(dir, 'resources', `${file}.resources.json`), JSON.stringify({ resources }, null, 2));
  };
  const ledger = async () =>
    (await rows(
      `SELECT entry_key, hash, state, CAST(backfilled_begin AS VARCHAR) AS begin, retired_at IS NOT NULL AS retired
         FROM resource_ledger() WHERE kind = 'rollup' ORDER BY entry_key, retired`,
    )) as Array<{ entry_key: string; hash: string; state: string; begin: string | null; retired: boolean }>;

  const hourly = {
    rollup: {
      table: 'spans_t',
      grain: '1h',
      dimensions: ['svc'],
      measures: {
        n: 'count(*)',
        total: 'sum(dur)',
        mean: 'avg(dur)',
        errors: 'count(*) FILTER (WHERE level >= 17)',
        error_rate: 'count(*) FILTER (WHERE level >= 17) / count(*)',
        services: 'approx_count_distinct(svc)',
        p99: 'approx_quantile(dur, 0.99)',
      },
      retention: '30d',
    },
  };
  const daily = {
    rollup: {
      table: 'spans_t',
      grain: '1d',
      from: 'hourly',
      dimensions: ['svc'],
      measures: { n: 'count(*)', total: 'sum(dur)', mean: 'avg(dur)' },
    },
  };
  const exact = {
    rollup: { table: 'spans_t', grain: '1h', dimensions: ['svc'], measures: { levels: 'count(DISTINCT level)' } },
  };
  // Whole days before today: the window every rewritten query reads.
  let days: { from: string; to: string };
  let oldestHour: string;

  before(async () => {
    await sql(`CREATE TABLE spans_t (ts TIMESTAMPTZ, svc VARCHAR, dur DOUBLE, level INTEGER, tag VARCHAR)
                 WITH (time_column = 'ts')`);
    // About six days of rows up to now, every 41 minutes.
    await sql(`INSERT INTO spans_t SELECT now() - i * INTERVAL '41 minutes', 'svc' || (i % 3), (i % 17) * 1.5,
                 CASE WHEN i % 5 = 0 THEN 17 ELSE 9 END, CAST(i AS VARCHAR) FROM range(0, 210) t(i)`);
    const [window] = (await rows(
      `SELECT CAST(date_trunc('day', now()::TIMESTAMP) - INTERVAL 3 DAY AS VARCHAR) AS "from",
              CAST(date_trunc('day', now()::TIMESTAMP) AS VARCHAR) AS "to",
              CAST(time_bucket(INTERVAL 1 HOUR, min(ts)::TIMESTAMP) AS VARCHAR) AS oldest FROM spans_t`,
    )) as Array<{ from: string; to: string; oldest: string }>;
    days = { from: window.from, to: window.to };
    oldestHour = window.oldest;
  });

  let hourlyTarget = '';
  let dailyTarget = '';

  it('installs a target per entry, backfilled newest day first into the ledger, and points the stable views at them', async () => {
    declare({ hourly, daily, exact });
    const run = await publish();
    assert.equal(run.status, 0, run.err.join('\n'));
    assert.match(
      run.text,
      /^warning: omitted rollup exact on spans_t \(resources\/spans\.resources\.json: exact\): count\(DISTINCT …\) is exact and cannot be stored; use approx_count_distinct$/m,
    );
    hourlyTarget = /^created rollup (rollup_spans_t_hourly__[0-9a-f]{8}) over spans_t \(grain 1h\)$/m.exec(
      run.text,
    )![1];
    dailyTarget = new RegExp(
      `^created rollup (rollup_spans_t_daily__[0-9a-f]{8}) over ${hourlyTarget} \\(grain 1d\\)$`,
      'm',
    ).exec(run.text)![1];
    // Day by day, newest first, down to the oldest row's hour.
    const done = [...run.text.matchAll(/^ {2}hourly: (\d{4}-\d\d-\d\d) done, (\d+) day\(s\) left/gm)];
    assert.ok(done.length >= 6, run.text);
    assert.deepEqual(
      done.map((d) => d[1]),
      [...done.map((d) => d[1])].sort().reverse(),
    );
    assert.equal(done[done.length - 1][1], oldestHour.slice(0, 10));
    assert.equal(done[done.length - 1][2], '0');
    assert.match(run.text, /^served publication 1$/m);
    const entries = await ledger();
    assert.deepEqual(
      entries.map((e) => [e.entry_key, e.state, e.retired]),
      [
        ['daily', 'ready', false],
        ['hourly', 'ready', false],
      ],
    );
    assert.equal(entries.find((e) => e.entry_key === 'hourly')!.begin, `${oldestHour}+00`);
    assert.equal(`rollup_spans_t_hourly__${entries.find((e) => e.entry_key === 'hourly')!.hash}`, hourlyTarget);
    const listed = await rows(`SELECT name, source, grain, retention FROM list_rollups() ORDER BY name`);
    assert.deepEqual(listed, [
      { name: dailyTarget, source: hourlyTarget, grain: '1 day', retention: null },
      { name: hourlyTarget, source: 'spans_t', grain: '01:00:00', retention: '30 days' },
    ]);
  });

  it('the stable view answers each measure by name, equal to the raw aggregate per bucket', async () => {
    const viewed = await rows(
      `SELECT bucket, svc, n, total, round(mean, 9) AS mean, errors, round(error_rate, 9) AS error_rate, services
         FROM rollup_spans_t_hourly ORDER BY bucket, svc`,
    );
    const raw = await rows(
      `SELECT time_bucket(INTERVAL 1 HOUR, ts::TIMESTAMP) AS bucket, svc, count(*) AS n, sum(dur) AS total,
              round(avg(dur), 9) AS mean, count(*) FILTER (WHERE level >= 17) AS errors,
              round(count(*) FILTER (WHERE level >= 17) / count(*), 9) AS error_rate, count(DISTINCT svc) AS services
         FROM spans_t GROUP BY ALL ORDER BY bucket, svc`,
    );
    assert.ok(raw.length > 100);
    assert.deepEqual(viewed, raw);
    // p99 from the sketch: within its 1 % of the exact quantile.
    const far = await rows(
      `SELECT v.bucket FROM rollup_spans_t_hourly v JOIN (
         SELECT time_bucket(INTERVAL 1 HOUR, ts::TIMESTAMP) AS bucket, svc, quantile_disc(dur, 0.99) AS q FROM spans_t GROUP BY ALL) r
         ON v.bucket = r.bucket AND v.svc = r.svc WHERE abs(v.p99 - r.q) > 0.011 * abs(r.q)`,
    );
    assert.deepEqual(far, []);
    assert.deepEqual(
      (await rows(`SELECT count(*) AS n FROM rollup_spans_t_daily`))[0],
      (await rows(`SELECT count(DISTINCT (date_trunc('day', ts::TIMESTAMP), svc)) AS n FROM spans_t`))[0],
    );
  });

  it('a query over the table reads the coarsest target that answers it, provenance naming it, equal to raw', async () => {
    const query = `select svc, count(*) as n, avg(dur) as mean from spans_t
                    where ts >= '${days.from}' and ts < '${days.to}' group by svc order by svc`;
    const table = await sql(query);
    const provenance = provenanceOf(table) as { resources: Array<{ rollup?: { name: string } }> };
    assert.equal(provenance.resources[0].rollup?.name, dailyTarget);
    const explained = await rows(
      `SELECT rollup, decision FROM explain_resources('${query.replaceAll("'", "''")}') ORDER BY rollup`,
    );
    assert.deepEqual(explained, [
      { rollup: dailyTarget, decision: 'read' },
      { rollup: hourlyTarget, decision: 'skipped' },
    ]);
    const raw = query.replace(' from spans_t', ' from (select * from spans_t) as spans_t');
    assert.deepEqual(await rows(query), await rows(raw));
  });

  it('a backfill failing midway keeps its last day in the ledger; the next publish resumes from it', async () => {
    // A row three days back that the new entry's measure cannot read.
    await sql(`INSERT INTO spans_t VALUES (now() - INTERVAL 3 DAY, 'svc0', 1, 9, 'oops')`);
    const [{ day: oopsDay }] = (await rows(
      `SELECT CAST(CAST(ts AS DATE) AS VARCHAR) AS day FROM spans_t WHERE tag = 'oops'`,
    )) as Array<{ day: string }>;
    const tagged = {
      rollup: { table: 'spans_t', grain: '1h', dimensions: ['svc'], measures: { tags: 'sum(CAST(tag AS INTEGER))' } },
    };
    declare({ hourly, daily, exact, tagged });
    const failed = await publish();
    assert.equal(failed.status, 1);
    assert.match(
      failed.err.join('\n'),
      /installing rollup tagged on spans_t failed: .*run orrery publish again to resume/,
    );
    const before = [...failed.text.matchAll(/^ {2}tagged: (\d{4}-\d\d-\d\d) done/gm)].map((d) => d[1]);
    assert.ok(before.length >= 2, failed.text);
    const partial = (await ledger()).find((e) => e.entry_key === 'tagged')!;
    assert.equal(partial.state, 'installing');
    // The ledger holds the last day done, the last line the client read before the failure.
    const ledgered = partial.begin!.slice(0, 10);
    assert.match(partial.begin!, /^\d{4}-\d\d-\d\d 00:00:00\+00$/);
    assert.equal(ledgered, before[before.length - 1]);
    assert.ok(ledgered > oopsDay, `${ledgered} ${oopsDay}`);
    // Meanwhile queries read the target only over the days it holds.
    const explain = async (from: string) =>
      (await rows(
        `SELECT decision, reason FROM explain_resources('select svc, sum(CAST(tag AS INTEGER)) as tags from spans_t
           where ts >= ''${from}'' and ts < ''${days.to}'' group by svc') WHERE rollup LIKE 'rollup_spans_t_tagged__%'`,
      )) as Array<{ decision: string; reason: string | null }>;
    assert.deepEqual(await explain(`${ledgered} 00:00:00`), [{ decision: 'read', reason: null }]);
    assert.deepEqual(await explain(days.from), [
      {
        decision: 'skipped',
        reason: `the window starts at ${days.from.replace(' ', 'T')}Z, before the range the rollup covers (backfilled from ${ledgered}T00:00:00Z so far)`,
      },
    ]);
    await sql(`DELETE FROM spans_t WHERE tag = 'oops'`);
    const resumed = await publish();
    assert.equal(resumed.status, 0, resumed.err.join('\n'));
    assert.doesNotMatch(resumed.text, /^created rollup rollup_spans_t_tagged__/m);
    assert.match(
      resumed.text,
      /^backfill rollup tagged on spans_t into rollup_spans_t_tagged__[0-9a-f]{8}: held from .* \(resumed\)$/m,
    );
    const after = [...resumed.text.matchAll(/^ {2}tagged: (\d{4}-\d\d-\d\d) done/gm)].map((d) => d[1]);
    // No day done before is read again.
    assert.ok(
      after.every((d) => d < ledgered),
      resumed.text,
    );
    assert.equal(after[after.length - 1], oldestHour.slice(0, 10));
    assert.equal((await ledger()).find((e) => e.entry_key === 'tagged')!.state, 'ready');
    assert.deepEqual(
      await rows(`SELECT bucket, svc, tags FROM rollup_spans_t_tagged ORDER BY bucket, svc`),
      await rows(
        `SELECT time_bucket(INTERVAL 1 HOUR, ts::TIMESTAMP) AS bucket, svc, sum(CAST(tag AS INTEGER)) AS tags FROM spans_t GROUP BY ALL ORDER BY bucket, svc`,
      ),
    );
  });

  it('a changed shape is a new target (its dependents too); the stable view moves to it, the old one is retired', async () => {
    const changed = { rollup: { ...hourly.rollup, measures: { ...hourly.rollup.measures, peak: 'max(dur)' } } };
    declare({ hourly: changed, daily, exact });
    const run = await publish();
    assert.equal(run.status, 0, run.err.join('\n'));
    const newHourly = /^created rollup (rollup_spans_t_hourly__[0-9a-f]{8}) over spans_t/m.exec(run.text)![1];
    assert.notEqual(newHourly, hourlyTarget);
    assert.match(run.text, new RegExp(`^created rollup rollup_spans_t_daily__[0-9a-f]{8} over ${newHourly} `, 'm'));
    assert.match(
      run.text,
      new RegExp(`^retired rollup hourly on spans_t \\(${hourlyTarget.slice(-8)}\\) for 7 days$`, 'm'),
    );
    assert.deepEqual(
      await rows(`SELECT max(peak) AS peak FROM rollup_spans_t_hourly`),
      await rows(`SELECT max(dur) AS peak FROM spans_t`),
    );
    const entries = await ledger();
    assert.deepEqual(
      entries.map((e) => [e.entry_key, e.state, e.retired]),
      [
        ['daily', 'ready', false],
        ['daily', 'retired', true],
        ['hourly', 'ready', false],
        ['hourly', 'retired', true],
        ['tagged', 'retired', true],
      ],
    );
  });
  it('a target installed before arg_max was stored with its extreme is rebuilt under a new hash by the next publish, the old one retired', async () => {
    const { metadata } = fixture.orrery;
    await sql(`CREATE TABLE calls_t (ts TIMESTAMP, svc VARCHAR, host VARCHAR, dur DOUBLE) WITH (time_column = 'ts')`);
    // Every 7 minutes over the 4 days before now, each with its own dur (arg_max's choice among ties is arbitrary);
    // every 11th without host, which arg_max(host, dur) leaves out.
    await sql(`INSERT INTO calls_t SELECT now()::TIMESTAMP - i * INTERVAL '7 minutes', 'svc' || (i % 2),
                 CASE WHEN i % 11 = 0 THEN NULL ELSE 'h' || (i % 7) END, (i * 7919) % 10007 FROM range(0, 820) t(i)`);
    const slow = {
      rollup: {
        table: 'calls_t',
        grain: '1h',
        dimensions: ['svc'],
        measures: { n: 'count(*)', slowest_host: 'arg_max(host, dur)' },
      },
    };
    // What an Orrery before 9ebfda0 installed for this entry: its target under the hash it gave the declaration,
    // storing arg_max without the extreme it chose by, its ledger row ready and its stable view pointed at it.
    const oldHash = 'e01dcb64';
    const oldTarget = `rollup_calls_t_slow__${oldHash}`;
    await sql(`SELECT create_rollup('${oldTarget}', 'calls_t', INTERVAL '1 hour',
                 select_list => 'svc, count(*) AS n, arg_max(host, dur) AS slowest_host', group_by => 'svc')`);
    await sql(`SELECT refresh_rollup('${oldTarget}')`);
    await metadata.query(
      `INSERT INTO rollup_aliases (name, target, select_list) VALUES ('rollup_calls_t_slow', $1, 'bucket, svc, n, slowest_host, audience')`,
      [oldTarget],
    );
    await metadata.query(
      `INSERT INTO resource_ledger (kind, physical_table, entry_key, hash, declaration, state, cutover, backfilled_begin, backfilled_end)
       VALUES ('rollup', 'calls_t', 'slow', $1, $2, 'ready', now(), now() - INTERVAL '5 days', now())`,
      [
        oldHash,
        JSON.stringify({
          ...slow.rollup,
          key: 'slow',
          file: 'resources/calls.resources.json',
          kind: 'rollup',
          physical: 'calls_t',
          async: false,
          grainSeconds: 3600,
          measures: Object.entries(slow.rollup.measures).map(([name, expression]) => ({ name, expression })),
          retention: null,
          retentionSeconds: null,
          from: null,
          unsupported: null,
          fromShape: null,
        }),
      ],
    );
    const query = `select svc, arg_max(host, dur) as slowest, count(*) as n from calls_t
                    where ts >= '${days.from}' and ts < '${days.to}' group by svc order by svc`;
    const raw = query.replace(' from calls_t', ' from (select * from calls_t) as calls_t');
    // The old target answers no arg_max across its hours: the query reads raw, saying why.
    assert.match(
      JSON.stringify(provenanceOf(await sql(query))),
      new RegExp(`"name":"${oldTarget}".*is stored without max\\(dur\\)`),
    );

    // A publish of the same entry: a new target, backfilled, the stable view moved to it, the old one retired.
    declare({ slow }, 'calls');
    const run = await publish();
    assert.equal(run.status, 0, run.err.join('\n'));
    const newTarget = /^created rollup (rollup_calls_t_slow__[0-9a-f]{8}) over calls_t \(grain 1h\)$/m.exec(
      run.text,
    )?.[1];
    assert.ok(newTarget, run.text);
    assert.notEqual(newTarget, oldTarget);
    assert.match(run.text, /^ {2}slow: \d{4}-\d\d-\d\d done, 0 day\(s\) left/m);
    assert.match(run.text, new RegExp(`^retired rollup slow on calls_t \\(${oldHash}\\) for 7 days$`, 'm'));
    assert.deepEqual(
      (await ledger()).filter((e) => e.entry_key === 'slow').map((e) => [e.hash, e.state, e.retired]),
      [
        [newTarget.slice(-8), 'ready', false],
        [oldHash, 'retired', true],
      ],
    );
    assert.deepEqual(
      (await metadata.query("SELECT target FROM rollup_aliases WHERE name = 'rollup_calls_t_slow'")).rows,
      [{ target: newTarget }],
    );
    // Days of hours merged by the extremes stored beside arg_max: the new target answers, equal to raw.
    const table = await sql(query);
    const provenance = provenanceOf(table) as { resources: Array<{ rollup?: { name: string } }> };
    assert.equal(provenance.resources[0].rollup?.name, newTarget);
    const answered = await rows(query);
    assert.equal(answered.length, 2);
    assert.deepEqual(answered, await rows(raw));
  });
});
