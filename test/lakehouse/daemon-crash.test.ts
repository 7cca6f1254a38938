// Issue 3, "Done when": kill -9 of the maintenance daemon mid-run, then two daemons started at once on
// the same lake, leave exact counts: nothing lost, nothing counted twice, no overlapping partitions.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { TestFlightClient } from '../support/flight-client.js';
import { blockInsertTag } from '../../src/metadata/index.js';
import { adminKey } from '../support/orrery-process.js';
import {
  OrreryChild,
  clientFor,
  plainRows,
  pollUntil,
  sharedEnv,
  sleep,
  startRole,
  startTestPostgres,
  type InProcessOrrery,
  type TestKey,
  type TestPostgres,
} from './lakehouse-fixtures.js';

const admin: TestKey = { ...adminKey, audiences: ['public'] };
const recordsPerRequest = 100;
/** OTLP severity numbers sent in turn, and the micromegas levels they become. */
const severities = [
  { severityNumber: 9, level: 4 },
  { severityNumber: 13, level: 3 },
  { severityNumber: 17, level: 2 },
];

/** One OTLP/JSON logs request: `recordsPerRequest` records with unique messages `r<request>-<i>`. */
function logsRequest(request: number): string {
  const now = BigInt(Date.now()) * 1_000_000n;
  const logRecords = Array.from({ length: recordsPerRequest }, (_, i) => ({
    timeUnixNano: String(now + BigInt(i)),
    severityNumber: severities[i % severities.length].severityNumber,
    body: { stringValue: `r${request}-${i}` },
    attributes: [{ key: 'request', value: { intValue: String(request) } }],
  }));
  return JSON.stringify({
    resourceLogs: [
      {
        resource: { attributes: [{ key: 'service.name', value: { stringValue: 'crash-test' } }] },
        scopeLogs: [{ scope: { name: 'crash' }, logRecords }],
      },
    ],
  });
}

describe('maintenance daemon killed mid-run, then two daemons at once', { timeout: 600_000 }, () => {
  let postgres: TestPostgres;
  let serve: InProcessOrrery;
  let client: TestFlightClient;
  let dataDir: string;
  let env: Record<string, string>;
  const daemons: OrreryChild[] = [];

  before(async () => {
    postgres = await startTestPostgres();
    dataDir = mkdtempSync(join(tmpdir(), 'orrery-daemon-crash-'));
    env = {
      ...sharedEnv({
        keys: [admin],
        admins: [admin.name],
        connectionString: postgres.connectionString,
        lakeDir: join(dataDir, 'lake'),
      }),
      ORRERY_DATA_DIR: dataDir,
      // Each process keeps its scratch files in a folder of its own under TMPDIR (orrery-scratch-*).
      TMPDIR: join(dataDir, 'tmp'),
    };
    mkdirSync(env.TMPDIR);
    serve = await startRole('serve', env); // ingestion and queries, no daemon
    client = clientFor(serve.flightPort, admin);
  });

  after(async () => {
    for (const daemon of daemons) await daemon.stop('SIGKILL');
    client?.close();
    await serve?.close();
    await postgres?.close();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it('loses nothing and counts nothing twice', async (t) => {
    let sent = 0;
    let requests = 0;
    let lastInsertMs = 0;
    const send = async (): Promise<void> => {
      const request = requests++;
      const response = await fetch(`http://127.0.0.1:${serve.httpPort}/v1/logs`, {
        method: 'POST',
        headers: { authorization: `Bearer ${admin.key}`, 'content-type': 'application/json' },
        body: logsRequest(request),
      });
      const answer = await response.text();
      assert.equal(response.status, 200, `request ${request}: ${answer}`);
      sent += recordsPerRequest;
      lastInsertMs = Date.now();
    };
    const sendSome = async (n: number): Promise<void> => {
      for (let i = 0; i < n; i++) {
        await send();
        await sleep(200);
      }
    };
    const partitionsWithRows = async (): Promise<number> =>
      Number(
        (
          await postgres.pool.query<{ n: string }>(
            "SELECT count(*) AS n FROM lakehouse_partitions WHERE view_set_name = 'log_entries' AND num_rows > 0",
          )
        ).rows[0].n,
      );
    const scratchFiles = (): string[] =>
      readdirSync(env.TMPDIR, { recursive: true, withFileTypes: true })
        .filter((entry) => entry.isFile() && entry.name.endsWith('.jsonl'))
        .map((entry) => join(entry.parentPath, entry.name));

    // 1. Data sent before any daemon runs: the first daemon's start-up catch-up picks it up.
    await sendSome(5);

    // 2. A daemon materializes as data keeps coming, and is killed while a materialization is in
    //    progress, once it has written at least one log_entries partition. The kill landed mid-way
    //    when the extract's scratch file, deleted when a materialization ends, outlives the process.
    //    A kill that lands between two materializations is retried with a new daemon.
    let killed: OrreryChild | undefined;
    for (let attempt = 1; attempt <= 5 && !killed; attempt++) {
      const daemon = new OrreryChild(`daemon A${attempt}`, 'maintain', env);
      daemons.push(daemon);
      await daemon.waitForLine(/maintenance daemon started/, 120_000);
      const before = new Set(scratchFiles());
      let killerDone = false;
      const killer = (async () => {
        try {
          await pollUntil(
            `${daemon.name} to write a log_entries partition with rows`,
            partitionsWithRows,
            (n) => n > 0,
            { timeoutMs: 120_000, intervalMs: 50 },
          );
          const deadline = Date.now() + 10_000;
          while (Date.now() < deadline && !scratchFiles().some((f) => !before.has(f))) await sleep(1);
          const exit = await daemon.stop('SIGKILL');
          assert.equal(
            exit.signal,
            'SIGKILL',
            `${daemon.name} was not killed by SIGKILL: ${JSON.stringify(exit)}\n${daemon.tail()}`,
          );
        } finally {
          killerDone = true;
        }
      })();
      killer.catch(() => {}); // awaited below, once the requests stop
      while (!killerDone) await sendSome(1);
      await killer;
      const leftBehind = scratchFiles().filter((f) => !before.has(f));
      t.diagnostic(`${daemon.name} killed after ${requests} requests; scratch files left behind: ${leftBehind.length}`);
      if (leftBehind.length > 0) killed = daemon;
    }
    assert.ok(killed, 'no kill landed while a materialization was in progress in 5 attempts');

    // 3. Data sent while no daemon runs.
    await sendSome(3);

    // 4. Two daemons started at once on the same lake, with more data arriving. They run the second pass alone
    //    (ORRERY_MAINTENANCE_PASSES), so that in step 5 no minute pass can take the late block.
    const secondsOnly = { ...env, ORRERY_MAINTENANCE_PASSES: 'second' };
    const b = new OrreryChild('daemon B', 'maintain', secondsOnly);
    const c = new OrreryChild('daemon C', 'maintain', secondsOnly);
    daemons.push(b, c);
    await Promise.all([
      b.waitForLine(/maintenance daemon started/, 120_000),
      c.waitForLine(/maintenance daemon started/, 120_000),
    ]);
    await sendSome(10);

    const withDaemonOutput = (error: unknown): never => {
      const tails = daemons
        .filter((daemon) => daemon.running)
        .map((daemon) => `\n--- ${daemon.name}:\n${daemon.tail(20)}`);
      throw new Error(`${(error as Error).message}${tails.join('')}`, { cause: error });
    };

    // 5. A late commit, after the daemons' start-up catch-up: the blocks table is locked while one
    //    request is ingested, so its block commits after its insert time (the transaction's start),
    //    once a second pass has gone over that second. The passes wait for the running insert
    //    (blockInsertsRunning) instead of counting its second as done, so a second pass materializes it,
    //    in its second's partition. Counted done, that second would never be gone over again: daemon C
    //    stops first (another daemon's second pass running behind would go over it after the commit), B
    //    runs no minute pass, and its start-up catch-up ended at an earlier second.
    assert.deepEqual(await c.stop('SIGTERM', 120_000), { code: 0, signal: null }, `${c.name}:\n${c.tail()}`);
    const lock = await postgres.pool.connect();
    try {
      await lock.query('BEGIN');
      await lock.query('LOCK TABLE blocks IN EXCLUSIVE MODE');
      const late = send();
      late.catch(() => {}); // awaited below, after the lock is released
      await pollUntil(
        "a second pass over the second of the waiting insert's start",
        async () =>
          (
            await postgres.pool.query<{ n: number }>(
              `SELECT count(*)::int AS n FROM pg_stat_activity a JOIN lakehouse_partitions p
                  ON p.view_set_name = 'log_entries' AND p.begin_insert_time <= a.xact_start
                 AND a.xact_start < p.end_insert_time
                WHERE a.datname = current_database() AND starts_with(a.query, $1)`,
              [blockInsertTag],
            )
          ).rows[0].n,
        (n) => n > 0,
        { timeoutMs: 120_000, intervalMs: 100 },
      ).catch(withDaemonOutput);
      await lock.query('COMMIT');
      await late;
    } finally {
      lock.release();
    }
    const lateRows = `FROM log_entries WHERE msg LIKE 'r${requests - 1}-%'`;
    await pollUntil(
      'the late block to be materialized',
      async () => (await plainRows(client, `SELECT count(*) AS n ${lateRows}`))[0].n,
      (n) => n === recordsPerRequest,
      { timeoutMs: 180_000, intervalMs: 500 },
    ).catch(withDaemonOutput);
    // Which pass did: the partition holding it is its second's (a second pass's), not a minute's.
    const [{ block_id: lateBlock }] = await plainRows(client, `SELECT DISTINCT block_id ${lateRows}`);
    const holding = await postgres.pool.query<{ seconds: number }>(
      `SELECT extract(epoch FROM p.end_insert_time - p.begin_insert_time)::int AS seconds
         FROM blocks b JOIN lakehouse_partitions p ON p.view_set_name = 'log_entries' AND p.num_rows > 0
          AND b.insert_time >= p.begin_insert_time AND b.insert_time < p.end_insert_time
        WHERE b.block_id = $1`,
      [lateBlock],
    );
    assert.deepEqual(holding.rows, [{ seconds: 1 }], 'the late block was not taken by a second pass');

    // A daemon running every pass joins B.
    const d = new OrreryChild('daemon D', 'maintain', env);
    daemons.push(d);
    await d.waitForLine(/maintenance daemon started/, 120_000);
    await sendSome(2);

    // 6. The minute pass (daemon D's) covers [boundary - 120 s, boundary - 60 s) at 5 s past each minute boundary:
    //    it rebuilds any range a second pass missed.
    const minutePassMs = Math.floor(lastInsertMs / 60_000) * 60_000 + 125_000;
    // A loaded machine runs the pass late, and its work slowly: a generous deadline after it.
    const timeoutMs = minutePassMs + 150_000 - Date.now();
    t.diagnostic(
      `${sent} records in ${requests} requests; waiting up to ${Math.round(timeoutMs / 1000)} s for the minute pass`,
    );
    const started = Date.now();
    const early = (await plainRows(client, 'SELECT count(*) AS n FROM log_entries'))[0].n;
    t.diagnostic(`log_entries holds ${String(early)} of ${sent} records before the minute pass`);
    await pollUntil(
      `log_entries and log_stats to hold exactly the ${sent} records sent`,
      async () =>
        (
          await plainRows(
            client,
            `SELECT (SELECT count(*) FROM log_entries) AS n, (SELECT count(DISTINCT msg) FROM log_entries) AS distinct_messages,
                    (SELECT coalesce(sum(count), 0)::BIGINT FROM log_stats) AS stats`,
          )
        )[0],
      (seen) => seen.n === sent && seen.distinct_messages === sent && seen.stats === sent,
      {
        timeoutMs,
        intervalMs: 1000,
        failFast: (seen) =>
          (seen.n as number) > sent || (seen.stats as number) > sent
            ? 'more rows than were sent: counted twice'
            : undefined,
      },
    ).catch(async (error: unknown) => {
      // What the lake and Postgres hold, to tell a set left behind (log_stats once stayed at 1,600 of 4,500 records
      // for 243 s, unexplained) from one a statement did not read, and a pass stuck on Postgres from one not run:
      // per set, log_entries' ranges no log_stats partition spans, the sessions in a transaction, waiting locks.
      const rows = async (sql: string): Promise<string> => JSON.stringify((await postgres.pool.query(sql)).rows);
      const report = [
        `SELECT view_set_name, count(*)::int AS partitions, sum(num_rows)::int AS rows, max(end_insert_time) AS until
           FROM lakehouse_partitions WHERE view_set_name IN ('blocks', 'log_entries', 'log_stats') GROUP BY 1 ORDER BY 1`,
        `SELECT e.begin_insert_time AS begin, e.end_insert_time AS end, e.num_rows AS rows FROM lakehouse_partitions e
          WHERE e.view_set_name = 'log_entries' AND e.num_rows > 0 AND NOT EXISTS (
                SELECT 1 FROM lakehouse_partitions s WHERE s.view_set_name = 'log_stats'
                   AND s.begin_insert_time <= e.begin_insert_time AND e.end_insert_time <= s.end_insert_time)
          ORDER BY 1`,
        `SELECT pid, state, wait_event, (now() - xact_start)::text AS age, left(query, 160) AS query FROM pg_stat_activity
          WHERE datname = current_database() AND pid <> pg_backend_pid() AND xact_start IS NOT NULL ORDER BY xact_start`,
        'SELECT pid, locktype, mode, relation::regclass::text AS relation FROM pg_locks WHERE NOT granted',
      ];
      const lake = (await Promise.all(report.map(rows))).map((r) => `\n--- ${r}`).join('');
      return withDaemonOutput(new Error(`${(error as Error).message}${lake}`, { cause: error }));
    });
    t.diagnostic(`exact counts reached ${Math.round((Date.now() - started) / 1000)} s after the last request`);

    // Exact counts through Flight SQL, per level as well.
    const perRequest = (s: number): number =>
      Array.from({ length: recordsPerRequest }, (_, i) => i).filter((i) => i % severities.length === s).length;
    const perLevel = severities.map(({ level }, s) => ({ level, n: requests * perRequest(s) }));
    assert.deepEqual(
      await plainRows(client, 'SELECT level, count(*) AS n FROM log_entries GROUP BY level ORDER BY level DESC'),
      perLevel,
    );
    assert.deepEqual(
      await plainRows(
        client,
        'SELECT level, sum(count)::BIGINT AS n FROM log_stats GROUP BY level ORDER BY level DESC',
      ),
      perLevel,
    );
    assert.deepEqual(await plainRows(client, 'SELECT count(DISTINCT block_id) AS blocks FROM log_entries'), [
      { blocks: requests },
    ]);

    // The metadata agrees: one block per request, no overlapping partitions, every registered file present.
    const db = postgres.pool;
    const blocks = await db.query('SELECT count(*)::int AS blocks, sum(nb_objects)::int AS objects FROM blocks');
    assert.deepEqual(blocks.rows, [{ blocks: requests, objects: sent }]);
    const overlaps = await db.query(
      `SELECT a.view_set_name, a.begin_insert_time AS a_begin, a.end_insert_time AS a_end, b.begin_insert_time AS b_begin, b.end_insert_time AS b_end
         FROM lakehouse_partitions a JOIN lakehouse_partitions b
           ON a.view_set_name = b.view_set_name AND a.view_instance_id = b.view_instance_id AND a.file_schema_hash = b.file_schema_hash
          AND a.ctid < b.ctid AND a.begin_insert_time < b.end_insert_time AND b.begin_insert_time < a.end_insert_time`,
    );
    assert.deepEqual(overlaps.rows, [], 'partitions of one view set and schema overlap in insert time');
    const logPartitions = (
      await db.query<{ hashes: number; rows: number }>(
        "SELECT count(DISTINCT file_schema_hash)::int AS hashes, sum(num_rows)::int AS rows FROM lakehouse_partitions WHERE view_set_name = 'log_entries'",
      )
    ).rows[0];
    assert.deepEqual(logPartitions, { hashes: 1, rows: sent });
    const files = (
      await db.query<{ file_path: string }>('SELECT file_path FROM lakehouse_partitions WHERE file_path IS NOT NULL')
    ).rows;
    assert.deepEqual(
      files.filter((f) => !existsSync(join(dataDir, 'lake', f.file_path))),
      [],
      'registered partition files missing from the lake',
    );

    // The daemons reported no failure, B and D are still up and stop cleanly.
    for (const daemon of [b, c, d]) {
      assert.ok(daemon === c || daemon.running, `${daemon.name} exited:\n${daemon.tail()}`);
      assert.deepEqual(
        daemon.output.filter((line) => /\bERROR\b/.test(line)),
        [],
        `${daemon.name} logged errors`,
      );
    }
    const exits = await Promise.all([b.stop('SIGTERM'), d.stop('SIGTERM')]);
    assert.deepEqual(exits, [
      { code: 0, signal: null },
      { code: 0, signal: null },
    ]);
  });
});
