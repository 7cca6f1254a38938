// Issue 13 (one tenant cannot hide another's data): an audience a view set defined in SQL left out of a range stays
// listed by list_failed_audiences() until a build of the range that holds its rows commits. A retry whose commit
// dies (its statement cancelled while it waits for the partitions' lock: as a crash, it never commits) leaves the record,
// and a later retry brings the rows back; the record was deleted before the rebuild, so nothing retried them. A retry
// brings them back too once a merge has widened the range past the set's source width, or once an unreadable file the
// rebuild reads was contained, and a build of a range whose sources are gone forgets its records.
import assert from 'node:assert/strict';
import { closeSync, mkdtempSync, openSync, readSync, rmSync, statSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { adminKey } from '../support/orrery-process.js';
import type { TestFlightClient } from '../support/flight-client.js';
import {
  clientFor,
  pollUntil,
  postLogRecord,
  sharedEnv,
  startRole,
  startTestPostgres,
  type InProcessOrrery,
  type TestPostgres,
} from './lakehouse-fixtures.js';

const teamA = { name: 'team_a', key: 'team-a-key-0123', audiences: ['team_a'] };
const teamB = { name: 'team_b', key: 'team-b-key-0123', audiences: ['team_b'] };
const keyList = [{ name: adminKey.name, key: adminKey.key, audiences: ['public'] }, teamA, teamB];
// team_b's row joins 100,000 texts of 1,000 bytes into one: 100 MB, past the 48 MiB on its own.
const spreadOptions = `extract_query = $$SELECT l.time AS time_bin, l.audience, (SELECT length(string_agg(repeat('x', 1000), '')) FROM range(CASE WHEN l.audience = 'team_b' THEN 100000 ELSE 2 END)) AS bytes FROM log_entries AS l WHERE insert_time >= '{begin}' AND insert_time < '{end}'$$,
  count_src_query = $$SELECT sum(nb_objects) AS count FROM blocks WHERE insert_time >= '{begin}' AND insert_time < '{end}'$$,
  merge_partitions_query = $$SELECT * FROM {source}$$,
  update_group = 4000, time_column = 'time_bin'`;

describe('issue 13: a failed audience stays listed until a rebuild holding its rows commits', () => {
  let postgres: TestPostgres;
  let lakeDir: string;
  // Built under a memory limit team_b's rows exceed; retried by a second Orrery without it (the fix).
  let tight: InProcessOrrery;
  let roomy: InProcessOrrery;
  let tightAdmin: TestFlightClient;
  let roomyAdmin: TestFlightClient;

  const values = async (c: TestFlightClient, sql: string): Promise<unknown[][]> =>
    (await c.query(sql))
      .toArray()
      .map((row) => Object.values(row.toJSON()).map((v) => (typeof v === 'bigint' ? Number(v) : v)));
  const failed = (): Promise<unknown[][]> =>
    values(roomyAdmin, 'SELECT view_set_name, audience FROM list_failed_audiences()');
  const rows = (set = 'spread'): Promise<unknown[][]> =>
    values(roomyAdmin, `SELECT audience, count(*)::INT FROM ${set} GROUP BY ALL ORDER BY ALL`);
  const retry = async (): Promise<string[]> =>
    (await values(roomyAdmin, 'SELECT msg FROM retry_quarantined_blocks()')).map(([msg]) => String(msg));
  let range: string;
  before(async () => {
    postgres = await startTestPostgres();
    lakeDir = mkdtempSync(join(tmpdir(), 'orrery-failed-audiences-lake-'));
    const env = sharedEnv({
      keys: keyList,
      admins: [adminKey.name],
      connectionString: postgres.connectionString,
      lakeDir,
    });
    tight = await startRole('serve', { ...env, ORRERY_MAINTENANCE_MEMORY_LIMIT: '48MiB' });
    tightAdmin = clientFor(tight.flightPort, keyList[0]);
    await postLogRecord(tight.httpPort, teamA.key, 'a');
    await postLogRecord(tight.httpPort, teamB.key, 'b');
    const minute = Math.floor(Date.now() / 60_000) * 60;
    range = `'${new Date((minute - 60) * 1000).toISOString()}', '${new Date((minute + 120) * 1000).toISOString()}', 180`;
    for (const view of ['blocks', 'processes', 'streams', 'log_entries'])
      await tightAdmin.query(`SELECT * FROM materialize_partitions('${view}', ${range})`);
    await tightAdmin.query(`CREATE MATERIALIZED VIEW spread WITH (${spreadOptions})`);
    // The same set built second by second, its partitions merged by the minute.
    await tightAdmin.query(`CREATE MATERIALIZED VIEW spread_by_second WITH (${spreadOptions},
      source_partition_delta = '1 second', merge_partition_delta = '1 minute')`);
    await tightAdmin.query(`SELECT * FROM materialize_partitions('spread', ${range})`);
    roomy = await startRole('serve', env); // after the sets are defined: it loads them at start
    roomyAdmin = clientFor(roomy.flightPort, keyList[0]);
  });

  after(async () => {
    tightAdmin?.close();
    roomyAdmin?.close();
    await roomy?.close();
    await tight?.close();
    await postgres?.close();
    rmSync(lakeDir, { recursive: true, force: true });
  });

  it('keeps the record when the retry dies before its commit, and a later retry restores the rows', async () => {
    assert.deepEqual(await failed(), [['spread', 'team_b']]);
    assert.deepEqual(await rows(), [['team_a', 1]]);
    // The lock every commit of spread's partitions takes first: the retry's commit waits on it here.
    const holder = await postgres.pool.connect();
    let retry: Promise<unknown> | undefined;
    try {
      await holder.query("SELECT pg_advisory_lock(hashtext('partition:spread:global'))");
      retry = roomyAdmin.query('SELECT * FROM retry_quarantined_blocks()').then(
        () => 'answered',
        (error: Error) => error.message,
      );
      const waiting = await pollUntil(
        "the retry's commit to wait for the lock",
        async () =>
          (
            await holder.query<{ pid: number }>(
              "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND pid <> pg_backend_pid()",
            )
          ).rows,
        (found) => found.length === 1,
        { timeoutMs: 60_000 },
      );
      await holder.query('SELECT pg_cancel_backend($1)', [waiting[0].pid]);
      assert.notEqual(await retry, 'answered');
      assert.ok(
        roomy.lines.some((line) => line.includes('canceling statement due to user request')),
        roomy.lines.join('\n'),
      );
    } finally {
      await holder.query('SELECT pg_advisory_unlock_all()');
      holder.release();
    }
    assert.deepEqual(await failed(), [['spread', 'team_b']], 'the rows are still left out: the record stays');
    assert.deepEqual(await rows(), [['team_a', 1]]);
    await roomyAdmin.query('SELECT * FROM retry_quarantined_blocks()');
    assert.deepEqual(await failed(), []);
    assert.deepEqual(await rows(), [
      ['team_a', 1],
      ['team_b', 1],
    ]);
  });

  it('restores the rows of a failed audience whose range a merge widened, and forgets its record', async () => {
    // The seconds the two records were inserted in, and one on each side: three partitions or more to merge.
    const {
      rows: [inserted],
    } = await postgres.pool.query<{ first: Date; last: Date }>(
      'SELECT min(insert_time) AS first, max(insert_time) AS last FROM blocks',
    );
    const begin = Math.floor(inserted.first.getTime() / 1000) - 1;
    const end = Math.floor(inserted.last.getTime() / 1000) + 2;
    assert.ok(end - begin <= 60, `${begin}..${end}`);
    const seconds = `'${new Date(begin * 1000).toISOString()}', '${new Date(end * 1000).toISOString()}'`;
    await tightAdmin.query(`SELECT * FROM materialize_partitions('spread_by_second', ${seconds}, 1)`);
    assert.deepEqual(await failed(), [['spread_by_second', 'team_b']]);
    const merged = await values(
      tightAdmin,
      `SELECT msg FROM materialize_partitions('spread_by_second', ${seconds}, ${end - begin})`,
    );
    assert.match(String(merged[0][0]), /: merged$/);
    assert.deepEqual(await rows('spread_by_second'), [['team_a', 1]]);
    // The merged partition holds the range whose record is listed: the retry rebuilds it in one-second pieces.
    const messages = await retry();
    assert.ok(
      messages.some((m) => m.startsWith('spread_by_second [') && m.endsWith('): created')),
      messages.join('\n'),
    );
    assert.deepEqual(await failed(), []);
    assert.deepEqual(await rows('spread_by_second'), [
      ['team_a', 1],
      ['team_b', 1],
    ]);
  });

  it('forgets the record once a rebuild that contained an unreadable file holds the rows', async () => {
    await tightAdmin.query(`SELECT * FROM regenerate_partitions('spread', ${range})`);
    assert.deepEqual(await failed(), [['spread', 'team_b']]);
    // log_entries' file overwritten from its fourth byte to its footer: its schema reads, its rows do not.
    const {
      rows: [{ file_path: file }],
    } = await postgres.pool.query<{ file_path: string }>(
      "SELECT file_path FROM lakehouse_partitions WHERE view_set_name = 'log_entries' AND file_path IS NOT NULL",
    );
    const fd = openSync(roomy.store.location(file), 'r+');
    try {
      const size = statSync(roomy.store.location(file)).size;
      const tail = Buffer.alloc(8); // the footer's length, then PAR1
      readSync(fd, tail, 0, 8, size - 8);
      const rowsEnd = size - 8 - tail.readUInt32LE(0);
      writeSync(fd, Buffer.alloc(rowsEnd - 4, 0x5a), 0, rowsEnd - 4, 4);
    } finally {
      closeSync(fd);
    }
    await retry();
    // The rebuild's extract failed on the file, which was contained (its range rebuilt from its source), and ran again.
    assert.deepEqual(await values(roomyAdmin, 'SELECT view_set_name, file_path FROM list_quarantined_partitions()'), [
      ['log_entries', file],
    ]);
    assert.deepEqual(await failed(), []);
    assert.deepEqual(await rows(), [
      ['team_a', 1],
      ['team_b', 1],
    ]);
  });

  it('forgets the records of a range whose build makes no rows (its sources gone)', async () => {
    // As an earlier build left them, for a range whose sources retention has since taken.
    const hourAgo = BigInt(Math.floor(Date.now() / 1000) - 3600) * 1_000_000_000n;
    await postgres.pool.query(
      `INSERT INTO failed_audiences (view_set_name, begin_ns, end_ns, audience, error, orrery_version)
       VALUES ('spread', $1, $2, 'team_b', 'Out of Memory Error', 'earlier')`,
      [String(hourAgo), String(hourAgo + 180_000_000_000n)],
    );
    assert.deepEqual(await failed(), [['spread', 'team_b']]);
    const messages = await retry();
    assert.ok(
      messages.some((m) => m.endsWith('): created')),
      messages.join('\n'),
    );
    assert.deepEqual(await failed(), []);
  });
});
