// `orrery resources validate --online` against a started Orrery (issue 14 item 5): each ready rollup's
// stored rows compared with its raw rows over the most recent complete buckets; a mismatch is an
// error (exit 2), rollups not ready, no longer over the table they were made over, still backfilled short
// of the window or stale over all of it are reported as skipped, each with its reason.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { runResourcesCli } from '../../src/resources/index.js';
import { adminKey, useOrrery } from '../support/orrery-process.js';
import { publishFolder } from '../support/publish.js';

describe('orrery resources validate --online (issue 14)', () => {
  const fixture = useOrrery({}, 'serve');
  const dir = mkdtempSync(join(tmpdir(), 'orrery-validate-online-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  mkdirSync(join(dir, 'resources'), { recursive: true });
  writeFileSync(join(dir, 'resources', 'none.resources.json'), JSON.stringify({ resources: {} }));

  const run = async (args: string[]) => {
    const out: string[] = [];
    const err: string[] = [];
    const env = { ORRERY_FLIGHT_SQL_ADDR: fixture.orrery.address, ORRERY_API_KEY: adminKey.key };
    const status = await runResourcesCli(args, { env, out: (l) => out.push(l), err: (l) => err.push(l) });
    return { status, out, err };
  };

  it('reports a rollup equal to raw as ok and a rollup not refreshed as skipped (exit 0)', async () => {
    const sql = (text: string) => fixture.admin.query(text);
    await sql(`CREATE TABLE recent (ts TIMESTAMPTZ, host VARCHAR, cpu DOUBLE) WITH (time_column = 'ts')`);
    await sql(`INSERT INTO recent SELECT now() - i * INTERVAL '7 minutes', CASE WHEN i % 2 = 0 THEN 'a' ELSE 'b' END,
                 (i % 5)::DOUBLE FROM range(1, 60) t(i)`);
    await sql(`select snouttime.create_rollup('recent_hourly', 'recent', interval '1 hour',
                 select_list => 'host, count(*) as n, sum(cpu) as s, snouttime.percentile_sketch(cpu) as p', group_by => 'host')`);
    await sql(
      `select snouttime.create_rollup('recent_later', 'recent', interval '1 hour', select_list => 'count(*) as n')`,
    );
    await sql(`select snouttime.refresh_rollup('recent_hourly')`);
    const { status, out, err } = await run(['validate', '--dir', dir, '--online', '--rollup-window', '3h']);
    assert.equal(status, 0, err.join('\n'));
    assert.equal(out[0], '0 valid entries, 0 error(s), 0 warning(s).');
    assert.match(out[1], /^rollup recent_hourly: ok \([1-9]\d* buckets from \S+ \S+ to \S+ \S+\)$/);
    assert.equal(out[2], 'rollup recent_later: skipped: not ready: the rollup has not been refreshed yet');
    assert.equal(out[3], '2 rollup(s) checked online, 0 mismatch(es).');
  });

  it('fails on a rollup whose stored values are not what its raw rows give (exit 2)', async () => {
    // random() per row: the refresh stored one draw, the check makes another.
    await fixture.admin.query(
      `select snouttime.create_rollup('recent_noisy', 'recent', interval '1 hour', select_list => 'sum(cpu * random()) as noisy')`,
    );
    await fixture.admin.query(`select snouttime.refresh_rollup('recent_noisy')`);
    const { status, err } = await run(['validate', '--dir', dir, '--online']);
    assert.equal(status, 2);
    assert.equal(err.length, 1);
    assert.match(
      err[0],
      /^rollup recent_noisy: error: mismatch from .* to .*: \[\{"bucket":.*"noisy \(rollup\)":.*"noisy \(raw\)":/,
    );
  });

  /**
   * The start of the hour the case starts in (UTC, as DuckDB writes a TIMESTAMP): its window ends there, however long
   * it runs (the server's own end, the bucket of 5 minutes before now, moves by an hour at hh:05:00).
   */
  const hourNow = (): string => utc(Math.floor(Date.now() / 3_600_000) * 3_600_000);
  const utc = (ms: number): string => new Date(ms).toISOString().slice(0, 19).replace('T', ' ');
  const hourBefore = (time: string): string => utc(Date.parse(`${time.replace(' ', 'T')}Z`) - 3_600_000);

  /** The line validate --online prints for one rollup (a skip or an ok is on stdout), over the hour before `end`. */
  const lineOf = async (rollup: string, end: string): Promise<string | undefined> =>
    (await run(['validate', '--dir', dir, '--online', '--rollup-window', '1h', '--rollup-window-end', end])).out.find(
      (l) => l.startsWith(`rollup ${rollup}: `),
    );

  it('skips a rollup whose every bucket of the window changed since its refresh as stale', async () => {
    const end = hourNow();
    const sql = (text: string) => fixture.admin.query(text);
    await sql(`CREATE TABLE late_t (ts TIMESTAMPTZ, v DOUBLE) WITH (time_column = 'ts')`);
    await sql(`INSERT INTO late_t SELECT now() - i * INTERVAL '10 minutes', i FROM range(1, 20) t(i)`);
    await sql(
      `select snouttime.create_rollup('late_hourly', 'late_t', interval '1 hour', select_list => 'sum(v) as s')`,
    );
    await sql(`select snouttime.refresh_rollup('late_hourly')`);
    // A 1h window of an hourly rollup is one bucket: the hour before `end`, below the watermark (now's hour).
    assert.equal(
      await lineOf('late_hourly', end),
      `rollup late_hourly: ok (1 buckets from ${hourBefore(end)} to ${end})`,
    );
    await sql(`INSERT INTO late_t VALUES (TIMESTAMP '${end}' - INTERVAL '30 minutes', 1000)`);
    assert.equal(
      await lineOf('late_hourly', end),
      'rollup late_hourly: skipped: stale: every bucket of the window has changed since the last refresh',
    );
  });

  it('skips a rollup whose table is no longer the one it was made over as hash changed', async () => {
    await fixture.admin.query(
      `select snouttime.create_rollup('recent_moved', 'recent', interval '1 hour', select_list => 'sum(cpu) as s')`,
    );
    await fixture.admin.query(`select snouttime.refresh_rollup('recent_moved')`);
    assert.match((await lineOf('recent_moved', hourNow()))!, /^rollup recent_moved: ok \(/);
    // The server refuses every change to a column a rollup reads, so a rollup over other columns is one an older
    // Orrery made before a column was retyped, or one over a lake changed behind the server: its hash is another.
    await fixture.orrery.metadata.query(
      `UPDATE rollup_definitions SET source_hash = substr(md5('cpu BIGINT'), 1, 16) WHERE name = 'recent_moved'`,
    );
    assert.equal(
      await lineOf('recent_moved', hourNow()),
      'rollup recent_moved: skipped: hash changed: the table is not the one the rollup was created over',
    );
  });

  it('skips a published rollup still being backfilled, holding no bucket of the window, as backfilling', async () => {
    const end = hourNow();
    const pack = mkdtempSync(join(tmpdir(), 'orrery-validate-online-pack-'));
    after(() => rmSync(pack, { recursive: true, force: true }));
    await fixture.admin.query(`CREATE TABLE tags_t (ts TIMESTAMPTZ, tag VARCHAR) WITH (time_column = 'ts')`);
    // A tag that is no number 10 minutes before `end`: the backfill stops at the day holding it, so the target holds
    // buckets from `end` on at the earliest (from the hour it is made in, when that day is the first it backfills).
    await fixture.admin.query(`INSERT INTO tags_t SELECT now() - i * INTERVAL '20 minutes', CAST(i AS VARCHAR)
                                 FROM range(0, 12) t(i) UNION ALL SELECT TIMESTAMP '${end}' - INTERVAL '10 minutes', 'oops'`);
    mkdirSync(join(pack, 'resources'));
    const tagged = { rollup: { table: 'tags_t', grain: '1h', measures: { tags: 'sum(CAST(tag AS INTEGER))' } } };
    writeFileSync(join(pack, 'resources', 'tags.resources.json'), JSON.stringify({ resources: { tagged } }));
    const published = await publishFolder(fixture.orrery.address, pack);
    assert.equal(published.status, 1, published.text);
    const target = /^created rollup (rollup_tags_t_tagged__[0-9a-f]{8}) over tags_t/m.exec(published.text)![1];
    const { rows } = await fixture.orrery.metadata.query<{ covered_from: string }>(
      'SELECT covered_from FROM rollup_definitions WHERE name = $1',
      [target],
    );
    assert.match(rows[0].covered_from, /^\d{4}-\d\d-\d\d \d\d:00:00$/);
    assert.equal(
      await lineOf(target, end),
      `rollup ${target}: skipped: backfilling: the rollup holds buckets from ${rows[0].covered_from} on, after the window`,
    );
  });

  it('refuses --rollup-window without --online, and a window that is not a duration', async () => {
    assert.equal((await run(['validate', '--dir', dir, '--rollup-window', '1h'])).status, 2);
    const bad = await run(['validate', '--dir', dir, '--online', '--rollup-window', 'soon']);
    assert.equal(bad.status, 2);
    assert.match(bad.err[0], /--rollup-window 'soon' is not a duration such as 1h/);
  });
});
