// Lakehouse functions whose arguments come from earlier answers (a process id, a partition file), which
// the case files of test/sql cannot express; everything else about them is in test/sql/procedures.test.
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { logsRequest, postOtlp } from '../support/otlp.js';
import { adminKey, readerKey, useOrrery } from '../support/orrery-process.js';
import type { TestFlightClient } from '../support/flight-client.js';

const teamKey = { name: 'team_x', key: 'team-x-key-0123' };
const keys = JSON.stringify([adminKey, { ...readerKey, audiences: ['public'] }, { ...teamKey, audiences: ['team_x'] }]);

const iso = (seconds: number): string => new Date(seconds * 1000).toISOString();
const messages = async (c: TestFlightClient, sql: string): Promise<string[]> =>
  [...(await c.query(sql)).getChild('msg')!] as string[];
const count = async (c: TestFlightClient, sql: string): Promise<number> =>
  Number((await c.query(sql)).getChildAt(0)!.get(0));

describe('admin functions', () => {
  const fixture = useOrrery({ MICROMEGAS_API_KEYS: keys, ORRERY_RETIRE_DELAY_SECONDS: '0' }, 'serve');
  let admin: TestFlightClient;
  let reader: TestFlightClient;

  before(async () => {
    ({ admin, reader } = fixture);
    const port = fixture.orrery.httpPort;
    const logs = Array.from({ length: 5 }, (_, i) => ({
      time: 1704164645000000000n + BigInt(i) * 1_000_000n,
      severity: 9,
      body: `message ${i}`,
    }));
    assert.equal(
      (await postOtlp(port, 'logs', adminKey.key, logsRequest({ 'service.name': 'billing' }, logs.slice(0, 2)))).status,
      200,
    );
    assert.equal(
      (await postOtlp(port, 'logs', teamKey.key, logsRequest({ 'service.name': 'secret' }, logs))).status,
      200,
    );
    const begin = Math.floor(Date.now() / 60_000) * 60 - 60;
    for (const view of ['processes', 'log_entries', 'log_stats']) {
      await messages(
        admin,
        `SELECT * FROM materialize_partitions('${view}', '${iso(begin)}', '${iso(begin + 180)}', 180)`,
      );
    }
  });

  it('a foreign process looks like no process at all to view_instance and process_spans', async () => {
    const secret = String(
      (await admin.query("SELECT process_id FROM processes WHERE audience = 'team_x'")).getChildAt(0)!.get(0),
    );
    assert.equal(await count(admin, `SELECT count(*) FROM view_instance('log_entries', '${secret}')`), 5);
    assert.equal(await count(reader, `SELECT count(*) FROM view_instance('log_entries', '${secret}')`), 0);
    assert.equal(await count(reader, `SELECT count(*) FROM process_spans('${secret}', 'both')`), 0);
  });

  it('retire_partition_by_file retires exactly the partition of that file', async () => {
    const file = String(
      (await admin.query("SELECT file_path FROM list_partitions() WHERE view_set_name = 'log_stats'"))
        .getChildAt(0)!
        .get(0),
    );
    assert.equal(await count(admin, 'SELECT sum(count) FROM log_stats'), 7);
    assert.deepEqual(await messages(admin, `SELECT * FROM retire_partition_by_file('${file}')`), [
      `SUCCESS: retired ${file}`,
    ]);
    assert.equal(await count(admin, "SELECT count(*) FROM list_partitions() WHERE view_set_name = 'log_stats'"), 0);
    assert.equal(await count(admin, 'SELECT count(*) FROM log_stats'), 0);
    assert.equal(await count(admin, 'SELECT count(*) FROM log_entries'), 7);
  });

  it('a partition another process registered first makes materialize_partitions fail as UNAVAILABLE, not INTERNAL', async () => {
    const db = fixture.orrery.metadata;
    const [{ file_schema_hash: hash }] = (
      await db.query<{ file_schema_hash: Buffer }>(
        "SELECT file_schema_hash FROM lakehouse_partitions WHERE view_set_name = 'log_entries' LIMIT 1",
      )
    ).rows;
    const begin = Math.floor(Date.now() / 60_000) * 60 + 600; // nothing there yet
    // Hold the lock commits take, so the call reads no overlap, then waits to commit; meanwhile another
    // process's partition lands across its range.
    let call: Promise<unknown> | undefined;
    await db.transaction(async (tx) => {
      await tx.query("SELECT pg_advisory_xact_lock(hashtext('partition:log_entries:global'))");
      call = admin.query(
        `SELECT * FROM materialize_partitions('log_entries', '${iso(begin)}', '${iso(begin + 60)}', 60)`,
      );
      call.catch(() => undefined);
      for (let waited = 0; ; waited += 50) {
        const { rows } = await db.query("SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted");
        if (rows.length > 0) break;
        assert.ok(waited < 30_000, 'materialize_partitions never waited for the lock');
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      await tx.query(
        `INSERT INTO lakehouse_partitions (view_set_name, view_instance_id, begin_insert_time, end_insert_time, updated,
           file_schema_hash, source_data_hash, num_rows)
         VALUES ('log_entries', 'global', $1, $2, now(), $3, '\\x0000000000000000', 0)`,
        [iso(begin + 30), iso(begin + 90), hash],
      );
    });
    await assert.rejects(call!, {
      code: 14,
      details: new RegExp(
        `log_entries \\[${iso(begin).slice(0, 19)}.*another process registered a partition overlapping this range first`,
      ),
    });
    await db.query("DELETE FROM lakehouse_partitions WHERE view_set_name = 'log_entries' AND begin_insert_time = $1", [
      iso(begin + 30),
    ]);
  });
});
