// Issue 17, item 12: a seeded random interleaving of current and late inserts (by two keys),
// updates that move rows between buckets, deletes, truncates, refreshes of a rollup and of the
// rollup built on it, and refreshes killed mid-way (the server running them is SIGKILLed), checking
// after every step the contract: each rollup answers exactly the aggregation of its source, for an
// admin and for a key that reads one audience.
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import {
  OrreryChild,
  clientFor,
  plainRows,
  scalar,
  sleep,
  useLakeOrrery,
  type TestKey,
} from '../lakehouse/lakehouse-fixtures.js';
import type { TestFlightClient } from '../support/flight-client.js';

const admin: TestKey = { name: 'admin', key: 'admin-key-rollups-random-1', audiences: ['ops'] };
const team: TestKey = { name: 'team', key: 'team-key-rollups-random-01', audiences: ['team'] };

const steps = Number(process.env.ORRERY_ROLLUP_RANDOM_STEPS ?? 40);
const seed = Number(process.env.ORRERY_ROLLUP_RANDOM_SEED ?? 17);

/** mulberry32: a small seeded generator, so a failing run can be repeated with its seed. */
function generator(start: number): () => number {
  let state = start >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const hourlyOfSource = `SELECT time_bucket(INTERVAL 1 HOUR, ts::TIMESTAMP) AS bucket, k, count(*) AS n, sum(v) AS s,
  min(v) AS lo, max(v) AS hi, audience FROM rnd GROUP BY ALL`;
const dailyOfSource = `SELECT time_bucket(INTERVAL 1 DAY, ts::TIMESTAMP) AS bucket, k, count(*) AS n, sum(v) AS s,
  min(v) AS lo, max(v) AS hi, audience FROM rnd GROUP BY ALL`;

describe('rollups under a random interleaving of writes and refreshes (issue 17)', () => {
  // Queries only: no daemon, so every refresh is one the test runs.
  const lake = useLakeOrrery({ keys: [admin, team] });
  let asAdmin: TestFlightClient;
  let asTeam: TestFlightClient;

  before(async () => {
    asAdmin = lake.client(admin);
    asTeam = lake.client(team);
    await asAdmin.updateCount(`CREATE TABLE rnd (ts TIMESTAMP, k VARCHAR, v BIGINT) WITH (time_column = 'ts')`);
    await asAdmin.query(
      `select create_rollup('rnd_hourly', 'rnd', interval '1 hour', select_list => 'k, count(*) as n, sum(v) as s, min(v) as lo, max(v) as hi', group_by => 'k')`,
    );
    await asAdmin.query(
      `select create_rollup('rnd_daily', 'rnd_hourly', interval '1 day', select_list => 'k, sum(n) as n, sum(s) as s, min(lo) as lo, max(hi) as hi', group_by => 'k')`,
    );
  });

  /** The rows in one side and not the other, both ways, in one statement (one snapshot). */
  const differences = (rollup: string, source: string): string =>
    `SELECT (SELECT count(*) FROM (FROM ${rollup} EXCEPT ALL ${source})) + (SELECT count(*) FROM (${source} EXCEPT ALL FROM ${rollup}))`;

  const check = async (step: string): Promise<void> => {
    for (const client of [asAdmin, asTeam]) {
      const both = `SELECT (${differences('rnd_hourly', hourlyOfSource)}) + (${differences('rnd_daily', dailyOfSource)})`;
      if ((await scalar(client, both)) === 0) continue;
      for (const [rollup, source] of [
        ['rnd_hourly', hourlyOfSource],
        ['rnd_daily', dailyOfSource],
      ]) {
        const order = ' ORDER BY bucket, k, audience';
        assert.deepEqual(
          await plainRows(client, `SELECT * FROM ${rollup}${order}`),
          await plainRows(client, `SELECT * FROM (${source})${order}`),
          `${rollup} after ${step} (seed ${seed})`,
        );
      }
    }
  };

  it(`keeps the contract after each of ${steps} steps`, async () => {
    const random = generator(seed);
    const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)];
    const int = (below: number): number => Math.floor(random() * below);
    let killed = 0;
    for (let step = 0; step < steps; step++) {
      const roll = random();
      const writer = random() < 0.3 ? asTeam : asAdmin;
      let done: string;
      if (step === Math.floor(steps / 3) || step === Math.floor((2 * steps) / 3)) {
        // A refresh in another server, killed mid-way: nothing of it may show.
        const child = new OrreryChild(`refresher ${killed}`, 'serve', lake.env);
        await child.waitForLine(/Flight SQL listening on [^:]+:(\d+)/, 60_000);
        const port = Number(
          /Flight SQL listening on [^:]+:(\d+)/.exec(child.output.find((l) => /Flight SQL listening/.test(l))!)![1],
        );
        const refresher = clientFor(port, admin);
        const call = refresher
          .query(`select refresh_rollup('${pick(['rnd_hourly', 'rnd_daily'])}')`)
          .catch(() => undefined);
        await sleep(int(400));
        await child.stop('SIGKILL');
        await call;
        refresher.close();
        killed++;
        done = 'a killed refresh';
      } else if (roll < 0.25) {
        const rows = Array.from(
          { length: 1 + int(4) },
          () => `(now() - INTERVAL ${int(90)} MINUTE, '${pick(['a', 'b', 'c'])}', ${int(100)})`,
        );
        await writer.updateCount(`INSERT INTO rnd VALUES ${rows.join(', ')}`);
        done = 'a current insert';
      } else if (roll < 0.5) {
        const rows = Array.from(
          { length: 1 + int(3) },
          () => `(now() - INTERVAL ${int(4 * 24 * 60)} MINUTE, '${pick(['a', 'b', 'c'])}', ${int(100)})`,
        );
        await writer.updateCount(`INSERT INTO rnd VALUES ${rows.join(', ')}`);
        done = 'a late insert';
      } else if (roll < 0.6) {
        await asAdmin.updateCount(
          `UPDATE rnd SET ts = ts - INTERVAL ${int(600)} MINUTE, v = v + 1 WHERE v % 9 = ${int(9)}`,
        );
        done = 'an update';
      } else if (roll < 0.68) {
        await asAdmin.updateCount(`DELETE FROM rnd WHERE v % 13 = ${int(13)}`);
        done = 'a delete';
      } else if (roll < 0.7) {
        await asAdmin.updateCount(`TRUNCATE rnd`);
        done = 'a truncate';
      } else {
        const rollup = pick(['rnd_hourly', 'rnd_daily']);
        await asAdmin.query(`select refresh_rollup('${rollup}')`);
        done = `a refresh of ${rollup}`;
      }
      await check(`step ${step}: ${done}`);
    }
    // The rollups still refresh after all that (no lock left behind by the killed servers).
    await asAdmin.query(`select refresh_rollup('rnd_hourly')`);
    await asAdmin.query(`select refresh_rollup('rnd_daily')`);
    await check('the last refreshes');
  });
});
