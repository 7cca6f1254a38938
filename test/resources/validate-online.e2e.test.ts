// `orrery resources validate --online` against a started Orrery (issue 14 item 5): each ready rollup's
// stored rows compared with its raw rows over the most recent complete buckets; a mismatch is an
// error (exit 2), rollups not ready are reported as skipped.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { runResourcesCli } from '../../src/resources/index.js';
import { adminKey, useOrrery } from '../support/orrery-process.js';

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

  it('refuses --rollup-window without --online, and a window that is not a duration', async () => {
    assert.equal((await run(['validate', '--dir', dir, '--rollup-window', '1h'])).status, 2);
    const bad = await run(['validate', '--dir', dir, '--online', '--rollup-window', 'soon']);
    assert.equal(bad.status, 2);
    assert.match(bad.err[0], /--rollup-window 'soon' is not a duration such as 1h/);
  });
});
