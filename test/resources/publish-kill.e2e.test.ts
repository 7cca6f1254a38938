// A publication killed in the middle of a backfill (issue 13 items 4 and 7), with a real kill: the server
// running `orrery publish` is SIGKILLed once it has rewritten a first partition file with a stored
// column. Then, on a new server over the same Postgres and object store: every answer is as before the
// publication, for an admin and a team's key (the files not yet rewritten are read by the expression);
// a publish is refused naming the dead holder of the lock until its lease runs out (within a minute);
// the next publish resumes, rewriting only the files the killed one had not, and the column is read.
// Then the `orrery publish` process itself SIGKILLed mid-backfill while its server lives: the server stops the
// step when the call goes, the lock is free within a minute, and the next publish resumes the same way. Then
// SIGKILLed between its install and serve steps: the lock, handed over to its token, expires within a minute, and
// the next publish (the same publication) serves it, with nothing left installing and the lock released.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { runResourcesCli } from '../../src/resources/index.js';
import {
  adminAndTeams,
  clientFor,
  plainRows,
  sharedEnv,
  sleep,
  startRole,
  startServeChild,
  startTestPostgres,
  type TestPostgres,
} from '../lakehouse/lakehouse-fixtures.js';
import { pastInsertTimes, podLogs, postOtlp } from '../support/otlp.js';

const [admin, team] = adminAndTeams('publish-kill');
const orrery = new URL('../../src/orrery.cjs', import.meta.url).pathname;
const partitions = 10;
const iso = (seconds: number) => new Date(seconds * 1000).toISOString();

const queries = [
  "SELECT msg FROM log_entries WHERE properties->>'pod' = 'pod-3' ORDER BY msg",
  "SELECT properties->>'pod' AS pod, count(*) AS n FROM log_entries GROUP BY 1 ORDER BY 1",
];

describe('a publication killed mid-backfill resumes from the ledger (issue 13)', { timeout: 480_000 }, () => {
  let postgres: TestPostgres;
  const lakeDir = mkdtempSync(join(tmpdir(), 'orrery-kill-lake-'));
  const dataDir = mkdtempSync(join(tmpdir(), 'orrery-kill-data-'));
  const dir = mkdtempSync(join(tmpdir(), 'orrery-kill-publish-'));
  let env: Record<string, string>;
  const answers = new Map<string, unknown>();

  const everyAnswer = async (port: number) => {
    const all = new Map<string, unknown>();
    for (const key of [admin, team]) {
      const client = clientFor(port, key);
      try {
        for (const sql of queries) all.set(`${key.name}: ${sql}`, await plainRows(client, sql));
      } finally {
        client.close();
      }
    }
    return all;
  };
  const publish = async (port: number) => {
    const [out, err]: [string[], string[]] = [[], []];
    const io = { out: (l: string) => out.push(l), err: (l: string) => err.push(l) };
    const cliEnv = { ORRERY_FLIGHT_SQL_ADDR: `127.0.0.1:${port}`, ORRERY_API_KEY: admin.key };
    const status = await runResourcesCli(['--dir', dir], { env: cliEnv, out: io.out, err: io.err }, 'publish');
    return { status, out: out.join('\n'), err: err.join('\n') };
  };
  /** The files of log_entries holding the stored column of `entry`. */
  const holding = async (entry = 'pod') =>
    Number(
      (
        await postgres.pool.query<{ n: string }>(
          `SELECT count(*) AS n FROM resource_column_files JOIN resource_columns USING (view_set_name, column_name)
            WHERE view_set_name = 'log_entries' AND entry_key = $1`,
          [entry],
        )
      ).rows[0]?.n ?? 0,
    );
  /** Waits until the lock has expired or gone; fails after `ms` since `since`. */
  const lockFreed = async (since: number, ms: number, what: string) => {
    for (;;) {
      const { rows } = await postgres.pool.query<{ live: boolean }>(
        'SELECT expires_at > now() AS live FROM resource_locks',
      );
      if (!rows[0]?.live) return;
      assert.ok(Date.now() - since < ms, `the lock of the killed ${what} did not expire`);
      await sleep(1000);
    }
  };
  /** Publishes again: it rewrites the `partitions - done` files left, and every file then holds the column. */
  const resumes = async (port: number, entry: string, done: number) => {
    const resumed = await publish(port);
    assert.equal(resumed.status, 0, resumed.err);
    assert.match(
      resumed.out,
      new RegExp(
        `^backfill stored column ${entry} \\(__orr_[0-9a-f]{16} VARCHAR\\) on log_entries: ${partitions - done} partition file\\(s\\) to rewrite`,
        'm',
      ),
    );
    assert.equal(await holding(entry), partitions);
    for (const [sql, rows] of await everyAnswer(port)) assert.deepEqual(rows, answers.get(sql), sql);
  };

  /** A real `orrery publish --dir <dir>` process against the server on `port`, its output kept. */
  const publishProcess = (port: number) => {
    const child = spawn(process.execPath, [orrery, 'publish', '--dir', dir], {
      env: { ...process.env, ORRERY_FLIGHT_SQL_ADDR: `127.0.0.1:${port}`, ORRERY_API_KEY: admin.key },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let printed = '';
    child.stdout.on('data', (chunk: Buffer) => (printed += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (printed += chunk.toString()));
    const exited = once(child, 'exit');
    return {
      child,
      printed: () => printed,
      kill: async () => {
        child.kill('SIGKILL');
        await exited;
      },
    };
  };

  before(async () => {
    postgres = await startTestPostgres();
    env = {
      ...sharedEnv({ keys: [admin, team], admins: [admin.name], connectionString: postgres.connectionString, lakeDir }),
      ORRERY_DATA_DIR: dataDir,
    };
    // Ten partitions of log_entries a second apart, pods 0 to 9; the odd ones sent by team_a's key.
    const setup = await startRole('serve', env);
    try {
      const start = Math.floor(Date.now() / 1000);
      for (let i = 0; i < partitions; i++) {
        const sent = await postOtlp(setup.httpPort, 'logs', i % 2 === 1 ? team.key : admin.key, podLogs(i));
        assert.equal(sent.status, 200, sent.text);
        await sleep(1100);
      }
      const client = clientFor(setup.flightPort, admin);
      try {
        for (const view of ['processes', 'log_entries'])
          await client.query(
            `SELECT * FROM materialize_partitions('${view}', '${iso(start - 2)}', '${iso(pastInsertTimes())}', 1)`,
          );
      } finally {
        client.close();
      }
      for (const [sql, rows] of await everyAnswer(setup.flightPort)) answers.set(sql, rows);
    } finally {
      await setup.close();
    }
    assert.deepEqual(answers.get(`team_a: ${queries[0]}`), [{ msg: 'entry 3.0' }, { msg: 'entry 3.1' }]);
    mkdirSync(join(dir, 'resources'), { recursive: true });
    const resources = { pod: { column: { table: 'log_entries', expression: "properties->>'pod'" } } };
    writeFileSync(join(dir, 'resources', 'logs.resources.json'), JSON.stringify({ resources }));
  });
  after(async () => {
    await postgres?.close();
    for (const d of [lakeDir, dataDir, dir]) rmSync(d, { recursive: true, force: true });
  });

  it('SIGKILL after the first file rewritten; answers unchanged; the lock expires; the next publish resumes', async () => {
    const { child, port } = await startServeChild(env);
    const killedPid = child.child.pid!;
    try {
      const running = publish(port);
      // Killed as soon as Postgres lists a first file holding the column (the backfill commits one at a time).
      while ((await holding()) === 0) {
        assert.ok(child.running, child.tail());
        await sleep(10);
      }
      await child.stop('SIGKILL');
      assert.equal((await running).status, 1);
    } finally {
      if (child.running) await child.stop('SIGKILL');
    }
    const done = await holding();
    assert.ok(done > 0 && done < partitions, `${done} of ${partitions} files rewritten when killed`);
    const { rows: ledger } = await postgres.pool.query<{ state: string }>(
      "SELECT state FROM resource_ledger WHERE entry_key = 'pod'",
    );
    assert.deepEqual(ledger, [{ state: 'installing' }]);

    const { child: again, port: againPort } = await startServeChild(env);
    try {
      // The files not rewritten yet are read by the expression: no answer depends on how far it got.
      for (const [sql, rows] of await everyAnswer(againPort)) assert.deepEqual(rows, answers.get(sql), sql);
      // The dead holder's last renewal, as of now (its lease is 60 s): the refusal below does not race this server's
      // start and the reads above, which a loaded machine stretched past the lease (the publish then went through).
      await postgres.pool.query("UPDATE resource_locks SET expires_at = now() + interval '60 seconds'");
      const refused = await publish(againPort);
      assert.equal(refused.status, 1);
      assert.match(
        refused.err,
        new RegExp(`another installation holds the resources lock: .* pid ${killedPid}, since`),
      );
      // The dead holder renews nothing: its lease runs out within a minute of its last renewal.
      await lockFreed(Date.now(), 75_000, 'server');
      await resumes(againPort, 'pod', done);
      const client = clientFor(againPort, admin);
      try {
        const table = await client.query(queries[0]);
        const provenance = JSON.parse(table.schema.metadata.get('orrery.provenance') ?? '{}') as {
          stored_columns?: Array<{ use: string }>;
        };
        assert.equal(provenance.stored_columns?.[0]?.use, 'substituted');
      } finally {
        client.close();
      }
    } finally {
      await again.stop();
    }
  });

  it('the CLI SIGKILLed mid-backfill, its server alive: the lock is free within a minute; the next publish resumes', async () => {
    const { child: server, port } = await startServeChild(env);
    try {
      const resources = {
        pod: { column: { table: 'log_entries', expression: "properties->>'pod'" } },
        pod_upper: { column: { table: 'log_entries', expression: "upper(properties->>'pod')" } },
      };
      writeFileSync(join(dir, 'resources', 'logs.resources.json'), JSON.stringify({ resources }));
      const cli = publishProcess(port);
      // Killed as soon as a first file holds the new column: no process is left to present its lock token.
      while ((await holding('pod_upper')) === 0) {
        assert.equal(cli.child.exitCode, null, cli.printed());
        await sleep(10);
      }
      await cli.kill();
      const killedAt = Date.now();
      // The server sees the call gone, stops the step and releases the lock; at worst its lease runs out.
      await lockFreed(killedAt, 75_000, 'CLI');
      const done = await holding('pod_upper');
      // The installation stopped with its client: files are left for the next publish to resume with.
      assert.ok(done < partitions, `${done} of ${partitions} files rewritten after the CLI was killed`);
      await resumes(port, 'pod_upper', done);
    } finally {
      await server.stop();
    }
  });

  it('the CLI SIGKILLed between its install and serve steps: the lock expires within a minute; the next publish serves', async () => {
    const { child: server, port } = await startServeChild(env);
    const serverPid = server.child.pid!;
    const blocker = await postgres.pool.connect();
    try {
      const resources = {
        pod: { column: { table: 'log_entries', expression: "properties->>'pod'" } },
        pod_upper: { column: { table: 'log_entries', expression: "upper(properties->>'pod')" } },
        pod_lower: { column: { table: 'log_entries', expression: "lower(properties->>'pod')" } },
      };
      writeFileSync(join(dir, 'resources', 'logs.resources.json'), JSON.stringify({ resources }));
      mkdirSync(join(dir, 'views'), { recursive: true });
      writeFileSync(
        join(dir, 'views', 'minute_counts.sql'),
        `CREATE MATERIALIZED VIEW minute_counts WITH (
  extract_query = $$SELECT date_bin('1 minute', time) AS time_bin, count(*) AS n, audience FROM log_entries
    WHERE insert_time >= '{begin}' AND insert_time < '{end}' GROUP BY ALL$$,
  count_src_query = $$SELECT sum(nb_objects) AS count FROM blocks WHERE insert_time >= '{begin}' AND insert_time < '{end}'$$,
  merge_partitions_query = $$SELECT time_bin, sum(n) AS n, audience FROM {source} GROUP BY ALL$$,
  update_group = 4000,
  time_column = 'time_bin'
)
`,
      );
      // The view set definitions held against writes (reads go on): the CLI, its install step done, waits in its
      // views step, which runs between install and serve, and is killed there.
      await blocker.query('BEGIN');
      await blocker.query('LOCK TABLE lakehouse_view_set_definitions IN EXCLUSIVE MODE');
      const cli = publishProcess(port);
      while (!/^Applying 1 change\(s\)/m.test(cli.printed())) {
        assert.equal(cli.child.exitCode, null, cli.printed());
        await sleep(20);
      }
      await cli.kill();
      await blocker.query('ROLLBACK');
      const killedAt = Date.now();
      assert.match(cli.printed(), /^installed: 3 entr\(ies\) ready; serve next$/m);
      assert.doesNotMatch(cli.printed(), /^served publication/m);
      assert.equal(await holding('pod_lower'), partitions);
      const state = async () =>
        (
          await postgres.pool.query<{ ledger: string; served: boolean }>(
            `SELECT (SELECT state FROM resource_ledger WHERE entry_key = 'pod_lower') AS ledger,
                    (SELECT served_at IS NOT NULL FROM resource_publications ORDER BY id DESC LIMIT 1) AS served`,
          )
        ).rows[0];
      // Installed, not served: the publication is recorded but not the served head.
      assert.deepEqual(await state(), { ledger: 'ready', served: false });
      // The install step handed the lock to the dead CLI's token: another publish is refused until it expires.
      const refused = await publish(port);
      assert.equal(refused.status, 1);
      assert.match(
        refused.err,
        new RegExp(
          `another installation holds the resources lock: publish \\(install\\) by .* on host .*, pid ${serverPid}, since`,
        ),
      );
      await lockFreed(killedAt, 75_000, 'CLI');
      // The next publish: the same files, so the same publication; nothing to install again; served; lock released.
      const resumed = await publish(port);
      assert.equal(resumed.status, 0, `${resumed.out}\n${resumed.err}`);
      const id = /^no file changes: publication (\d+) again/m.exec(resumed.out)?.[1];
      assert.ok(id, resumed.out);
      assert.match(resumed.out, /^installed column pod_lower on log_entries .*: ready; checked again for drift$/m);
      assert.match(resumed.out, new RegExp(`^served publication ${id}$`, 'm'));
      assert.deepEqual(await state(), { ledger: 'ready', served: true });
      assert.deepEqual((await postgres.pool.query('SELECT * FROM resource_locks')).rows, []);
      assert.equal(await holding('pod_lower'), partitions);
      for (const [sql, rows] of await everyAnswer(port)) assert.deepEqual(rows, answers.get(sql), sql);
      const client = clientFor(port, admin);
      try {
        const names = (await client.query('SELECT view_set_name FROM list_view_set_definitions()')).toArray();
        assert.ok(names.some((r: Record<string, unknown>) => r.view_set_name === 'minute_counts'));
      } finally {
        client.close();
      }
    } finally {
      await blocker.query('ROLLBACK').catch(() => {});
      blocker.release();
      await server.stop();
    }
  });
});
