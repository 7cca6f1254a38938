// Issue 16: an acknowledged OTLP request's rows commit without waiting for Postgres's WAL flush; what makes them
// durable is its commit group's object, fsynced before the 200 with the rows as its manifest (see
// src/ingestion/group-replay.ts). Here Postgres and the server are killed (SIGKILL) right after the 200s, with the
// Postgres processes that write WAL on their own stopped first, so that nothing flushed those commits: Postgres
// comes back without them, and the next server inserts them again from the objects, whole and stamped with the
// key's audience. Also: a group written but never committed (a crash between its fsync and its insert) is stored
// whole by the next server, and a retry of its request then stores nothing twice.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer, connect, type Server, type Socket } from 'node:net';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { payloadLines } from '../../src/ingestion/index.js';
import { groupManifest, type BlockRow as GroupRow } from '../../src/ingestion/group-replay.js';
import { deleteOrphans, FileObjectStore, payloadGroupKey, payloadGroupMayBeBy } from '../../src/lakehouse/index.js';
import { EmbeddedPostgres } from '../../src/metadata/embedded-postgres.js';
import { signal } from '../../src/metadata/os-processes.js';
import { adminKey } from '../support/orrery-process.js';
import { blockPayload, payloadColumns, type PayloadRow } from '../support/payloads.js';
import {
  OrreryChild,
  clientFor,
  interleavedLogsRequest,
  pollUntil,
  sharedEnv,
  sleep,
  startRole,
  type TestKey,
} from './lakehouse-fixtures.js';

const admin: TestKey = { ...adminKey, audiences: ['public'] };
const requests = 12;
const perRequest = 50;

/** POSTs an OTLP protobuf logs body with the admin key. */
const post = (port: number, body: Uint8Array): Promise<Response> =>
  fetch(`http://127.0.0.1:${port}/v1/logs`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-protobuf', authorization: `Bearer ${admin.key}` },
    body: Buffer.from(body),
  });

/** `orrery serve` on this Postgres and lake, marking every 100 ms. */
const serveMarking = (connectionString: string, lakeDir: string): ReturnType<typeof startRole> =>
  startRole('serve', {
    ...sharedEnv({ keys: [admin], admins: [admin.name], connectionString, lakeDir }),
    ORRERY_INGEST_MARK_MS: '100',
  });

/** Sends the i-th of `requests` requests of `service`, acknowledged. */
const sender = (port: number, service: string): ((i: number) => Promise<void>) => {
  const t0 = BigInt(Date.now()) * 1_000_000n;
  return async (i) => {
    const response = await post(port, interleavedLogsRequest(i, { requests, perRequest, t0, service }));
    assert.equal(response.status, 200, await response.text());
  };
};

/** `orrery serve` as a child process (killed with SIGKILL by the tests), and its HTTP port. */
async function serveChild(env: Record<string, string>): Promise<{ child: OrreryChild; port: number }> {
  const child = new OrreryChild('serve', 'serve', env);
  await child.waitForLine(/HTTP \(OTLP.*listening on/, 60_000);
  return {
    child,
    port: Number(/listening on [^\s]*:(\d+)/.exec(child.output.find((l) => /HTTP \(OTLP/.test(l))!)![1]),
  };
}

/** Every process of a Postgres server: its postmaster and the postmaster's children. */
function postgresProcesses(postmaster: number): number[] {
  const children = readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .filter((pid) => {
      try {
        // pid (comm) state ppid ...: comm may hold spaces, so the fields after its closing parenthesis.
        const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
        return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === postmaster;
      } catch {
        return false; // gone meanwhile
      }
    })
    .map(Number);
  return [postmaster, ...children];
}

/**
 * Kills every process of a Postgres server at once (as a crash of it would), and waits until they are gone, reaped
 * too (the postmaster is this process's child: a start on its cluster refuses while its pid still exists).
 */
async function crash(postgres: EmbeddedPostgres): Promise<void> {
  const processes = postgresProcesses(postgres.pid);
  for (const pid of processes) signal(pid, 'SIGKILL'); // (one may have exited meanwhile)
  const deadline = Date.now() + 30_000;
  while (processes.some((pid) => existsSync(`/proc/${pid}`))) {
    assert.ok(Date.now() < deadline, 'Postgres processes still exist');
    await sleep(20);
  }
}

/** Stops the Postgres processes that write or flush WAL on their own: from then on only a synchronous commit does. */
async function stopBackgroundWriters(pool: pg.Pool): Promise<void> {
  const { rows } = await pool.query<{ pid: number }>(
    `SELECT pid FROM pg_stat_activity
      WHERE backend_type IN ('walwriter', 'background writer', 'checkpointer', 'autovacuum launcher')`,
  );
  assert.ok(rows.length > 0);
  for (const { pid } of rows) signal(pid, 'SIGSTOP');
}

describe('issue 16: rows committed without the WAL flush survive a crash of Postgres', { timeout: 240_000 }, () => {
  let dir: string;
  let postgres: EmbeddedPostgres;
  let pool: pg.Pool;
  let env: Record<string, string>;
  let child: OrreryChild | undefined;

  const startPostgres = async (): Promise<void> => {
    postgres = await EmbeddedPostgres.start({ dataDir: join(dir, 'pg') });
    pool = new pg.Pool({ connectionString: postgres.connectionString, max: 2 });
    pool.on('error', () => {});
  };

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'orrery-ingest-replay-'));
    await startPostgres();
    env = {
      ...sharedEnv({
        keys: [admin],
        admins: [admin.name],
        connectionString: postgres.connectionString,
        lakeDir: join(dir, 'lake'),
      }),
      ORRERY_DATA_DIR: join(dir, 'serve'),
      // One mark at start-up, then none during the test: a mark's synchronous commit would flush the requests'.
      ORRERY_INGEST_MARK_MS: '600000',
    };
  });

  after(async () => {
    await child?.stop('SIGKILL');
    await pool?.end().catch(() => {});
    await postgres?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('every acknowledged request is stored again, whole, after Postgres and the server are killed', async () => {
    const started = await serveChild(env);
    child = started.child;
    await stopBackgroundWriters(pool);
    const t0 = BigInt(Date.now()) * 1_000_000n;
    const shape = { requests, perRequest, t0, service: 'replayed' };
    for (let i = 0; i < requests; i++) {
      const response = await post(started.port, interleavedLogsRequest(i, shape));
      assert.equal(response.status, 200, await response.text());
    }
    const visible = await pool.query<{ n: string }>(`SELECT count(*) AS n FROM blocks`);
    assert.equal(Number(visible.rows[0].n), requests, 'visible at once, as with a flushed commit');

    await child.stop('SIGKILL');
    await crash(postgres);
    await pool.end().catch(() => {});
    await postgres.close();
    await startPostgres();
    const survived = await pool.query<{ n: string }>(`SELECT count(*) AS n FROM blocks`);
    // Else this test tests nothing: the crash must have lost commits that were acknowledged.
    assert.ok(Number(survived.rows[0].n) < requests, `${survived.rows[0].n} of ${requests} blocks survived`);

    const serve = await startRole('serve', { ...env, MICROMEGAS_SQL_CONNECTION_STRING: postgres.connectionString });
    try {
      const { rows } = await pool.query<PayloadRow & { nb_objects: number; audience: string }>(
        `SELECT ${payloadColumns}, b.nb_objects, b.audience FROM blocks b`,
      );
      assert.equal(rows.length, requests);
      const messages = new Map<string, number>();
      for (const row of rows) {
        assert.equal(row.audience, 'public');
        assert.equal(row.nb_objects, perRequest);
        const lines = Buffer.from(payloadLines(await blockPayload(serve.store, row)))
          .toString()
          .trimEnd()
          .split('\n');
        for (const line of lines) {
          const msg = (JSON.parse(line) as { msg: string }).msg;
          messages.set(msg, (messages.get(msg) ?? 0) + 1);
        }
      }
      for (let i = 0; i < requests; i++)
        for (let j = 0; j < perRequest; j++) assert.equal(messages.get(`m-${i}-${j}`), 1, `m-${i}-${j}`);
      assert.ok(serve.lines.some((line) => /\d+ inserted again/.test(line)));
    } finally {
      await serve.close();
    }
  });

  /** A logs request of `service` (1 request of `perRequest` records), and how many of its blocks Postgres has. */
  const oneRequest = (service: string): { body: Uint8Array; stored: () => Promise<number> } => ({
    body: interleavedLogsRequest(0, { requests: 1, perRequest, t0: BigInt(Date.now()) * 1_000_000n, service }),
    stored: async () =>
      Number(
        (
          await pool.query<{ n: string }>(
            `SELECT count(*) AS n FROM blocks b JOIN processes p USING (process_id) WHERE p.exe = $1`,
            [service],
          )
        ).rows[0].n,
      ),
  });
  /** Its answer, or what says there was none within 20 s. */
  const answer = (port: number, body: Uint8Array): Promise<number | string> =>
    Promise.race([
      post(port, body).then((response) => response.status),
      sleep(20_000).then(() => 'no answer while the commit waits'),
    ]);
  /** Runs `run` while the blocks table is locked: inserts of blocks wait, after their group's object is synced. */
  const whileLocked = async (run: () => Promise<void>): Promise<void> => {
    const holder = await pool.connect();
    try {
      await holder.query('BEGIN');
      await holder.query('LOCK TABLE blocks IN EXCLUSIVE MODE');
      await run();
    } finally {
      await holder.query('ROLLBACK');
      holder.release();
    }
  };
  const insertWaiting = (): Promise<number> =>
    pollUntil(
      'an insert waiting for the lock',
      async () => (await pool.query(`SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock'`)).rows.length,
      (n) => n > 0,
      { timeoutMs: 120_000 },
    );

  it('ORRERY_INGEST_ACK=synced: a request answered before its commit, and its retry, are stored once by the next server after a kill -9', async () => {
    const live = { ...env, MICROMEGAS_SQL_CONNECTION_STRING: postgres.connectionString, ORRERY_INGEST_ACK: 'synced' };
    const started = await serveChild(live);
    child = started.child;
    const { body, stored } = oneRequest('uncommitted');
    await whileLocked(async () => {
      // Answered once the object is synced (a server waiting for the commit would answer only after the lock).
      assert.equal(await answer(started.port, body), 200);
      // A retry (its answer lost, say) while the first is not committed yet: its own group, the same block.
      assert.equal(await answer(started.port, body), 200);
      await insertWaiting();
      await child!.stop('SIGKILL');
      // Its backend would still commit once the lock goes: end it, as a crash of the machine would have.
      await pool.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE wait_event_type = 'Lock'`);
    });
    assert.equal(await stored(), 0, 'acknowledged, never committed');
    // The orphan sweep of a daemon still running elsewhere, past its grace before any server starts: the group is
    // named by no block, but the killed server's mark covers it.
    await deleteOrphans(pool, new FileObjectStore(join(dir, 'lake')), 3600, Date.now() + 7_200_000);

    const serve = await startRole('serve', live);
    try {
      assert.equal(await stored(), 1, 'the acknowledged request is stored by the next server, once');
      const { rows } = await pool.query<PayloadRow & { audience: string }>(
        `SELECT ${payloadColumns}, b.audience FROM blocks b JOIN processes p USING (process_id) WHERE p.exe = 'uncommitted'`,
      );
      assert.equal(rows[0].audience, 'public');
      const lines = Buffer.from(payloadLines(await blockPayload(serve.store, rows[0])))
        .toString()
        .trimEnd()
        .split('\n');
      assert.deepEqual(
        lines.map((line) => (JSON.parse(line) as { msg: string }).msg).sort(),
        Array.from({ length: perRequest }, (_, j) => `m-0-${j}`).sort(),
      );
      const retry = await post(serve.httpPort, body);
      assert.equal(retry.status, 200, await retry.text());
      await serve.close(); // once its commit is done
      assert.equal(await stored(), 1, 'the retry stores nothing twice');
    } finally {
      await serve.close();
    }
  });

  it('ORRERY_INGEST_ACK=synced: a running server inserts what a server that died left answered, once its mark is old', async () => {
    const live = { ...env, MICROMEGAS_SQL_CONNECTION_STRING: postgres.connectionString, ORRERY_INGEST_ACK: 'synced' };
    const writers = async (): Promise<string[]> =>
      (await pool.query<{ writer: string }>('SELECT writer::text FROM ingest_marks')).rows.map((r) => r.writer);
    const running = await startRole('serve', { ...live, ORRERY_DATA_DIR: join(dir, 'serve-running') });
    try {
      const earlier = new Set(await writers());
      const started = await serveChild(live);
      child = started.child;
      const [gone] = (await writers()).filter((w) => !earlier.has(w));
      assert.ok(gone);
      const { body, stored } = oneRequest('gone');
      await whileLocked(async () => {
        assert.equal(await answer(started.port, body), 200);
        await insertWaiting();
        await child!.stop('SIGKILL');
        await pool.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE wait_event_type = 'Lock'`);
      });
      assert.equal(await stored(), 0);
      // As if it had died 7 minutes ago: no server defers to a mark that old (5 minutes), so it may be replayed.
      await pool.query(`UPDATE ingest_marks SET marked_at = now() - interval '7 minutes' WHERE writer = $1`, [gone]);
      await pollUntil('the running server replaying the mark', stored, (n) => n === 1, { timeoutMs: 60_000 });
      await pollUntil('the mark deleted', writers, (w) => !w.includes(gone), { timeoutMs: 60_000 });
    } finally {
      await running.close();
    }
  });

  it('ORRERY_INGEST_ACK=synced: an answered request whose commit fails is committed again while the server runs', async () => {
    const serve = await startRole('serve', {
      ...env,
      MICROMEGAS_SQL_CONNECTION_STRING: postgres.connectionString,
      ORRERY_INGEST_ACK: 'synced',
    });
    try {
      const { body, stored } = oneRequest('commit-failed');
      await whileLocked(async () => {
        assert.equal(await answer(serve.httpPort, body), 200);
        await insertWaiting();
        // The insert fails (its backend ended: Postgres restarting, say) after the 200.
        await pool.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE wait_event_type = 'Lock'`);
        await pollUntil(
          'the failure',
          async () => serve.lines.filter((line) => /acknowledged block\(s\) failed/.test(line)).length,
          (n) => n > 0,
          { timeoutMs: 60_000 },
        );
        assert.equal(await stored(), 0);
      });
      await pollUntil('the commit tried again', stored, (n) => n === 1, { timeoutMs: 120_000 });
    } finally {
      await serve.close();
    }
  });

  it('ORRERY_INGEST_ACK=synced: an answered group whose rows Postgres refuses is left out; the one committed with it is stored', async () => {
    const serve = await startRole('serve', {
      ...env,
      MICROMEGAS_SQL_CONNECTION_STRING: postgres.connectionString,
      ORRERY_INGEST_ACK: 'synced',
    });
    // Postgres refuses the rows of one service (23514, as for a row it cannot store), whoever sends them.
    await pool.query(`ALTER TABLE processes ADD CONSTRAINT refused_exe CHECK (exe <> 'refused-rows') NOT VALID`);
    try {
      const [first, refused, good, later] = [
        'committing',
        'refused-rows',
        'committed-with-refused',
        'after-refused',
      ].map(oneRequest);
      await whileLocked(async () => {
        assert.equal(await answer(serve.httpPort, first.body), 200);
        await insertWaiting();
        // Each its own group (one at a time), written while the first group's commit waits: committed together, in
        // one statement, once it ends.
        assert.equal(await answer(serve.httpPort, refused.body), 200);
        assert.equal(await answer(serve.httpPort, good.body), 200);
      });
      await pollUntil('the group committed with the refused one', good.stored, (n) => n === 1, { timeoutMs: 120_000 });
      assert.equal(await first.stored(), 1);
      assert.equal(await refused.stored(), 0);
      await pollUntil(
        'the refused group left out',
        async () => serve.lines.filter((line) => /commit group \S+ were refused by Postgres and left out/.test(line)),
        (lines) => lines.length === 1,
        { timeoutMs: 60_000 },
      );
      // No commit is failing any more: a request is answered again before its commit.
      await whileLocked(async () => {
        assert.equal(await answer(serve.httpPort, later.body), 200);
        await insertWaiting();
      });
      await pollUntil('the later request', later.stored, (n) => n === 1, { timeoutMs: 120_000 });
    } finally {
      await pool.query('ALTER TABLE processes DROP CONSTRAINT refused_exe');
      await serve.close();
    }
  });

  it('ORRERY_INGEST_ACK=synced: materialize_partitions after a 200 waits for that request to commit', async () => {
    const serve = await startRole('serve', {
      ...env,
      MICROMEGAS_SQL_CONNECTION_STRING: postgres.connectionString,
      ORRERY_INGEST_ACK: 'synced',
    });
    const client = clientFor(serve.flightPort, admin);
    try {
      const { body } = oneRequest('materialized-after-200');
      const now = Math.floor(Date.now() / 1000);
      const range = `'${new Date((now - 600) * 1000).toISOString()}', '${new Date((now + 60) * 1000).toISOString()}', 660`;
      let materialized: Promise<unknown> | undefined;
      await whileLocked(async () => {
        assert.equal(await answer(serve.httpPort, body), 200);
        await insertWaiting();
        materialized = client.query(`SELECT * FROM materialize_partitions('blocks', ${range})`);
        await sleep(500);
      });
      await materialized;
      const counted = await client.query(`SELECT count(*) FROM blocks WHERE exe = 'materialized-after-200'`);
      assert.equal(Number(counted.getChildAt(0)!.get(0)), 1);
    } finally {
      client.close();
      await serve.close();
    }
  });
});

describe('issue 16: a replay reads the window of each mark, exactly', { timeout: 240_000 }, () => {
  let dir: string;
  let postgres: EmbeddedPostgres;
  let pool: pg.Pool;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'orrery-ingest-replay-window-'));
    postgres = await EmbeddedPostgres.start({ dataDir: join(dir, 'pg') });
    pool = new pg.Pool({ connectionString: postgres.connectionString, max: 2 });
    pool.on('error', () => {});
  });

  after(async () => {
    await pool?.end().catch(() => {});
    await postgres?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const serve = (): ReturnType<typeof startRole> =>
    startRole('serve', {
      ...sharedEnv({
        keys: [admin],
        admins: [admin.name],
        connectionString: postgres.connectionString,
        lakeDir: join(dir, 'lake'),
      }),
      // One mark at start-up, then none: every request commits without the WAL flush, covered by that mark.
      ORRERY_INGEST_MARK_MS: '600000',
    });
  const blocks = async (service: string): Promise<Array<{ block_id: string; insert_time: string }>> =>
    (
      await pool.query<{ block_id: string; insert_time: string }>(
        `SELECT b.block_id::text, b.insert_time::text FROM blocks b JOIN processes p USING (process_id)
          WHERE p.exe = $1 ORDER BY b.block_id`,
        [service],
      )
    ).rows;
  /** Deletes blocks' rows, as a crash of Postgres loses the commits not flushed yet. */
  const lose = (lost: ReadonlyArray<{ block_id: string }>): Promise<unknown> =>
    pool.query(`DELETE FROM blocks WHERE block_id = ANY($1::uuid[])`, [lost.map((b) => b.block_id)]);
  /** While `run` runs, this process's wall clock (the in-process server's) is `shift` ms off. */
  const shifted = async (shift: number, run: () => Promise<void>): Promise<void> => {
    const now = Date.now;
    Date.now = () => now.call(Date) + shift;
    try {
      await run();
    } finally {
      Date.now = now;
    }
  };

  it('a group named after the server clock stepped back is in its mark window; a quarantined block stays as it is', async () => {
    const first = await serve();
    let second: Awaited<ReturnType<typeof startRole>> | undefined;
    try {
      const send = sender(first.httpPort, 'stepped');
      // Each group's write reserves the next group's name: the third request's group is the first named on the
      // stepped clock, an hour before the server's mark.
      await send(0);
      await send(1);
      await shifted(-3_600_000, async () => {
        for (let i = 2; i < 5; i++) await send(i);
      });
      const stored = await blocks('stepped');
      assert.equal(stored.length, 5);
      // One block is quarantined since (its payload unreadable to the materializer); the others' rows are lost.
      const quarantined = stored[0];
      await pool.query(
        `INSERT INTO quarantined_blocks (block_id, view_set_name, insert_time, error, orrery_version)
         SELECT block_id, 'log_entries', insert_time, 'unreadable', 'test' FROM blocks WHERE block_id = $1`,
        [quarantined.block_id],
      );
      await lose(stored.slice(1));

      // The next server to start replays every live server's mark, this one's too.
      second = await serve();
      const replayed = await blocks('stepped');
      assert.deepEqual(
        replayed.map((b) => b.block_id),
        stored.map((b) => b.block_id),
      );
      assert.deepEqual(replayed[0], quarantined, 'the quarantined block was not inserted again');
      const { rows } = await pool.query(`SELECT 1 FROM quarantined_blocks WHERE block_id = $1`, [quarantined.block_id]);
      assert.equal(rows.length, 1);
      assert.ok(
        second.lines.some((line) => /4 with rows missing from Postgres, 4 inserted again/.test(line)),
        second.lines.join('\n'),
      );
    } finally {
      await second?.close();
      await first.close();
    }
  });

  it('a group whose rows Postgres refuses is left out; the other groups replayed with it are stored', async () => {
    const first = await serve();
    let second: Awaited<ReturnType<typeof startRole>> | undefined;
    try {
      const send = sender(first.httpPort, 'refused');
      for (let i = 0; i < 4; i++) await send(i);
      const stored = await blocks('refused');
      assert.equal(stored.length, 4);
      // A group written whose commit Postgres refused (a NUL in its process's properties, which jsonb cannot hold:
      // ingestion refuses such a request before it is written, a group object of another making could hold one),
      // named by the first server in its mark's window.
      const { rows: files } = await pool.query<{ payload_file: string }>(
        'SELECT payload_file FROM blocks WHERE block_id = $1',
        [stored[0].block_id],
      );
      const { rows: marks } = await pool.query<{ writer: string }>('SELECT writer::text FROM ingest_marks');
      const writer = marks.find((m) => payloadGroupMayBeBy(files[0].payload_file, m.writer))!.writer;
      const key = payloadGroupKey(BigInt(Date.now()) * 1_000_000n, writer);
      const payload = interleavedLogsRequest(0, { requests: 1, perRequest: 1, t0: 1n, service: 'bad' });
      const row: GroupRow = {
        blockId: randomUUID(),
        streamId: randomUUID(),
        processId: randomUUID(),
        audience: 'public',
        resource: { 'service.name': 'bad', note: 'a\u0000b' },
        begin: 1n,
        end: 1n,
        count: 1,
        file: key,
        offset: 0,
        size: payload.byteLength,
      };
      await first.store.putNew(key, [payload, ...groupManifest([payload], 'logs', [row])]);
      await lose(stored.slice(1));

      // Its rows go in the same replay statement as the three lost groups' (one per signal), which Postgres refuses.
      second = await serve();
      assert.deepEqual(
        (await blocks('refused')).map((b) => b.block_id),
        stored.map((b) => b.block_id),
      );
      assert.equal((await blocks('bad')).length, 0);
      assert.ok(
        second.lines.some((line) => /3 inserted again, 1 refused by Postgres and left out/.test(line)),
        second.lines.join('\n'),
      );
      assert.ok(second.lines.some((line) => line.includes(`commit group ${key} were refused`)));
    } finally {
      await second?.close();
      await first.close();
    }
  });

  it('a server whose clock runs ahead of Postgres names its groups inside its mark window', async () => {
    // Twenty minutes ahead from its start: its names are past what Postgres's clock at its mark says.
    let first: Awaited<ReturnType<typeof startRole>> | undefined;
    let second: Awaited<ReturnType<typeof startRole>> | undefined;
    try {
      await shifted(20 * 60_000, async () => {
        first = await serve();
        const send = sender(first.httpPort, 'ahead');
        for (let i = 0; i < 3; i++) await send(i);
      });
      const stored = await blocks('ahead');
      assert.equal(stored.length, 3);
      await lose(stored);
      second = await serve();
      assert.deepEqual(
        (await blocks('ahead')).map((b) => b.block_id),
        stored.map((b) => b.block_id),
      );
    } finally {
      await second?.close();
      await first?.close();
    }
  });
});

describe('issue 16: a server that stays up while Postgres crashes and restarts', { timeout: 240_000 }, () => {
  let dir: string;
  let postgres: EmbeddedPostgres;
  let pool: pg.Pool;
  // The server reaches Postgres through this proxy, so that it reconnects to the restarted one (on another port);
  // `target` 0: through none.
  let proxy: Server;
  let target = 0;
  const sockets = new Set<Socket>();

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'orrery-ingest-replay-live-'));
    postgres = await EmbeddedPostgres.start({ dataDir: join(dir, 'pg') });
    target = postgres.port;
    pool = new pg.Pool({ connectionString: postgres.connectionString, max: 2 });
    pool.on('error', () => {});
    proxy = createServer((client) => {
      if (target === 0) return void client.destroy(); // Postgres unreachable for now
      const server = connect(target, '127.0.0.1');
      for (const socket of [client, server]) {
        sockets.add(socket);
        socket.on('error', () => {});
        socket.on('close', () => {
          sockets.delete(socket);
          client.destroy();
          server.destroy();
        });
      }
      client.pipe(server).pipe(client);
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  });

  after(async () => {
    for (const socket of sockets) socket.destroy();
    proxy?.close();
    await pool?.end().catch(() => {});
    await postgres?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('inserts again, at its next mark, the acknowledged rows the crash lost', async () => {
    const serve = await serveMarking(
      postgres.connectionString.replace(`:${postgres.port}/`, `:${(proxy.address() as { port: number }).port}/`),
      join(dir, 'lake'),
    );
    try {
      const send = sender(serve.httpPort, 'live');
      await send(0);
      await pollUntil(
        "the server's mark",
        async () => Number((await pool.query<{ n: string }>(`SELECT count(*) AS n FROM ingest_marks`)).rows[0].n),
        (n) => n === 1,
        { timeoutMs: 60_000 },
      );
      // The server's next mark waits behind this lock, uncommitted, so nothing flushes the requests below.
      await stopBackgroundWriters(pool);
      const holder = await pool.connect();
      holder.on('error', () => {}); // its connection dies with Postgres
      await holder.query('BEGIN');
      await holder.query('SELECT * FROM ingest_marks FOR UPDATE');
      for (let i = 1; i < requests; i++) await send(i);
      const blocks = async (): Promise<number> =>
        Number((await pool.query<{ n: string }>(`SELECT count(*) AS n FROM blocks`)).rows[0].n);
      assert.equal(await blocks(), requests);

      await crash(postgres);
      holder.release(true);
      await pool.end().catch(() => {});
      await postgres.close();
      postgres = await EmbeddedPostgres.start({ dataDir: join(dir, 'pg') });
      target = postgres.port;
      pool = new pg.Pool({ connectionString: postgres.connectionString, max: 2 });
      pool.on('error', () => {});
      const survived = await blocks();
      assert.ok(survived < requests, `${survived} of ${requests} blocks survived`);
      // The server's next mark finds Postgres restarted and replays from its last one.
      await pollUntil('the replay', blocks, (n) => n === requests, { timeoutMs: 120_000 });
      const { rows } = await pool.query<{ exe: string; nb_objects: number; audience: string }>(
        `SELECT p.exe, b.nb_objects, b.audience FROM blocks b JOIN processes p USING (process_id)`,
      );
      assert.deepEqual(
        rows.map((r) => [r.exe, r.nb_objects, r.audience]),
        Array.from({ length: requests }, () => ['live', perRequest, 'public']),
      );
      await send(requests - 1);
      assert.equal(await blocks(), requests, 'a retry after the replay stores nothing twice');
    } finally {
      await serve.close();
    }
  });

  it('inserts again what a crash of one Postgres process lost: Postgres reinitializes, its start time unchanged', async () => {
    // A backend killed (by the OOM killer, say) makes the postmaster end every other process and recover from the
    // WAL on disk, losing the commits not flushed yet; pg_postmaster_start_time() stays the same.
    const serve = await serveMarking(
      postgres.connectionString.replace(`:${postgres.port}/`, `:${(proxy.address() as { port: number }).port}/`),
      join(dir, 'lake'),
    );
    const mine = `(SELECT count(*) FROM blocks b JOIN processes p USING (process_id) WHERE p.exe = 'reinit')`;
    const blocks = async (): Promise<number> =>
      Number((await pool.query<{ n: string }>(`SELECT ${mine} AS n`)).rows[0].n);
    try {
      const send = sender(serve.httpPort, 'reinit');
      await send(0);
      const sent = (await pool.query<{ t: string }>(`SELECT now()::text AS t`)).rows[0].t;
      await pollUntil(
        "the server's mark after the first request",
        async () =>
          Number(
            (await pool.query<{ n: string }>(`SELECT count(*) AS n FROM ingest_marks WHERE marked_at > $1`, [sent]))
              .rows[0].n,
          ),
        (n) => n === 1,
        { timeoutMs: 60_000 },
      );
      // The server's next mark waits behind this lock, and the processes that flush WAL on their own are stopped.
      await stopBackgroundWriters(pool);
      const holder = await pool.connect();
      holder.on('error', () => {}); // its backend is the one killed
      await holder.query('BEGIN');
      await holder.query('SELECT * FROM ingest_marks FOR UPDATE');
      for (let i = 1; i < requests; i++) await send(i);
      assert.equal(await blocks(), requests);
      const started = async (): Promise<string> =>
        (await pool.query<{ t: string }>(`SELECT pg_postmaster_start_time()::text AS t`)).rows[0].t;
      const before = await started();

      const { rows: stopped } = await pool.query<{ pid: number }>(
        `SELECT pid FROM pg_stat_activity
          WHERE backend_type IN ('walwriter', 'background writer', 'checkpointer', 'autovacuum launcher')`,
      );
      const backend = (await holder.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0].pid;
      // The server reaches Postgres again only once what survived is counted.
      target = 0;
      for (const socket of sockets) socket.destroy();
      for (const pid of [backend, ...stopped.map((r) => r.pid)]) signal(pid, 'SIGKILL');
      holder.release(true);
      await pool.end().catch(() => {});
      pool = new pg.Pool({ connectionString: postgres.connectionString, max: 2 });
      pool.on('error', () => {});
      // Back once recovered: its background processes started again (a query before the postmaster noticed the
      // crash would still see the rows).
      const old = new Set(stopped.map((r) => r.pid));
      await pollUntil(
        'Postgres recovered',
        () =>
          pool
            .query<{ pid: number }>(`SELECT pid FROM pg_stat_activity WHERE backend_type = 'checkpointer'`)
            .then(({ rows }) => rows.map((r) => r.pid))
            .catch(() => []),
        (pids) => pids.length > 0 && !pids.some((pid) => old.has(pid)),
        { timeoutMs: 60_000 },
      );
      const survived = await blocks();
      assert.equal(await started(), before, 'the same postmaster');
      assert.ok(survived < requests, `${survived} of ${requests} blocks survived`);
      target = postgres.port;
      await pollUntil('the replay', blocks, (n) => n === requests, { timeoutMs: 120_000 });
    } finally {
      await serve.close();
    }
  });

  it("a start deletes another server's mark only while it is stale: one its server marks meanwhile stays", async () => {
    // A server whose oldest group has been in flight for over half an hour keeps its mark's replay_from: its mark
    // is stale to a start (marked_at), which replays it; the server then marks again, before the start's DELETE.
    await (await serveMarking(postgres.connectionString, join(dir, 'lake'))).close(); // the schema, when run alone
    const writer = randomUUID();
    const from = BigInt(Date.now() - 40 * 60_000) * 1_000_000n;
    await pool.query(
      `INSERT INTO ingest_marks (writer, replay_from, replay_until, postgres_started, marked_at)
       VALUES ($1, $2, $3, now(), now() - interval '31 minutes')`,
      [writer, String(from), String(from + 300_000_000_000n)],
    );
    // The server's next mark, held (a row lock) until the start's DELETE waits on it.
    const marking = await pool.connect();
    let starting: ReturnType<typeof serveMarking> | undefined;
    try {
      await marking.query('BEGIN');
      await marking.query('UPDATE ingest_marks SET marked_at = now() WHERE writer = $1', [writer]);
      starting = serveMarking(postgres.connectionString, join(dir, 'lake'));
      starting.catch(() => {});
      await pollUntil(
        "the start's DELETE of the stale marks, waiting",
        async () =>
          Number(
            (
              await pool.query<{ n: string }>(
                `SELECT count(*) AS n FROM pg_stat_activity
                  WHERE wait_event_type = 'Lock' AND query LIKE '%DELETE FROM ingest_marks%'`,
              )
            ).rows[0].n,
          ),
        (n) => n === 1,
        { timeoutMs: 60_000 },
      );
      await marking.query('COMMIT');
    } finally {
      marking.release();
    }
    const serve = await starting!;
    try {
      const { rows } = await pool.query('SELECT 1 FROM ingest_marks WHERE writer = $1', [writer]);
      assert.equal(rows.length, 1, "the server's mark, marked again, is kept");
    } finally {
      await serve.close();
      await pool.query('DELETE FROM ingest_marks WHERE writer = $1', [writer]);
    }
  });

  it('a clean stop deletes its mark once its commits are flushed: later starts replay none of its groups', async () => {
    const since = (await pool.query<{ t: string }>(`SELECT now()::text AS t`)).rows[0].t;
    const marks = async (): Promise<number> =>
      Number(
        (await pool.query<{ n: string }>(`SELECT count(*) AS n FROM ingest_marks WHERE marked_at > $1`, [since]))
          .rows[0].n,
      );
    const serve = await serveMarking(postgres.connectionString, join(dir, 'lake'));
    let closed = false;
    try {
      const send = sender(serve.httpPort, 'clean');
      for (let i = 0; i < requests; i++) await send(i);
      await pollUntil("the server's mark", marks, (n) => n === 1, { timeoutMs: 60_000 });
      await serve.close();
      closed = true;
      assert.equal(await marks(), 0);
      const { rows } = await pool.query<{ n: string }>(
        `SELECT count(*) AS n FROM blocks b JOIN processes p USING (process_id) WHERE p.exe = 'clean'`,
      );
      assert.equal(Number(rows[0].n), requests);
    } finally {
      if (!closed) await serve.close();
    }
  });
});
