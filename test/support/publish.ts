// `orrery publish --dir <folder>` against a started Orrery, as the admin, its output kept.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before } from 'node:test';
import { DuckDBInstance } from '@duckdb/node-api';
import type { Table } from 'apache-arrow';
import { runResourcesCli } from '../../src/resources/index.js';
import { plainRows, type TestPostgres } from '../lakehouse/lakehouse-fixtures.js';
import { TestFlightClient } from './flight-client.js';
import { logsRequest, pastInsertTimes, postOtlp, type LogSpec } from './otlp.js';
import { adminKey, readerKey, useOrrery, type OrreryFixture } from './orrery-process.js';

/**
 * A Postgres role of `postgres`'s database that Orrery runs as in the rights suites: it can create (so owns) Orrery's
 * tables and DuckLake's, until a test takes some rights away. Its connection string.
 */
export async function limitedRole(postgres: TestPostgres, role: string): Promise<string> {
  const database = new URL(postgres.connectionString).pathname.slice(1);
  await postgres.pool.query(`CREATE ROLE ${role} LOGIN PASSWORD 'limited'`);
  await postgres.pool.query(`GRANT CREATE ON DATABASE ${database} TO ${role}`);
  await postgres.pool.query(`GRANT USAGE, CREATE ON SCHEMA public TO ${role}`);
  const limited = new URL(postgres.connectionString);
  limited.username = role;
  limited.password = 'limited';
  return limited.href;
}

/** The rows of each of `tables` (name: table), counted in `postgres` as its superuser. */
export async function rowCounts<K extends string>(
  postgres: TestPostgres,
  tables: Record<K, string>,
): Promise<Record<K, number>> {
  const counts = {} as Record<K, number>;
  for (const [name, table] of Object.entries(tables) as Array<[K, string]>)
    counts[name] = Number((await postgres.pool.query(`SELECT count(*) AS n FROM ${table}`)).rows[0].n);
  return counts;
}

/** Runs `orrery publish --dir <dir>` (and more arguments) against `address`; its status and output lines. */
export function publishFolder(
  address: string,
  dir: string,
  ...args: string[]
): Promise<{ status: number; out: string[]; err: string[]; text: string }> {
  return publishFolderAs(adminKey.key, address, dir, ...args);
}

/** publishFolder with another admin's key (a suite with keys of its own). */
export function publishFolderAs(
  key: string,
  address: string,
  dir: string,
  ...args: string[]
): Promise<{ status: number; out: string[]; err: string[]; text: string }> {
  return runCliAs(key, address, 'publish', ['--dir', dir, ...args]);
}

/** Runs `orrery publish …` or `orrery resources …` as `key` against `address`; its status and output lines. */
export async function runCliAs(
  key: string,
  address: string,
  program: 'publish' | 'resources',
  argv: readonly string[],
): Promise<{ status: number; out: string[]; err: string[]; text: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const env = { ORRERY_FLIGHT_SQL_ADDR: address, ORRERY_API_KEY: key };
  const status = await runResourcesCli(argv, { env, out: (l) => out.push(l), err: (l) => err.push(l) }, program);
  return { status, out, err, text: out.join('\n') };
}

/** How many partitions a statement's index statistics skipped, from an admin's result provenance (0 when none). */
export const skippedBy = (table: Table): number => {
  const text = table.schema.metadata.get('orrery.provenance');
  const read = text === undefined ? undefined : (JSON.parse(text) as { partitions?: Array<{ skipped: number }> });
  return read?.partitions?.[0]?.skipped ?? 0;
};

/** A key of audience team_x, beside the admin's key and the reader's (made of audience public here). */
export const teamKey = { name: 'team_x', key: 'team-x-key-0123' };

/** A started Orrery with an admin's, a reader's (audience public) and team_x's keys, and a publication folder. */
export interface AudiencesFixture {
  readonly fixture: OrreryFixture;
  /** An empty folder, removed after the suite. */
  readonly dir: string;
  /** team_x's client, connected before the suite's own `before`. */
  readonly team: TestFlightClient;
  /** Each key's client by name: admin, reader, team_x. */
  readonly clients: () => Array<[string, TestFlightClient]>;
  /** Each query's rows as each key reads them, by `<key name>: <sql>`. */
  readonly everyAnswer: (queries: readonly string[]) => Promise<Map<string, unknown>>;
  /**
   * Posts log records of service `svc<i>` with `key` at 2024-01-02 03:04:05 plus i ms (one nanosecond apart),
   * then waits past the second, so partitions materialized one second each keep each call's records apart.
   */
  readonly ingest: (i: number, key: string, logs: ReadonlyArray<{ severity: number; body: string }>) => Promise<void>;
  /**
   * Posts each partition's log records as service `svc<i>` with its key, a second apart, then materializes them in
   * one-second partitions, one each (checked).
   */
  readonly ingestPartitions: (partitions: ReadonlyArray<{ key: string; records: readonly LogSpec[] }>) => Promise<void>;
  /** Materializes processes and log_entries between two epoch seconds, in one-second partitions. */
  readonly materialize: (from: number, to: number) => Promise<void>;
  /**
   * Checks each query's rows against the same WHERE `OR false` (which no index decides) for every key, and that an
   * admin's read of it skipped the given number of partitions.
   */
  readonly answersAsOrFalse: (queries: ReadonlyArray<[string, number]>) => Promise<void>;
}

const iso = (seconds: number) => new Date(seconds * 1000).toISOString();

/** Materializes processes and log_entries between two epoch seconds, in partitions of `width` seconds, as `admin`. */
export async function materializeLogs(admin: TestFlightClient, from: number, to: number, width = 1): Promise<void> {
  for (const view of ['processes', 'log_entries'])
    await admin.query(`SELECT * FROM materialize_partitions('${view}', '${iso(from)}', '${iso(to)}', ${width})`);
}

export function useAudiencesOrrery(prefix: string, env: Record<string, string> = {}): AudiencesFixture {
  const fixture = useOrrery({
    ...env,
    MICROMEGAS_API_KEYS: JSON.stringify([
      adminKey,
      { ...readerKey, audiences: ['public'] },
      { ...teamKey, audiences: ['team_x'] },
    ]),
  });
  let team: TestFlightClient | undefined;
  /** Posts log records of service `svc<i>` with `key`, then waits past the second. */
  const post = async (i: number, key: string, records: readonly LogSpec[]) => {
    const sent = await postOtlp(
      fixture.orrery.httpPort,
      'logs',
      key,
      logsRequest({ 'service.name': `svc${i}` }, records),
    );
    assert.equal(sent.status, 200, sent.text);
    await new Promise((resolve) => setTimeout(resolve, 1100));
  };
  const suite: AudiencesFixture = {
    fixture,
    dir: mkdtempSync(join(tmpdir(), prefix)),
    get team() {
      return team!;
    },
    clients: () => [
      ['admin', fixture.admin],
      ['reader', fixture.reader],
      ['team_x', team!],
    ],
    everyAnswer: async (queries) => {
      const all = new Map<string, unknown>();
      for (const sql of queries)
        for (const [who, client] of suite.clients()) all.set(`${who}: ${sql}`, await plainRows(client, sql));
      return all;
    },
    ingest: async (i, key, logs) => {
      const time = 1704164645000000000n + BigInt(i) * 1_000_000n;
      await post(
        i,
        key,
        logs.map((l, j) => ({ ...l, time: time + BigInt(j), target: 'app' })),
      );
    },
    ingestPartitions: async (partitions) => {
      const start = Math.floor(Date.now() / 1000);
      for (const [i, { key, records }] of partitions.entries()) await post(i, key, records);
      await suite.materialize(start - 2, pastInsertTimes());
      const listed = await plainRows(
        fixture.admin,
        "SELECT count(*) AS n FROM list_partitions() WHERE view_set_name = 'log_entries' AND file_path IS NOT NULL",
      );
      assert.deepEqual(listed, [{ n: partitions.length }]);
    },
    materialize: (from, to) => materializeLogs(fixture.admin, from, to),
    answersAsOrFalse: async (queries) => {
      for (const [sql, skipped] of queries) {
        const twin = sql.replace(/( ORDER BY .*)?$/, ' OR false$1');
        for (const [who, client] of suite.clients())
          assert.deepEqual(await plainRows(client, sql), await plainRows(client, twin), `${who}: ${sql}`);
        assert.equal(skippedBy(await fixture.admin.query(sql)), skipped, sql);
      }
    },
  };
  before(() => {
    team = new TestFlightClient(fixture.orrery.address);
    team.headers.authorization = `Bearer ${teamKey.key}`;
  });
  after(() => {
    team?.close();
    rmSync(suite.dir, { recursive: true, force: true });
  });
  return suite;
}

/**
 * Checks that every msg column chunk of every log_entries partition file holds a Parquet bloom filter, that a value
 * the file holds is not excluded and, given `absent`, that each file's filters exclude that value, reading copies
 * of the files with DuckDB in-process.
 * Returns how many files there were.
 */
export async function assertMsgBloomFilters(fixture: OrreryFixture, absent?: string): Promise<number> {
  const files = (
    await plainRows(
      fixture.admin,
      "SELECT file_path FROM list_partitions() WHERE view_set_name = 'log_entries' AND file_path IS NOT NULL",
    )
  ).map((r) => String(r.file_path));
  const local = mkdtempSync(join(tmpdir(), 'orrery-msg-blooms-'));
  const duck = await DuckDBInstance.create(':memory:');
  const connection = await duck.connect();
  try {
    const rows = async (sql: string) => (await connection.runAndReadAll(sql)).getRowObjectsJson();
    for (const [i, key] of files.entries()) {
      const file = join(local, `${i}.parquet`);
      writeFileSync(file, (await fixture.orrery.store.get(key))!);
      const [chunks] = await rows(
        `SELECT count(*) AS n, count(bloom_filter_offset) AS blooms FROM parquet_metadata('${file}') WHERE path_in_schema = 'msg'`,
      );
      assert.ok(Number(chunks.n) > 0, key);
      assert.equal(chunks.blooms, chunks.n, key);
      const excluded = async (value: string) =>
        (
          await rows(
            `SELECT bloom_filter_excludes AS x FROM parquet_bloom_probe('${file}', 'msg', '${value.replaceAll("'", "''")}')`,
          )
        ).map((r) => r.x);
      // A value the file holds is never excluded (a filter that excluded everything would pass the probe below).
      const [{ first }] = await rows(`SELECT min(msg) AS first FROM read_parquet('${file}')`);
      assert.ok((await excluded(first as string)).includes(false), key);
      if (absent !== undefined) assert.deepEqual(new Set(await excluded(absent)), new Set([true]), key);
    }
  } finally {
    connection.closeSync();
    duck.closeSync();
    rmSync(local, { recursive: true, force: true });
  }
  return files.length;
}
