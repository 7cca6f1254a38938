// Admin procedures and lakehouse table functions, over Flight SQL, on a server without a
// daemon so that every partition here is made by the calls under test.
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { logsRequest, postOtlp } from '../support/otlp.js';
import { adminKey, readerKey, useOrrery } from '../support/orrery-process.js';
import type { TestFlightClient } from '../support/flight-client.js';

const teamKey = { name: 'team_x', key: 'team-x-key-0123' };
const keys = JSON.stringify([adminKey, { ...readerKey, audiences: ['public'] }, { ...teamKey, audiences: ['team_x'] }]);

const iso = (seconds: number): string => new Date(seconds * 1000).toISOString();
const messages = async (c: TestFlightClient, sql: string): Promise<string[]> => [...(await c.query(sql)).getChild('msg')!] as string[];
const count = async (c: TestFlightClient, sql: string): Promise<number> => Number((await c.query(sql)).getChildAt(0)!.get(0));

describe('admin functions', () => {
  const fixture = useOrrery({ MICROMEGAS_API_KEYS: keys, ORRERY_RETIRE_DELAY_SECONDS: '0' }, 'serve');
  let admin: TestFlightClient;
  let reader: TestFlightClient;
  let begin: number;
  let end: number;
  const logs = Array.from({ length: 30 }, (_, i) => ({
    time: 1704164645000000000n + BigInt(i) * 1_000_000n,
    severity: i % 3 === 0 ? 17 : 9,
    body: `message ${i}`,
    target: 'billing',
  }));

  before(async () => {
    ({ admin, reader } = fixture);
    const port = fixture.orrery.httpPort;
    assert.equal((await postOtlp(port, 'logs', adminKey.key, logsRequest({ 'service.name': 'billing' }, logs))).status, 200);
    assert.equal((await postOtlp(port, 'logs', teamKey.key, logsRequest({ 'service.name': 'secret' }, logs.slice(0, 5)))).status, 200);
    const now = Math.floor(Date.now() / 1000);
    begin = Math.floor(now / 60) * 60 - 60;
    end = begin + 180;
  });

  const materialize = async (view: string): Promise<string[]> =>
    messages(admin, `SELECT * FROM materialize_partitions('${view}', '${iso(begin)}', '${iso(end)}', 180)`);

  it('materialize_partitions builds each view set in turn, streaming one message per range', async () => {
    for (const view of ['blocks', 'processes', 'streams', 'log_entries']) {
      assert.deepEqual(await materialize(view), [`${view} [${iso(begin).replace('.000Z', '.000000000Z')}, ${iso(end).replace('.000Z', '.000000000Z')}): created`]);
    }
    assert.equal(await count(admin, 'SELECT count(*) FROM log_entries'), 35);
    assert.deepEqual(await materialize('log_entries'), [`log_entries [${iso(begin).replace('.000Z', '.000000000Z')}, ${iso(end).replace('.000Z', '.000000000Z')}): up to date`]);
    await materialize('log_stats');
    assert.equal(await count(admin, 'SELECT sum(count) FROM log_stats'), 35);
    assert.equal(await count(admin, "SELECT sum(count) FROM log_stats WHERE level = 2"), 12);
  });

  it('merges smaller partitions whose source counts still match into one', async () => {
    await messages(admin, `SELECT * FROM retire_partitions('blocks', 'global', '${iso(begin)}', '${iso(end)}')`);
    const pieces = await messages(admin, `SELECT * FROM materialize_partitions('blocks', '${iso(begin)}', '${iso(end)}', 60)`);
    assert.deepEqual(pieces.map((m) => m.slice(m.lastIndexOf(':') + 2)), ['created', 'created', 'created']);
    assert.equal(await count(admin, "SELECT count(*) FROM list_partitions() WHERE view_set_name = 'blocks'"), 3);
    const [merged] = await materialize('blocks');
    assert.match(merged, /: merged$/);
    assert.equal(await count(admin, "SELECT count(*) FROM list_partitions() WHERE view_set_name = 'blocks'"), 1);
    assert.equal(await count(admin, 'SELECT sum(nb_objects) FROM blocks'), 35);
  });

  it('list_partitions and list_view_sets are readable by every key', async () => {
    const partitions = await reader.query("SELECT view_set_name, num_rows, source_count FROM list_partitions() WHERE view_set_name = 'log_entries'");
    assert.deepEqual(partitions.toArray().map((r) => [r.view_set_name, Number(r.num_rows), Number(r.source_count)]), [['log_entries', 35, 35]]);
    const sets = await reader.query('SELECT view_set_name, update_group FROM list_view_sets() ORDER BY update_group, view_set_name');
    assert.deepEqual(sets.toArray().map((r) => [r.view_set_name, r.update_group]), [
      ['blocks', 1000], ['log_entries', 2000], ['measures', 2000], ['processes', 2000], ['spans', 2000], ['streams', 2000], ['log_stats', 3000],
    ]);
  });

  it('a reader sees only its audiences, and a foreign process looks like no process at all', async () => {
    assert.equal(await count(reader, 'SELECT count(*) FROM log_entries'), 30);
    const secret = String((await admin.query("SELECT process_id FROM processes WHERE audience = 'team_x'")).getChildAt(0)!.get(0));
    assert.equal(await count(admin, `SELECT count(*) FROM view_instance('log_entries', '${secret}')`), 5);
    assert.equal(await count(reader, `SELECT count(*) FROM view_instance('log_entries', '${secret}')`), 0);
    assert.equal(await count(reader, "SELECT count(*) FROM view_instance('log_entries', '00000000-0000-0000-0000-000000000000')"), 0);
    assert.equal(await count(reader, `SELECT count(*) FROM process_spans('${secret}', 'both')`), 0);
    await assert.rejects(reader.query(`SELECT * FROM process_spans('${secret}', 'sideways')`), { code: 3, details: /kind must be/ });
  });

  it('regenerate_partitions rebuilds, and its delta must tile the range', async () => {
    const [message] = await messages(admin, `SELECT * FROM regenerate_partitions('log_entries', '${iso(begin)}', '${iso(end)}', 180)`);
    assert.match(message, /: created$/);
    assert.equal(await count(admin, 'SELECT count(*) FROM log_entries'), 35);
    await assert.rejects(admin.query(`SELECT * FROM regenerate_partitions('log_entries', '${iso(begin)}', '${iso(end)}', 7)`), {
      code: 3,
      details: /delta_seconds \(7\) must divide the range exactly/,
    });
  });

  it('retire_partition_by_file and retire_partition_by_metadata retire exactly one partition', async () => {
    const file = String((await admin.query("SELECT file_path FROM list_partitions() WHERE view_set_name = 'log_stats'")).getChildAt(0)!.get(0));
    assert.deepEqual(await messages(admin, `SELECT * FROM retire_partition_by_file('${file}')`), [`SUCCESS: retired ${file}`]);
    assert.deepEqual(await messages(admin, `SELECT * FROM retire_partition_by_file('${file}')`), [`ERROR: no partition has the file ${file}`]);
    assert.equal(await count(admin, 'SELECT count(*) FROM log_stats'), 0);
    const [ok] = await messages(admin, `SELECT * FROM retire_partition_by_metadata('log_entries', 'global', '${iso(begin)}', '${iso(end)}')`);
    assert.match(ok, /^SUCCESS: retired the partition of log_entries\/global/);
    assert.equal(await count(admin, 'SELECT count(*) FROM log_entries'), 0);
    const [missing] = await messages(admin, `SELECT * FROM retire_partition_by_metadata('log_entries', 'global', '${iso(begin)}', '${iso(end)}')`);
    assert.match(missing, /^ERROR: no partition of log_entries\/global covers exactly/);
  });

  it('retire_partitions retires everything of a view instance inside a range', async () => {
    await materialize('log_entries');
    assert.equal(await count(admin, 'SELECT count(*) FROM log_entries'), 35);
    const out = await messages(admin, `SELECT * FROM retire_partitions('log_entries', 'global', '${iso(begin - 3600)}', '${iso(end + 3600)}')`);
    assert.match(out.at(-1)!, /^retired 1 partition file\(s\) of log_entries\/global/);
    assert.equal(await count(admin, 'SELECT count(*) FROM log_entries'), 0);
  });

  it('retire_incompatible_partitions, also as micromegas.admin.retire_incompatible_partitions', async () => {
    assert.deepEqual(await messages(admin, 'SELECT * FROM retire_incompatible_partitions()'), ['retired 0 incompatible partition(s)']);
    assert.deepEqual(await messages(admin, 'SELECT * FROM micromegas.admin.retire_incompatible_partitions()'), ['retired 0 incompatible partition(s)']);
  });

  it('refuses every admin function to other keys, naming the function', async () => {
    for (const call of [
      `retire_partitions('log_entries', 'global', '${iso(begin)}', '${iso(end)}')`,
      `materialize_partitions('log_entries', '${iso(begin)}', '${iso(end)}', 60)`,
      `regenerate_partitions('log_entries', '${iso(begin)}', '${iso(end)}', 60)`,
      `retire_partition_by_metadata('log_entries', 'global', '${iso(begin)}', '${iso(end)}')`,
      "retire_partition_by_file('views/x.parquet')",
      'retire_incompatible_partitions()',
    ]) {
      const name = call.slice(0, call.indexOf('('));
      await assert.rejects(reader.query(`SELECT * FROM ${call}`), { code: 7, details: `permission denied: ${name} is an admin function` });
    }
  });

  it('checks arguments and that a procedure is called on its own', async () => {
    await assert.rejects(admin.query("SELECT * FROM retire_partitions('x')"), { code: 3, details: /takes 4 argument\(s\)/ });
    await assert.rejects(admin.query("SELECT * FROM materialize_partitions('nope', '2024-01-01', '2024-01-02', 60)"), {
      code: 3,
      details: "materialize_partitions: view set 'nope' does not exist",
    });
    await assert.rejects(admin.query("SELECT * FROM retire_partitions('a', 'b', 'yesterday', '2024-01-02')"), { code: 3, details: /begin/ });
    await assert.rejects(admin.query('SELECT * FROM retire_incompatible_partitions() JOIN log_entries ON true'), {
      code: 3,
      details: /must be called on its own/,
    });
  });
});
