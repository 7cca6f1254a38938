// Shared by the lakehouse tests: a Postgres of their own, Orrery in any role, daemons as child
// processes, bounded polling, and row helpers for Flight SQL answers.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath, pathToFileURL } from 'node:url';
import assert from 'node:assert/strict';
import { after, before } from 'node:test';
import { DuckDBInstance } from '@duckdb/node-api';
import pg from 'pg';
import { startOrrery, type Orrery, type Role } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { EmbeddedPostgres } from '../../src/metadata/index.js';
import { TestFlightClient } from '../support/flight-client.js';
import { adminKey, servedByTheTest } from '../support/orrery-process.js';
import { runnerS3, s3LakeEnv } from '../support/s3-server.js';
import { protobufOf } from '../support/otlp-logs-corpus.js';
import { scrapeMetrics } from '../support/metric-value.js';

export { sleep };

/** Posts `count` OTLP/HTTP protobuf logs requests (`request(i)` the i-th body) with the admin key, four at a time; each must answer 200. */
export async function postLogRequests(
  httpPort: number,
  count: number,
  request: (i: number) => Uint8Array,
): Promise<void> {
  let next = 0;
  const send = async (): Promise<void> => {
    for (let i = next++; i < count; i = next++) {
      const response = await fetch(`http://127.0.0.1:${httpPort}/v1/logs`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-protobuf', authorization: `Bearer ${adminKey.key}` },
        body: Buffer.from(request(i)),
      });
      assert.equal(response.status, 200, await response.text());
    }
  };
  await Promise.all(Array.from({ length: 4 }, send));
}

/**
 * The body of OTLP logs request `i` of `requests` with `perRequest` records: record j at t0 + j * requests +
 * (requests - 1 - i), so no request arrives in time order and every record's time differs; its message `m-<i>-<j>`
 * and the suffix.
 */
export function interleavedLogsRequest(
  i: number,
  shape: { requests: number; perRequest: number; t0: bigint; service: string; suffix?: string },
): Uint8Array {
  const { requests, perRequest, t0, service, suffix = '' } = shape;
  return protobufOf({
    resourceLogs: [
      {
        resource: { attributes: [{ key: 'service.name', value: { stringValue: service } }] },
        scopeLogs: [
          {
            scope: { name: service },
            logRecords: Array.from({ length: perRequest }, (_, j) => ({
              timeUnixNano: String(t0 + BigInt(j * requests + (requests - 1 - i))),
              severityNumber: 9,
              body: { stringValue: `m-${i}-${j}${suffix}` },
            })),
          },
        ],
      },
    ],
  });
}

/** materialize_partitions' range arguments over the last ten minutes and the next one, as one partition. */
export function recentRange(): string {
  const now = Math.floor(Date.now() / 1000);
  return `'${new Date((now - 600) * 1000).toISOString()}', '${new Date((now + 60) * 1000).toISOString()}', 660`;
}

/** A key as MICROMEGAS_API_KEYS lists it. */
export interface TestKey {
  readonly name: string;
  readonly key: string;
  readonly audiences: readonly string[];
}

/** An admin (audience public) and two teams' keys (team_a, team_b), each key unique to the suite named. */
export function adminAndTeams(suite: string): [TestKey, TestKey, TestKey] {
  return [
    { name: adminKey.name, key: adminKey.key, audiences: ['public'] },
    { name: 'team_a', key: `team-a-key-${suite}-01`, audiences: ['team_a'] },
    { name: 'team_b', key: `team-b-key-${suite}-01`, audiences: ['team_b'] },
  ];
}

/** An embedded Postgres the test owns (Orrery's own is not reachable from outside), with a pool on it. */
export interface TestPostgres {
  readonly connectionString: string;
  readonly pool: pg.Pool;
  close(): Promise<void>;
}

/** Starts a real Postgres in a temporary folder; `close` stops it and removes the folder. */
export async function startTestPostgres(): Promise<TestPostgres> {
  const dir = mkdtempSync(join(tmpdir(), 'orrery-lakehouse-pg-'));
  let server: EmbeddedPostgres;
  try {
    server = await EmbeddedPostgres.start({ dataDir: dir });
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  const pool = new pg.Pool({ connectionString: server.connectionString, max: 4 });
  pool.on('error', () => {}); // the server stopping under an idle connection is expected at close
  // ... and under one a test still holds (see close).
  pool.on('connect', (client) => client.on('error', () => {}));
  let closing: Promise<void> | undefined;
  return {
    connectionString: server.connectionString,
    pool,
    close: () =>
      (closing ??= (async () => {
        // pool.end() waits for every client to be released: one a test still holds (cancelled at its timeout between
        // connect() and release()) would keep it, and the test file, waiting for good. The server's shutdown ends it.
        await Promise.race([pool.end().catch(() => {}), sleep(10_000, undefined, { ref: false })]);
        await server.close();
        rmSync(dir, { recursive: true, force: true });
      })()),
  };
}

/** The settings every Orrery of a test shares: keys, admins, metadata database, object store. */
export function sharedEnv(options: {
  keys: readonly TestKey[];
  admins: readonly string[];
  connectionString: string;
  lakeDir?: string;
}): Record<string, string> {
  return {
    MICROMEGAS_API_KEYS: JSON.stringify(options.keys),
    MICROMEGAS_ADMINS: JSON.stringify(options.admins),
    MICROMEGAS_SQL_CONNECTION_STRING: options.connectionString,
    ...lakeEnv(options.lakeDir),
    // npm test runs some suites again with the native addon off.
    ...(process.env.ORRERY_NATIVE ? { ORRERY_NATIVE: process.env.ORRERY_NATIVE } : {}),
  };
}

/**
 * The object store of a test's Orrerys: the folder it names, else a fresh prefix on the runner's S3
 * server in the s3:// pass (scripts/run-tests.mjs), else each Orrery's own data folder.
 */
function lakeEnv(lakeDir: string | undefined): Record<string, string> {
  if (lakeDir) return { MICROMEGAS_OBJECT_STORE_URI: pathToFileURL(lakeDir).href };
  const s3 = runnerS3();
  return s3 ? s3LakeEnv(s3) : {};
}

/** An Orrery running in this process, with the lines it logged. */
export interface InProcessOrrery extends Orrery {
  readonly dataDir: string;
  readonly lines: string[];
}

/** Starts Orrery in this process in one role, on free ports, with a temporary data folder (removed at close). */
export async function startRole(role: Role, env: Record<string, string>): Promise<InProcessOrrery> {
  const dataDir = mkdtempSync(join(tmpdir(), 'orrery-lakehouse-'));
  const lines: string[] = [];
  const config = loadConfig({
    ORRERY_FLIGHT_SQL_ADDR: '127.0.0.1:0',
    ORRERY_HTTP_ADDR: '127.0.0.1:0',
    ORRERY_DATA_DIR: dataDir,
    ...servedByTheTest(role),
    ...env,
  });
  let orrery: Orrery;
  try {
    orrery = await startOrrery(
      config,
      (level, message, error) =>
        lines.push(
          `${level} ${message}${error ? ` ${error instanceof Error ? error.message : String(error as string)}` : ''}`,
        ),
      role,
    );
  } catch (error) {
    rmSync(dataDir, { recursive: true, force: true });
    throw error;
  }
  let closing: Promise<void> | undefined;
  const close = (): Promise<void> =>
    (closing ??= (async () => {
      await orrery.close();
      rmSync(dataDir, { recursive: true, force: true });
    })());
  return { ...orrery, dataDir, lines, close, [Symbol.asyncDispose]: close };
}

/** A Flight SQL client holding a key as its bearer header. */
export function clientFor(flightPort: number, key: TestKey): TestFlightClient {
  const client = new TestFlightClient(`127.0.0.1:${flightPort}`);
  client.headers.authorization = `Bearer ${key.key}`;
  return client;
}

/** A suite's own Postgres, lake folder and Orrery, with a Flight SQL client per key (see useLakeOrrery). */
export interface LakeOrrery {
  postgres: TestPostgres;
  /** The lake folder, or undefined when the suite uses the default lake (the runner's S3 server in the s3:// pass). */
  lakeDir: string | undefined;
  /** The settings the Orrery started with, for another process of the same deployment. */
  env: Record<string, string>;
  orrery: InProcessOrrery;
  /** The suite's client for a key: one per key, closed after the suite. */
  client(key: TestKey): TestFlightClient;
}

/**
 * Starts a Postgres, a lake folder (unless `ownLake` is false) and Orrery in `role` before a suite's tests and
 * stops them after. Admins are the keys named in `admins` (default the first key).
 */
export function useLakeOrrery(options: {
  keys: readonly TestKey[];
  admins?: readonly string[];
  role?: Role;
  env?: Record<string, string>;
  ownLake?: boolean;
}): LakeOrrery {
  const clients = new Map<TestKey, TestFlightClient>();
  const fixture = {
    client(key: TestKey): TestFlightClient {
      let client = clients.get(key);
      if (!client) clients.set(key, (client = clientFor(fixture.orrery.flightPort, key)));
      return client;
    },
  } as LakeOrrery;
  before(async () => {
    fixture.postgres = await startTestPostgres();
    fixture.lakeDir = options.ownLake === false ? undefined : mkdtempSync(join(tmpdir(), 'orrery-suite-lake-'));
    fixture.env = {
      ...sharedEnv({
        keys: options.keys,
        admins: options.admins ?? [options.keys[0].name],
        connectionString: fixture.postgres.connectionString,
        lakeDir: fixture.lakeDir,
      }),
      ...options.env,
    };
    fixture.orrery = await startRole(options.role ?? 'serve', fixture.env);
  });
  after(async () => {
    for (const client of clients.values()) client.close();
    await fixture.orrery?.close();
    await fixture.postgres?.close();
    if (fixture.lakeDir) rmSync(fixture.lakeDir, { recursive: true, force: true });
  });
  return fixture;
}

/** The rows of a query as plain objects; Int64 values come back as bigint. */
export async function queryRows(client: TestFlightClient, sql: string): Promise<Array<Record<string, unknown>>> {
  const table = await client.query(sql);
  return table.toArray().map((row) => row.toJSON() as Record<string, unknown>);
}

/** Converts every bigint of a row to a number (the counts these tests compare are small). */
export function plain(row: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(row).map(([k, v]) => [k, typeof v === 'bigint' ? Number(v) : v]));
}

/** Rows with bigints as numbers, for deepEqual against literals. */
export async function plainRows(client: TestFlightClient, sql: string): Promise<Array<Record<string, unknown>>> {
  return (await queryRows(client, sql)).map(plain);
}

/** Rows as arrays of values, bigints as numbers, for deepEqual against literals. */
export async function rowValues(client: TestFlightClient, sql: string): Promise<unknown[][]> {
  return (await plainRows(client, sql)).map((row) => Object.values(row));
}

/** Posts one OTLP/JSON log record with a key (so with its audiences) and checks it was taken. */
export async function postLogRecord(
  httpPort: number,
  key: string,
  body: string,
  timeUnixNano = BigInt(Date.now()) * 1_000_000n,
): Promise<void> {
  const record = { timeUnixNano: String(timeUnixNano), body: { stringValue: body } };
  const response = await fetch(`http://127.0.0.1:${httpPort}/v1/logs`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify({ resourceLogs: [{ scopeLogs: [{ logRecords: [record] }] }] }),
  });
  if (response.status !== 200) throw new Error(`POST /v1/logs answered ${response.status}: ${await response.text()}`);
}

/** The object keys of a view set's partition files, in insert-time order. */
export async function partitionFiles(orrery: Orrery, view: string): Promise<string[]> {
  const { rows } = await orrery.metadata.query<{ file_path: string }>(
    'SELECT file_path FROM lakehouse_partitions WHERE view_set_name = $1 AND file_path IS NOT NULL ORDER BY begin_insert_time',
    [view],
  );
  return rows.map((r) => r.file_path);
}

/**
 * Of log_entries' only partition file: its rows, its distinct messages, and its rows whose time is before the row
 * above's (0: in time order).
 */
export function logEntriesInOrder(orrery: Orrery): Promise<unknown[]> {
  return onlyPartitionRow(
    orrery,
    'log_entries',
    `SELECT count(*)::BIGINT, count(DISTINCT msg)::BIGINT, count(*) FILTER (WHERE time < previous)::BIGINT
       FROM (SELECT msg, time, lag(time) OVER () AS previous FROM {file})`,
  );
}

/**
 * The one row of `sql` over a view set's only partition file (`{file}` in it: read_parquet of that file), read by a
 * DuckDB of the test's own; asserts that the set has one partition file.
 */
export async function onlyPartitionRow(orrery: Orrery, view: string, sql: string): Promise<unknown[]> {
  const files = await partitionFiles(orrery, view);
  assert.equal(files.length, 1, 'one partition over the range');
  const duckdb = await DuckDBInstance.create(':memory:');
  const connection = await duckdb.connect();
  try {
    const file = orrery.store.location(files[0]).replaceAll("'", "''");
    const reader = await connection.runAndReadAll(sql.replaceAll('{file}', `read_parquet('${file}')`));
    return reader.getRows()[0];
  } finally {
    connection.closeSync();
    duckdb.closeSync();
  }
}

/** The lines of a server's /metrics whose metric is `name`, without the instance label. */
export async function metricLines(httpPort: number, name: string): Promise<string[]> {
  return (await scrapeMetrics(httpPort))
    .split('\n')
    .filter((l) => l.startsWith(`${name}{`))
    .map((l) => l.replace(/instance="[^"]*",?/, ''))
    .sort();
}

/** The single value of a one-row, one-column query, as a number (null as 0). */
export async function scalar(client: TestFlightClient, sql: string): Promise<number> {
  const rows = await queryRows(client, sql);
  if (rows.length !== 1) throw new Error(`expected one row from ${sql}, got ${rows.length}`);
  const value = Object.values(rows[0])[0];
  return value === null ? 0 : Number(value);
}

/**
 * Calls `probe` every `intervalMs` until `done(value)` holds; throws after `timeoutMs` with `what`
 * and the last value seen (or the last error), so a failure says how far things got.
 */
export async function pollUntil<T>(
  what: string,
  probe: () => Promise<T>,
  done: (value: T) => boolean,
  options: { timeoutMs: number; intervalMs?: number; failFast?: (value: T) => string | undefined },
): Promise<T> {
  const deadline = Date.now() + options.timeoutMs;
  let last: { value?: T; error?: unknown } = {};
  for (;;) {
    try {
      const value = await probe();
      last = { value };
      if (done(value)) return value;
      const fatal = options.failFast?.(value);
      if (fatal) throw new FailFast(`${what}: ${fatal} (seen ${show(value)})`);
    } catch (error) {
      if (error instanceof FailFast) throw error;
      last = { error };
    }
    if (Date.now() > deadline) {
      const seen =
        'error' in last
          ? `last error: ${(last.error as Error)?.message ?? String(last.error)}`
          : `last seen: ${show(last.value)}`;
      throw new Error(`timed out after ${options.timeoutMs} ms waiting for ${what}; ${seen}`);
    }
    await sleep(options.intervalMs ?? 500);
  }
}

/** A state that polling longer cannot fix (more rows than were sent). */
class FailFast extends Error {}

const show = (value: unknown): string => JSON.stringify(value, (_, v) => (typeof v === 'bigint' ? Number(v) : v));

/** This process's environment without Orrery's own settings, so that a child sees only what the test gives it. */
function inheritedEnv(): Record<string, string> {
  return Object.fromEntries(
    Object.entries(process.env).filter(
      (entry): entry is [string, string] => entry[1] !== undefined && !/^(ORRERY|MICROMEGAS)_/.test(entry[0]),
    ),
  );
}

/** A `node dist/src/cli.js <role>` child process with its output kept. */
export class OrreryChild {
  readonly child: ChildProcess;
  readonly output: string[] = [];
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  private exitStatus: { code: number | null; signal: NodeJS.Signals | null } | undefined;

  constructor(
    readonly name: string,
    role: Role,
    env: Record<string, string>,
  ) {
    const cli = fileURLToPath(new URL('../../src/cli.js', import.meta.url));
    this.child = spawn(process.execPath, [cli, role], {
      env: { ...inheritedEnv(), ORRERY_HTTP_ADDR: '127.0.0.1:0', ORRERY_FLIGHT_SQL_ADDR: '127.0.0.1:0', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const lines = (stream: NodeJS.ReadableStream): void => {
      let partial = '';
      stream.setEncoding('utf8');
      stream.on('data', (chunk: string) => {
        const parts = (partial + chunk).split('\n');
        partial = parts.pop()!;
        this.output.push(...parts.filter((line) => line !== ''));
      });
      stream.on('end', () => partial && this.output.push(partial));
    };
    lines(this.child.stdout!);
    lines(this.child.stderr!);
    // The child does not keep the test process running: a child no hook stops (a test cancelled at its timeout while
    // it started one, a hook that ran before it was kept) would hold the file open for good. What a test waits on it
    // for (its output, its exit in stop()) holds the process meanwhile. As the test process exits, the child is killed.
    this.child.unref();
    (this.child.stdout as Socket).unref();
    (this.child.stderr as Socket).unref();
    const killOnExit = (): void => void this.child.kill('SIGKILL');
    process.once('exit', killOnExit);
    this.exited = new Promise((resolve) =>
      this.child.once('exit', (code, signal) => {
        process.off('exit', killOnExit);
        this.exitStatus = { code, signal };
        resolve(this.exitStatus);
      }),
    );
  }

  get running(): boolean {
    return this.exitStatus === undefined;
  }

  /** Waits until a line of its output matches, failing early if it exits. */
  async waitForLine(pattern: RegExp, timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!this.output.some((line) => pattern.test(line))) {
      if (!this.running)
        throw new Error(`${this.name} exited (${show(this.exitStatus)}) before printing ${pattern}:\n${this.tail()}`);
      if (Date.now() > deadline)
        throw new Error(`${this.name} did not print ${pattern} within ${timeoutMs} ms:\n${this.tail()}`);
      await sleep(25);
    }
  }

  /** Sends a signal and waits for the exit; SIGKILL after `graceMs` if it is still running. */
  async stop(
    signal: NodeJS.Signals = 'SIGTERM',
    graceMs = 20_000,
  ): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    if (!this.running) return this.exitStatus!;
    this.child.ref();
    this.child.kill(signal);
    const timer = setTimeout(() => this.child.kill('SIGKILL'), graceMs);
    try {
      return await this.exited;
    } finally {
      clearTimeout(timer);
    }
  }

  tail(lines = 40): string {
    return this.output.slice(-lines).join('\n');
  }
}

/** Starts `orrery serve` in a child process (see OrreryChild); its Flight SQL port once it listens. */
export async function startServeChild(env: Record<string, string>): Promise<{ child: OrreryChild; port: number }> {
  const child = new OrreryChild('serve', 'serve', env);
  try {
    await child.waitForLine(/Flight SQL listening on 127\.0\.0\.1:\d+/, 60_000);
  } catch (error) {
    await child.stop('SIGKILL'); // the caller never gets it to stop
    throw error;
  }
  const line = child.output.find((l) => /Flight SQL listening on/.test(l))!;
  return { child, port: Number(/:(\d+)/.exec(line.slice(line.indexOf('listening on')))![1]) };
}

/** The gRPC code and message of a call that must be refused; throws when it is not. */
export async function refusal(call: Promise<unknown>): Promise<{ code: number; details: string }> {
  try {
    await call;
  } catch (error) {
    const { code, details } = error as { code: number; details: string };
    return { code, details };
  }
  throw new Error('the call was not refused');
}
