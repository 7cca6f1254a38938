// Issue 15 item 3: N processes behave as one. One Postgres, one S3 bucket (a real S3-compatible
// server), two `orrery serve` and two `orrery maintain` processes. OTLP load is spread over both
// servers; one server and one daemon are killed with SIGKILL mid-load and started again. Then every
// acknowledged record is in log_entries exactly once, no two partitions overlap, every registered
// file exists, no object is left that no row names once the orphan grace has passed (the killed
// processes leave some: housekeeping deletes them), and both servers answer the same queries
// identically, a view set created by DDL on one of them included.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { S3ObjectStore, s3Settings } from '../../src/lakehouse/index.js';
import { logsRequest, postOtlp } from '../support/otlp.js';
import { s3LakeEnv, testS3 } from '../support/s3-server.js';
import {
  OrreryChild,
  clientFor,
  plainRows,
  pollUntil,
  sharedEnv,
  startTestPostgres,
  type TestKey,
  type TestPostgres,
} from './lakehouse-fixtures.js';

const admin: TestKey = { name: 'admin', key: 'cluster-admin-key', audiences: ['public'] };

/** A role as a child process, once it listens: its Flight SQL and HTTP ports. */
async function startChild(
  name: string,
  role: 'serve' | 'maintain',
  env: Record<string, string>,
): Promise<{ child: OrreryChild; flightPort: number; httpPort: number }> {
  const child = new OrreryChild(name, role, env);
  await child.waitForLine(/HTTP \(OTLP.* listening on/, 120_000);
  const port = (pattern: RegExp): number => Number(child.output.map((l) => pattern.exec(l)?.[1]).find(Boolean) ?? 0);
  return {
    child,
    flightPort: port(/Flight SQL listening on [\d.]+:(\d+)/),
    httpPort: port(/HTTP \(OTLP.* listening on [\d.]+:(\d+)/),
  };
}

describe('a cluster: two servers, two daemons, one Postgres, one bucket (issue 15 item 3)', () => {
  let postgres: TestPostgres;
  let env: Record<string, string>;
  let store: S3ObjectStore;
  const children: OrreryChild[] = [];

  before(async () => {
    postgres = await startTestPostgres();
    const s3 = await testS3();
    const lake = s3LakeEnv(s3);
    store = new S3ObjectStore(s3Settings(lake.MICROMEGAS_OBJECT_STORE_URI, s3.env));
    env = {
      ...sharedEnv({ keys: [admin], admins: [admin.name], connectionString: postgres.connectionString }),
      ...lake,
      ORRERY_RETIRE_DELAY_SECONDS: '2',
      ORRERY_HOUSEKEEPING_SECONDS: '3',
      ORRERY_ORPHAN_GRACE_SECONDS: '30',
      MICROMEGAS_VIEW_DEFINITION_REFRESH_SECONDS: '1',
    };
  });
  after(async () => {
    for (const child of children) await child.stop('SIGKILL');
    store?.close();
    await postgres?.close();
  });

  it('keeps every acknowledged record once through SIGKILLs, and answers alike on both servers', async () => {
    const start = async (name: string, role: 'serve' | 'maintain') => {
      const started = await startChild(name, role, env);
      children.push(started.child);
      return started;
    };
    let serveA = await start('serve A', 'serve');
    const serveB = await start('serve B', 'serve');
    let maintainA = await start('maintain A', 'maintain');
    await start('maintain B', 'maintain');

    const acknowledged: string[] = [];
    const send = async (server: { httpPort: number }, i: number): Promise<void> => {
      const bodies = Array.from({ length: 5 }, (_, j) => `request ${String(i).padStart(3, '0')} record ${j}`);
      const logs = bodies.map((body, j) => ({ time: BigInt(Date.now()) * 1_000_000n + BigInt(j), severity: 9, body }));
      try {
        const answer = await postOtlp(
          server.httpPort,
          'logs',
          admin.key,
          logsRequest({ 'service.name': 'load' }, logs),
        );
        if (answer.status === 200) acknowledged.push(...bodies);
      } catch {
        // a server killed under the request: not acknowledged
      }
    };
    for (let i = 0; i < 30; i++) await send(i % 2 ? serveB : serveA, i);
    // Mid-load: one server and one daemon die without a chance to clean up, and start again.
    await Promise.all([serveA.child.stop('SIGKILL'), maintainA.child.stop('SIGKILL')]);
    for (let i = 30; i < 40; i++) await send(i % 2 ? serveB : serveA, i);
    [serveA, maintainA] = [await start('serve A again', 'serve'), await start('maintain A again', 'maintain')];
    for (let i = 40; i < 70; i++) await send(i % 2 ? serveB : serveA, i);
    assert.ok(acknowledged.length >= 300, `only ${acknowledged.length} records acknowledged`);

    const [a, b] = [clientFor(serveA.flightPort, admin), clientFor(serveB.flightPort, admin)];
    try {
      // Every acknowledged record, once.
      const expected = [...acknowledged].sort();
      const messages = async (client: typeof a): Promise<string[]> =>
        (await plainRows(client, "SELECT msg FROM log_entries WHERE exe = 'load' ORDER BY msg")).map((r) =>
          String(r.msg),
        );
      const seen = await pollUntil(
        'every acknowledged record in log_entries',
        () => messages(a),
        (m) => m.length >= expected.length,
        {
          timeoutMs: 120_000,
          intervalMs: 500,
        },
      );
      assert.deepEqual(seen, expected);
      assert.deepEqual(await messages(b), expected);

      // A view set created by DDL on one server answers alike on both.
      await a.query(`CREATE MATERIALIZED VIEW load_counts WITH (
        extract_query = $$SELECT date_bin('1 minute', time) AS time_bin, exe, count(*) AS count, audience
                          FROM log_entries WHERE insert_time >= '{begin}' AND insert_time < '{end}' GROUP BY ALL$$,
        count_src_query = $$SELECT sum(nb_objects) AS count FROM blocks WHERE insert_time >= '{begin}' AND insert_time < '{end}'$$,
        merge_partitions_query = $$SELECT time_bin, exe, sum(count) AS count, audience FROM {source} GROUP BY ALL$$,
        update_group = 4000,
        time_column = 'time_bin'
      )`);
      const total = async (client: typeof a): Promise<number> => {
        try {
          const [row] = await plainRows(
            client,
            "SELECT coalesce(sum(count), 0) AS n FROM load_counts WHERE exe = 'load'",
          );
          return Number(row.n);
        } catch {
          return -1; // not loaded on this server yet
        }
      };
      for (const client of [a, b])
        await pollUntil(
          'load_counts to count every record',
          () => total(client),
          (n) => n === expected.length,
          {
            timeoutMs: 120_000,
            intervalMs: 500,
          },
        );
      const counts = 'SELECT time_bin, exe, count FROM load_counts ORDER BY time_bin, exe';
      assert.deepEqual(await plainRows(a, counts), await plainRows(b, counts));

      // No two partitions of a view set overlap; every registered file exists.
      const { rows: overlaps } = await postgres.pool.query(
        `SELECT p.view_set_name FROM lakehouse_partitions p JOIN lakehouse_partitions q
           ON p.view_set_name = q.view_set_name AND p.view_instance_id = q.view_instance_id AND p.file_path < q.file_path
          AND p.begin_insert_time < q.end_insert_time AND q.begin_insert_time < p.end_insert_time`,
      );
      assert.deepEqual(overlaps, []);
      const named = async (): Promise<Set<string>> =>
        new Set(
          (
            await postgres.pool.query<{ key: string }>(
              `SELECT file_path AS key FROM lakehouse_partitions WHERE file_path IS NOT NULL
               UNION ALL SELECT file_path FROM temporary_files
               UNION ALL SELECT coalesce(payload_file, format('blobs/%s/%s/%s.jsonl', process_id, stream_id, block_id)) FROM blocks`,
            )
          ).rows.map((r) => r.key),
        );
      const { rows: partitionFiles } = await postgres.pool.query<{ file_path: string }>(
        'SELECT file_path FROM lakehouse_partitions WHERE file_path IS NOT NULL',
      );
      for (const { file_path } of partitionFiles)
        assert.notEqual(await store.size(file_path), null, `${file_path} is registered but missing`);

      // What the killed processes wrote but never registered goes once older than the grace: a moment
      // comes when every object is named by a row (the daemons keep writing, so it is polled for).
      const unnamed = async (): Promise<string[]> => {
        const objects = (await Promise.all(['views/', 'blobs/', 'tmp/'].map((prefix) => store.list(prefix)))).flat();
        const rows = await named();
        return objects.filter((key) => !rows.has(key));
      };
      await pollUntil('no object that no row names', unnamed, (keys) => keys.length === 0, {
        timeoutMs: 120_000,
        intervalMs: 1000,
      });
    } finally {
      a.close();
      b.close();
    }
  });
});
