// The embedded Postgres server: cluster under the data folder, restarts, crashes, refusals.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { appendFileSync, chmodSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { EmbeddedPostgres } from '../../src/metadata/index.js';
import { isRunning, recordingLog, tempDataDir, waitFor, withClient } from './fixtures.js';

const asRoot = process.getuid?.() === 0;
const indexUrl = new URL('../../src/metadata/index.js', import.meta.url).href;

/** Runs a node process that starts a server on `dataDir`, prints its pid, then does `then`. */
function ownerProcess(
  dataDir: string,
  then: string,
): { pid: Promise<number>; exited: Promise<number | null>; kill(): void } {
  const script = `import { EmbeddedPostgres } from ${JSON.stringify(indexUrl)};
const server = await EmbeddedPostgres.start({ dataDir: ${JSON.stringify(dataDir)} });
console.log(server.pid);
${then}`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  const pid = new Promise<number>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes('\n')) resolve(Number(out.trim()));
    });
    child.on('exit', () => reject(new Error(`owner process exited before printing a pid: ${out}`)));
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { pid, exited, kill: () => child.kill('SIGKILL') };
}

describe('EmbeddedPostgres', () => {
  const data = tempDataDir();
  after(() => data.remove());

  it('starts a real server with its cluster under <dataDir>/postgres, and closes idempotently', async () => {
    const { log, lines } = recordingLog();
    const server = await EmbeddedPostgres.start({ dataDir: data.dir, log });
    try {
      assert.match(server.connectionString, /^postgres:\/\/postgres:[^@]+@127\.0\.0\.1:\d+\/orrery$/);
      const row = await withClient(
        server.connectionString,
        async (c) => (await c.query('SELECT version() AS v, current_database() AS db')).rows[0],
      );
      assert.match(row.v, /^PostgreSQL 1[78]\./);
      assert.equal(row.db, 'orrery');
      const cluster = join(data.dir, 'postgres');
      assert.ok(statSync(join(cluster, 'PG_VERSION')).isFile());
      if (asRoot) {
        assert.notEqual(statSync(cluster).uid, 0, 'the cluster belongs to the non-root server user');
        // mkdtemp made the data folder private: the server user was let in (search permission only)
        assert.ok(
          lines.includes(
            `info: allowed the OS user 'postgres', which runs the embedded Postgres server, to enter ${data.dir} (chmod o+x)`,
          ),
        );
        assert.equal(statSync(data.dir).mode & 0o777, 0o701);
      }
    } finally {
      await server.close();
      await server.close();
    }
    assert.equal(isRunning(server.pid), false);
  });

  it('reuses the cluster on the next start: data is kept', async () => {
    const first = await EmbeddedPostgres.start({ dataDir: data.dir });
    await withClient(first.connectionString, (c) => c.query('CREATE TABLE kept (x int); INSERT INTO kept VALUES (42)'));
    await first.close();
    const second = await EmbeddedPostgres.start({ dataDir: data.dir });
    try {
      const rows = await withClient(second.connectionString, async (c) => (await c.query('SELECT x FROM kept')).rows);
      assert.deepEqual(rows, [{ x: 42 }]);
    } finally {
      await second.close();
    }
  });

  it('starts after the server was killed with SIGKILL while a client was connected (stale postmaster.pid)', async () => {
    const first = await EmbeddedPostgres.start({ dataDir: data.dir, log: () => {} });
    const client = await withClientKept(first.connectionString);
    process.kill(first.pid, 'SIGKILL');
    assert.ok(readFileSync(join(data.dir, 'postgres', 'postmaster.pid'), 'utf8').startsWith(`${first.pid}\n`));
    // After a real crash the next start is a new process and the old server is gone. Here the
    // killed server is this process's child, a zombie until Node reaps it, and Postgres takes a
    // zombie's pid for a live postmaster: wait for the reaping.
    assert.ok(await waitFor(() => !existsSync(`/proc/${first.pid}`)));
    const second = await EmbeddedPostgres.start({ dataDir: data.dir });
    try {
      const rows = await withClient(second.connectionString, async (c) => (await c.query('SELECT x FROM kept')).rows);
      assert.deepEqual(rows, [{ x: 42 }]);
    } finally {
      await client.end().catch(() => {});
      await first.close();
      await second.close();
    }
  });

  it('starts when postmaster.pid names a live process that is not a server of this cluster', async () => {
    const stranger = spawn('sleep', ['30'], {
      stdio: 'ignore',
      ...(asRoot ? { uid: statSync(join(data.dir, 'postgres')).uid } : {}),
    });
    const pidFile = join(data.dir, 'postgres', 'postmaster.pid');
    writeFileSync(pidFile, `${stranger.pid}\n${join(data.dir, 'postgres')}\n0\n5432\n\n127.0.0.1\n0 0\nready   \n`);
    try {
      const server = await EmbeddedPostgres.start({ dataDir: data.dir });
      try {
        const row = await withClient(server.connectionString, async (c) => (await c.query('SELECT 1 AS one')).rows[0]);
        assert.deepEqual(row, { one: 1 });
        assert.notEqual(server.pid, stranger.pid);
        assert.equal(isRunning(stranger.pid!), true, 'the process the stale postmaster.pid named was left alone');
      } finally {
        await server.close();
      }
    } finally {
      stranger.kill('SIGKILL');
    }
  });

  it('refuses a second server on a folder its own server is using', async () => {
    const server = await EmbeddedPostgres.start({ dataDir: data.dir });
    try {
      await assert.rejects(EmbeddedPostgres.start({ dataDir: data.dir }), {
        name: 'MetadataError',
        code: 'DATA_DIR_IN_USE',
        message: `${join(data.dir, 'postgres')} is already served by an embedded Postgres server of this process (pid ${server.pid})`,
      });
    } finally {
      await server.close();
    }
  });

  it('reports a server that cannot start with the reason Postgres gives', async () => {
    const broken = tempDataDir();
    try {
      await (await EmbeddedPostgres.start({ dataDir: broken.dir })).close();
      appendFileSync(join(broken.dir, 'postgres', 'postgresql.conf'), "\nnot_a_setting = 'x'\n");
      await assert.rejects(EmbeddedPostgres.start({ dataDir: broken.dir }), {
        code: 'EMBEDDED_START_FAILED',
        message: /exited during start-up \(exit code 1\): .*unrecognized configuration parameter "not_a_setting"/s,
      });
    } finally {
      broken.remove();
    }
  });

  it('refuses a non-empty folder that holds no cluster', async () => {
    const odd = tempDataDir();
    try {
      mkdirSync(join(odd.dir, 'postgres'));
      writeFileSync(join(odd.dir, 'postgres', 'notes.txt'), 'hello');
      await assert.rejects(EmbeddedPostgres.start({ dataDir: odd.dir }), {
        code: 'CLUSTER_INVALID',
        message: `${join(odd.dir, 'postgres')} is not empty but holds no Postgres cluster (no PG_VERSION); move it away`,
      });
    } finally {
      odd.remove();
    }
  });

  it(
    'issue 15 item 6: as root, a data folder the server user cannot enter keeps its cluster under the reachable root, found again on the next start',
    { skip: !asRoot && 'not running as root' },
    async () => {
      const closed = tempDataDir();
      const reachable = tempDataDir();
      try {
        chmodSync(closed.dir, 0o755);
        chmodSync(reachable.dir, 0o755);
        const inner = join(closed.dir, 'private');
        const dataDir = join(inner, 'data');
        mkdirSync(dataDir, { recursive: true });
        chmodSync(inner, 0o700);
        const root = join(reachable.dir, 'orrery');
        const first = recordingLog();
        let server = await EmbeddedPostgres.start({ dataDir, reachableRoot: root, log: first.log });
        await withClient(server.connectionString, (c) =>
          c.query('CREATE TABLE kept (x int); INSERT INTO kept VALUES (7)'),
        );
        await server.close();
        const said = first.lines.find((line) => line.includes('its cluster is kept in'));
        const cluster = /kept in (\S+) instead/.exec(said ?? '')?.[1] ?? '';
        assert.match(cluster, new RegExp(`^${root}/clusters/[0-9a-f]{16}/postgres$`), first.lines.join('\n'));
        assert.ok(existsSync(join(cluster, 'PG_VERSION')));
        assert.equal(existsSync(join(dataDir, 'postgres')), false, 'nothing was made in the private folder');
        assert.equal(statSync(inner).mode & 0o777, 0o700, 'the private folder keeps its mode');
        server = await EmbeddedPostgres.start({ dataDir, reachableRoot: root });
        try {
          const rows = await withClient(
            server.connectionString,
            async (c) => (await c.query('SELECT x FROM kept')).rows,
          );
          assert.deepEqual(rows, [{ x: 7 }]);
        } finally {
          await server.close();
        }
      } finally {
        closed.remove();
        reachable.remove();
      }
    },
  );

  it(
    'as root, reports an OS user for the server that cannot be created',
    { skip: !asRoot && 'not running as root' },
    async () => {
      await assert.rejects(EmbeddedPostgres.start({ dataDir: data.dir, osUser: 'Not A User!' }), {
        code: 'SERVER_USER_UNAVAILABLE',
        message:
          /^Postgres cannot run as root and the OS user 'Not A User!' does not exist; creating it with useradd failed: .*invalid user name/,
      });
    },
  );

  it('stops the server when its owner exits without closing it', async () => {
    const owner = ownerProcess(data.dir, '// ends here: nothing keeps the event loop alive');
    const pid = await owner.pid;
    assert.equal(await owner.exited, 0);
    assert.equal(isRunning(pid), false, 'the server is gone by the time its owner has exited');
  });

  it(
    'stops the server when its owner is killed with SIGKILL, and the next start works',
    { skip: !existsSetpriv() && 'no setpriv' },
    async () => {
      const owner = ownerProcess(data.dir, 'setInterval(() => {}, 1000);');
      const pid = await owner.pid;
      owner.kill();
      await owner.exited;
      assert.ok(await waitFor(() => !isRunning(pid)), 'the orphaned server stopped');
      const { log, lines } = recordingLog();
      const server = await EmbeddedPostgres.start({ dataDir: data.dir, log });
      await server.close();
      assert.deepEqual(
        lines.filter((l) => l.startsWith('error')),
        [],
      );
    },
  );
});

async function withClientKept(connectionString: string): Promise<{ end(): Promise<void> }> {
  const pg = (await import('pg')).default;
  const client = new pg.Client({ connectionString });
  client.on('error', () => {});
  await client.connect();
  await client.query('SELECT 1');
  return client;
}

function existsSetpriv(): boolean {
  return ['/usr/bin/setpriv', '/bin/setpriv'].some((path) => {
    try {
      return statSync(path).isFile();
    } catch {
      return false;
    }
  });
}
