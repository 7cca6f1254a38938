// A read of log_stats leaves the set's merge out when the catalog proves it changes no row (each partition
// holds a key once, and no two partitions' time_bin ranges meet), and merges when a time_bin is in two
// partitions. Either way each key reads the rows of its own audiences only, and the answer is what the
// set's extract computes over log_entries. Real server, Postgres, DuckDB and Flight SQL client over a socket;
// partitions made one insert range at a time by materialize_partitions.
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { TestFlightClient } from '../support/flight-client.js';
import { logsRequest, postOtlp } from '../support/otlp.js';
import { adminKey, readerKey, useOrrery } from '../support/orrery-process.js';

const teamKey = { name: 'team_x', key: 'team-x-key-0123', audiences: ['team_x'] };
const second = 1_000_000_000n;
/** 2024-01-02T03:04:05Z, in minute M1; M2 is ten minutes later. */
const m1 = 1704164645n * second;
const m2 = m1 + 600n * second;
const views = ['blocks', 'processes', 'streams', 'log_entries', 'log_stats'];

/** log_stats as the set's extract computes it from log_entries, for the caller. */
const truth = `SELECT date_bin('1 minute', time) AS time_bin, process_id, level, target, count(*) AS count, audience
  FROM log_entries GROUP BY ALL ORDER BY ALL`;
const stats = 'SELECT time_bin, process_id, level, target, count, audience FROM log_stats ORDER BY ALL';

describe('log_stats read without its merge when no key is in two partitions', () => {
  const fixture = useOrrery(
    { MICROMEGAS_API_KEYS: JSON.stringify([adminKey, { ...readerKey, audiences: ['public'] }, teamKey]) },
    'serve',
  );
  let admin: TestFlightClient;
  let reader: TestFlightClient;
  let team: TestFlightClient;
  /** Where the next insert range starts: the end of the last one materialized. */
  let mark = 0;

  const rows = async (client: TestFlightClient, sql: string): Promise<string[]> =>
    (await client.query(sql))
      .toArray()
      .map((row) => JSON.stringify(row.toJSON(), (_, v: unknown) => (typeof v === 'bigint' ? String(v) : v)));
  /** Whether the plan of a read of log_stats aggregates (the set's merge): EXPLAIN, as an admin. */
  const merges = async (): Promise<boolean> =>
    (await rows(admin, 'EXPLAIN SELECT * FROM log_stats')).some((row) => row.includes('GROUP_BY'));
  /** Posts each key's records, then materializes the insert range since the last round as one partition per set. */
  const round = async (posts: [key: string, times: bigint[]][]): Promise<void> => {
    for (const [key, times] of posts) {
      const logs = times.map((time, i) => ({ time, severity: 9, body: `b${i}`, target: 'skip' }));
      const body = logsRequest({ 'service.name': `svc-${key.slice(0, 4)}` }, logs);
      assert.equal((await postOtlp(fixture.orrery.httpPort, 'logs', key, body)).status, 200);
    }
    const end = (Math.floor(Date.now() / 1000) + 2) * 1000;
    // What the next round posts is inserted after this range.
    await sleep(end - Date.now() + 20);
    for (const view of views) {
      const range = `'${new Date(mark).toISOString()}', '${new Date(end).toISOString()}', ${(end - mark) / 1000}`;
      await admin.query(`SELECT * FROM materialize_partitions('${view}', ${range})`);
    }
    mark = end;
  };
  const sameAsExtract = async (): Promise<void> => {
    for (const client of [admin, reader, team]) assert.deepEqual(await rows(client, stats), await rows(client, truth));
  };

  before(async () => {
    ({ admin, reader } = fixture);
    team = new TestFlightClient(fixture.orrery.address);
    team.headers.authorization = `Bearer ${teamKey.key}`;
    mark = (Math.floor(Date.now() / 1000) - 5) * 1000;
  });

  it('partitions whose time_bins do not meet are read as they are, filtered by audience', async () => {
    await round([
      [readerKey.key, [m1, m1 + second, m1 + 2n * second]],
      [teamKey.key, [m1, m1 + second]],
    ]);
    await round([[readerKey.key, [m2, m2 + second]]]);
    assert.equal(await merges(), false);
    await sameAsExtract();
    const audiences = async (client: TestFlightClient): Promise<string[]> =>
      rows(client, 'SELECT DISTINCT audience FROM log_stats ORDER BY 1');
    assert.deepEqual(await audiences(reader), ['{"audience":"public"}']);
    // Every key reads public's rows too.
    assert.deepEqual(await audiences(team), ['{"audience":"public"}', '{"audience":"team_x"}']);
    assert.deepEqual(await rows(reader, 'SELECT sum(count)::BIGINT AS n FROM log_stats'), ['{"n":"5"}']);
  });

  it('partitions sharing a time_bin are merged: one row per key', async () => {
    await round([[readerKey.key, [m1 + 3n * second, m1 + 4n * second]]]);
    await sameAsExtract();
    assert.equal(await merges(), true);
    assert.deepEqual(await rows(reader, 'SELECT sum(count)::BIGINT AS n FROM log_stats'), ['{"n":"7"}']);
  });
});
